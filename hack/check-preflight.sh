#!/usr/bin/env bash
# check-preflight.sh VERSION DIR OBJECTS: fails unless DIR holds what hack/build-preflight.sh writes for
# VERSION and it works: SHA256SUMS lists both binaries and policy.wasm, and they match it; each binary is an ELF executable for
# its architecture, built with CGO_ENABLED=0 and -trimpath (go version -m); the one for this machine prints VERSION with --version and
# reports on OBJECTS (kubectl get ... -o json) with DIR/policy.wasm, the module the release attaches beside it.
# The release workflow runs it before publishing anything; `make release-rehearsal` runs it and tampers with
# a copy to see it fail.
set -euo pipefail
version="${1:?usage: check-preflight.sh VERSION DIR OBJECTS}"
dir="${2:?usage: check-preflight.sh VERSION DIR OBJECTS}"
objects="${3:?usage: check-preflight.sh VERSION DIR OBJECTS}"
fail() { echo "check-preflight: $*" >&2; exit 1; }

(cd "$dir" && sha256sum --check --strict --quiet SHA256SUMS) || fail "the files do not match $dir/SHA256SUMS"
grep -q ' \*\?policy\.wasm$' "$dir/SHA256SUMS" || fail "SHA256SUMS does not list policy.wasm"
# e_machine of each ELF header (offset 18, little-endian): 0x3e x86-64, 0xb7 AArch64.
declare -A machine=([amd64]=3e00 [arm64]=b700)
for arch in amd64 arm64; do
  bin="$dir/yunikorn-user-info-preflight-linux-$arch"
  grep -q " \*\?yunikorn-user-info-preflight-linux-$arch\$" "$dir/SHA256SUMS" || fail "SHA256SUMS does not list $bin"
  [ "$(head -c 4 "$bin" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] || fail "$bin is not an ELF file"
  [ "$(od -An -tx1 -j 18 -N 2 "$bin" | tr -d ' \n')" = "${machine[$arch]}" ] || fail "$bin is not built for $arch"
  # The build settings Go records in the binary: static (no cgo), no local paths, this platform.
  settings=$(go version -m "$bin") || fail "go version -m $bin"
  for want in CGO_ENABLED=0 -trimpath=true GOOS=linux "GOARCH=$arch"; do
    grep -Eq "^[[:space:]]+build[[:space:]]+$want\$" <<< "$settings" || fail "$bin was not built with $want"
  done
done
case "$(uname -m)" in
  x86_64) here=amd64 ;;
  aarch64) here=arm64 ;;
  *) echo "check-preflight: no binary for $(uname -m) to run; checked the files only"; exit 0 ;;
esac
bin="$dir/yunikorn-user-info-preflight-linux-$here"
got=$("$bin" --version) || fail "$bin --version failed"
[ "$got" = "yunikorn-user-info-preflight $version" ] || fail "$bin --version prints '$got', want yunikorn-user-info-preflight $version"
report=$(timeout 120 "$bin" --policy "$dir/policy.wasm" -f "$objects") || fail "$bin failed on $objects"
grep -Eq '^[0-9]+ objects: [0-9]+ stamp, [0-9]+ keep, [0-9]+ refuse, [0-9]+ leave-alone, [0-9]+ skip$' <<< "$report" ||
  fail "$bin printed no report on $objects: $report"
echo "check-preflight: $version for linux/amd64 and linux/arm64, SHA256SUMS agree; the $here binary reports: $(grep -E '^[0-9]+ objects:' <<< "$report")"
