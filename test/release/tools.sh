#!/usr/bin/env bash
# tools.sh: builds the release rehearsal's tools from the Go module proxy into $RELEASE_TOOLS, each in a
# directory keyed by its version (hack/build-release-tool.sh; cached after the first run):
#   - distribution's registry (github.com/distribution/distribution/v3, cmd/registry), the local OCI registry;
#   - cosign (github.com/sigstore/cosign/v3), the version the release installs;
#   - syft (github.com/anchore/syft), the version the release installs.
# Cold, on 2 cores: about 2, 3 and 2.5 minutes, and ~5 GB of module cache.
#
# Exit codes: 0 built or cached; 3 the module proxy refused something (a banner says what; with CI=true or
# REQUIRE_RELEASE=1 that is a failure, exit 1); anything else is a real failure.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build="$here/../../hack/build-release-tool.sh"
: "${RELEASE_TOOLS:?}" "${DISTRIBUTION_VERSION:?}" "${COSIGN_VERSION:?}" "${SYFT_VERSION:?}"

for spec in \
  "registry-$DISTRIBUTION_VERSION github.com/distribution/distribution/v3 $DISTRIBUTION_VERSION cmd/registry" \
  "cosign-$COSIGN_VERSION github.com/sigstore/cosign/v3 $COSIGN_VERSION cmd/cosign" \
  "syft-$SYFT_VERSION github.com/anchore/syft $SYFT_VERSION cmd/syft"; do
  read -r dir module version package <<< "$spec"
  nice -n 10 "$build" "$RELEASE_TOOLS/$dir" "$module" "$version" "$package"
  rc=$?
  case $rc in
    0) ;;
    3)
      cat >&2 <<BANNER

################################################################################
#  RELEASE REHEARSAL SKIPPED: the Go module proxy ($(go env GOPROXY))
#  would not serve $module@$version or a module it needs.
#  Nothing was pushed, signed or verified. Set REQUIRE_RELEASE=1 to make this fatal.
################################################################################

BANNER
      "$here/../../hack/stage-note.sh" skipped "the release rehearsal did NOT run: the Go module proxy would not serve $module@$version"
      if [ "${CI:-}" = true ] || [ "${REQUIRE_RELEASE:-}" = 1 ]; then exit 1; fi
      exit 3
      ;;
    *) exit "$rc" ;;
  esac
done
