#!/usr/bin/env bash
# push-artifacthub.sh TAG PKG: publish the Artifact Hub files of release TAG on the `artifacthub` branch of
# the remote $REMOTE (origin): PKG (the artifacthub-pkg.yml `kwctl scaffold artifacthub` generated), and
# artifacthub-repo.yml and README.md as they are in TAG, flat at the branch's root, which is where an
# Artifact Hub "Kubewarden policies" repository points. Each release adds one commit to the branch; a
# release whose files are already there adds nothing. The commit is built with git plumbing, so the
# working tree and the checked-out branch are left alone. kwctl's policy link names the release's policy.wasm,
# which policy-server cannot load (it lacks kwctl annotate's metadata): the package links the release's
# annotated-policy.wasm instead.
set -euo pipefail
tag="${1:?usage: push-artifacthub.sh TAG PKG}"
pkg="${2:?usage: push-artifacthub.sh TAG PKG}"
remote="${REMOTE:-origin}"
branch=artifacthub

pkg_version="$(sed -n 's/^version: *//p' "$pkg" | head -n 1)"
if [ "v$pkg_version" != "$tag" ]; then
  echo "error: $pkg has version '$pkg_version', the release is $tag" >&2
  exit 1
fi

annotated="$(mktemp)"
trap 'rm -f "$annotated"' EXIT
sed "s#\(/releases/download/$tag\)/policy\.wasm\$#\1/annotated-policy.wasm#" "$pkg" > "$annotated"
pkg_blob="$(git hash-object -w "$annotated")"
repo_blob="$(git rev-parse "$tag:artifacthub-repo.yml")"
readme_blob="$(git rev-parse "$tag:README.md")"
tree="$(printf '100644 blob %s\t%s\n' \
  "$readme_blob" README.md "$pkg_blob" artifacthub-pkg.yml "$repo_blob" artifacthub-repo.yml | git mktree)"

parent=()
if git ls-remote --exit-code --heads "$remote" "$branch" >/dev/null 2>&1; then
  git fetch --quiet "$remote" "refs/heads/$branch"
  head="$(git rev-parse FETCH_HEAD)"
  if [ "$(git rev-parse "$head^{tree}")" = "$tree" ]; then
    echo "the $branch branch already holds the files of $tag"
    exit 0
  fi
  parent=(-p "$head")
fi
commit="$(git -c user.name="${GIT_AUTHOR_NAME:-github-actions[bot]}" \
  -c user.email="${GIT_AUTHOR_EMAIL:-41898282+github-actions[bot]@users.noreply.github.com}" \
  commit-tree "$tree" "${parent[@]}" -m "Artifact Hub files for $tag")"
git push --quiet "$remote" "$commit:refs/heads/$branch"
echo "pushed the Artifact Hub files of $tag to $remote $branch ($commit)"
