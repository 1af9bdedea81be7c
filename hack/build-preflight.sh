#!/usr/bin/env bash
# build-preflight.sh VERSION DIR POLICY: builds yunikorn-user-info-preflight as the release ships it, into DIR:
#   yunikorn-user-info-preflight-linux-amd64, yunikorn-user-info-preflight-linux-arm64 (CGO_ENABLED=0, so
#   static; -trimpath; VERSION stamped, printed by --version), a copy of POLICY as policy.wasm (the module the
#   command takes, attached to the same release), and SHA256SUMS of the three (sha256sum -c reads it).
# Run from the repository root. The release workflow runs it, then hack/check-preflight.sh; so does
# `make release-rehearsal`.
set -euo pipefail
version="${1:?usage: build-preflight.sh VERSION DIR POLICY}"
dir="${2:?usage: build-preflight.sh VERSION DIR POLICY}"
policy="${3:?usage: build-preflight.sh VERSION DIR POLICY}"
mkdir -p "$dir"
cp "$policy" "$dir/policy.wasm"
names=(policy.wasm)
for arch in amd64 arm64; do
  name="yunikorn-user-info-preflight-linux-$arch"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X main.version=$version" -o "$dir/$name" ./cmd/yunikorn-user-info-preflight
  names+=("$name")
done
(cd "$dir" && sha256sum "${names[@]}" > SHA256SUMS)
echo "build-preflight: $version for linux/amd64 and linux/arm64 in $dir"
