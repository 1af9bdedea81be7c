#!/usr/bin/env bash
# sbom-source.sh DIR: writes into DIR a go.mod and a go.sum that list exactly the Go modules compiled into
# policy.wasm, for syft to catalogue (syft scan dir:DIR). Run from the repository root.
#
# Scanning the repository itself would list what does not ship: bench/'s own modules (YuniKorn's
# k8shim with Kubernetes' client libraries, wasmtime-go: 84 of 120 packages), the host's and the tests'
# dependencies (wazero, go-cmp, yaml). What ships is what the policy package imports when it is built for
# the module's target, which `go list -deps` reports with the TinyGo build tag; the versions and the go.sum
# hashes are the repository's own. The Go runtime in the module is TinyGo's (the release notes and the
# workflow name its version); syft does not list it.
set -euo pipefail
DIR=${1:?usage: sbom-source.sh DIR}
mkdir -p "$DIR"
module=$(go list -m)
goversion=$(go list -m -f '{{.GoVersion}}')
mapfile -t mods < <(GOOS=wasip1 GOARCH=wasm go list -deps -tags tinygo \
  -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' . | sort -u)
[ "${#mods[@]}" -gt 0 ] || { echo "sbom-source: go list found no module dependencies" >&2; exit 1; }
{
  echo "// The Go modules compiled into policy.wasm (hack/sbom-source.sh), for the release's SBOM."
  echo "module $module"
  echo
  echo "go $goversion"
  echo
  echo "require ("
  printf '\t%s\n' "${mods[@]}"
  echo ")"
} > "$DIR/go.mod"
: > "$DIR/go.sum"
for m in "${mods[@]}"; do
  path=${m% *} version=${m#* }
  grep -E "^${path//./\\.} ${version//./\\.}(/go\.mod)? " go.sum >> "$DIR/go.sum" ||
    { echo "sbom-source: go.sum has no line for $path $version" >&2; exit 1; }
done
echo "sbom-source: ${#mods[@]} modules in $DIR/go.mod"
