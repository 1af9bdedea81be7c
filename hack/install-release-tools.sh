#!/usr/bin/env bash
# install-release-tools.sh DIR: installs the release's tools into DIR, each pinned by version and by the
# sha256 of the file its project publishes, the way Kubewarden's policies monorepo installs them
# (.github/actions/install-dependencies there), and prints their versions:
#   - kwctl, from the Kubewarden controller's releases (kubewarden/adm-controller; it was
#     kubewarden/kubewarden-controller, and GitHub redirects the old name);
#   - cosign v3 (keyless signing with --new-bundle-format and the signing config);
#   - syft (the SPDX SBOM).
# Used by .github/workflows/release.yml and ci.yml on GitHub's runners (Linux x86_64). A checksum that
# does not match fails the step before anything runs. Renovate does not bump these lines: a new version
# needs its checksum copied by hand from the project's release (its checksums file).
#
# make release-rehearsal builds cosign and syft at the same versions from the Go module proxy instead
# (test/release/release.mk); test/shipcheck keeps the two in step.
set -euo pipefail
DIR=${1:?usage: install-release-tools.sh DIR}

KWCTL_VERSION=v1.35.0
KWCTL_SHA256=2f518033989a897c2f502a2f4fa90b3ca666eee976a82d045abdea5022330341
COSIGN_VERSION=v3.1.3
COSIGN_SHA256=4629c757b7618056f8ddd7e2625ae9fdd94c0372a65049520bc7d9df9efc7f71
SYFT_VERSION=v1.28.0
SYFT_SHA256=3edee7fe1ceb1f78360e547f57048930d57f00c7ec3d0b8bdfb902805f048468

mkdir -p "$DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fetch URL SHA256 FILE: download URL to FILE and fail unless its sha256 is SHA256.
fetch() {
  curl --fail --silent --show-error --location --retry 3 --max-time 300 -o "$3" "$1"
  echo "$2  $3" | sha256sum --check --strict
}

fetch "https://github.com/kubewarden/adm-controller/releases/download/${KWCTL_VERSION}/kwctl-linux-x86_64.zip" \
  "$KWCTL_SHA256" "$tmp/kwctl.zip"
unzip -o -q "$tmp/kwctl.zip" -d "$tmp/kwctl"
install -m 0755 "$tmp/kwctl/kwctl-linux-x86_64" "$DIR/kwctl"

fetch "https://github.com/sigstore/cosign/releases/download/${COSIGN_VERSION}/cosign-linux-amd64" \
  "$COSIGN_SHA256" "$tmp/cosign"
install -m 0755 "$tmp/cosign" "$DIR/cosign"

fetch "https://github.com/anchore/syft/releases/download/${SYFT_VERSION}/syft_${SYFT_VERSION#v}_linux_amd64.tar.gz" \
  "$SYFT_SHA256" "$tmp/syft.tar.gz"
tar -xzf "$tmp/syft.tar.gz" -C "$tmp" syft
install -m 0755 "$tmp/syft" "$DIR/syft"

"$DIR/kwctl" --version
"$DIR/cosign" version
SYFT_CHECK_FOR_APP_UPDATE=false "$DIR/syft" version
