#!/usr/bin/env bash
# check-release.sh TAG OCI_TARGET: fail unless the files a release publishes agree with the tag:
#   - TAG is v<semver> and <semver> is io.kubewarden.policy.version in metadata.yml, which no longer says
#     unreleased (the development version, <next>-unreleased, is never tagged);
#   - OCI_TARGET (where the release pushes) is io.kubewarden.policy.ociUrl;
#   - artifacthub-pkg.yml (the reviewed copy of the Artifact Hub fields kwctl derives) has that version and image;
#   - CHANGELOG.md has a section for the version (the release notes), and it is not empty.
# Run from the repository root. The release workflow runs it before building anything;
# test/shipcheck runs it on the repository as it is, and on copies with one file drifted.
set -euo pipefail
tag="${1:?usage: check-release.sh TAG OCI_TARGET}"
target="${2:?usage: check-release.sh TAG OCI_TARGET}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

errors=0
fail() { echo "error: $*" >&2; errors=$((errors + 1)); }
# yaml_value FILE KEY-REGEX: the value of the first line "KEY: value" (indentation kept in KEY-REGEX),
# without quotes.
yaml_value() { sed -n "s/^$2: *//p" "$1" | head -n 1 | sed -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'$/\1/"; }

[[ "$tag" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "tag $tag is not v<major>.<minor>.<patch>"
version="${tag#v}"
[[ "$version" != *unreleased* ]] || fail "$tag is a development version: set the release's version in metadata.yml (docs/release.md)"

# expect FILE KEY-REGEX NAME WANT [HINT]: a problem unless the value of KEY-REGEX in FILE is WANT.
expect() {
  local got
  got="$(yaml_value "$1" "$2")"
  [ "$got" = "$4" ] || fail "$1 $3 is '$got', want $4${5:+: $5}"
}
expect metadata.yml '  io\.kubewarden\.policy\.version' io.kubewarden.policy.version "$version" "the tag is $tag"
expect metadata.yml '  io\.kubewarden\.policy\.ociUrl' io.kubewarden.policy.ociUrl "$target" "where the release pushes"
expect artifacthub-pkg.yml 'version' version "$version" "regenerate it (docs/release.md)"
expect artifacthub-pkg.yml '  image' 'containersImages image' "$target:$tag"

"$here/changelog-section.sh" "$version" CHANGELOG.md >/dev/null || fail "CHANGELOG.md has no section for $version, or it is empty"

if [ "$errors" -gt 0 ]; then
  echo "check-release: $errors problem(s): nothing was released" >&2
  exit 1
fi
echo "check-release: $tag agrees with metadata.yml, artifacthub-pkg.yml and CHANGELOG.md; image $target:$tag"
