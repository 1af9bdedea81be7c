#!/usr/bin/env bash
# build-yunikorn.sh VERSION DIR: Apache YuniKorn's scheduler (k8shim's pkg/cmd/shim, with the core built in)
# and its admission controller (pkg/cmd/admissioncontroller), at k8shim VERSION, from the Go module proxy into
# DIR as yunikorn-scheduler and yunikorn-admission-controller (keyed by version, so a second run only checks
# that both are there). The module is test/cluster/yunikorn/k8shim-VERSION: its go.mod
# and go.sum are committed (the checksum database answers 404 for k8shim v1.4.0 and core v1.4.0-1, so go.sum
# is the only record of what was built).
#
# Exit codes: 0 built or cached; 3 the module proxy would not serve what the build needs (the caller skips
# loudly); anything else is a real failure.
set -euo pipefail
V=${1:?usage: build-yunikorn.sh VERSION DIR}
BIN=${2:?usage: build-yunikorn.sh VERSION DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/yunikorn/k8shim-$V
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }

[ -f "$SRC/go.mod" ] || { echo "build-yunikorn.sh: no module for k8shim $V ($SRC)" >&2; exit 2; }
# the binaries and the k8shim packages they are built from
CMDS=(yunikorn-scheduler:pkg/cmd/shim yunikorn-admission-controller:pkg/cmd/admissioncontroller)
missing=()
find_missing() {
  missing=()
  for c in "${CMDS[@]}"; do
    [ -x "$BIN/${c%%:*}" ] && [ -f "$BIN/.complete" ] || missing+=("$c")
  done
}
find_missing
if [ ${#missing[@]} -eq 0 ]; then
  echo "yunikorn v$V: scheduler and admission controller cached in $BIN"
  exit 0
fi
# shellcheck source=../../hack/lock.bash
source "$HERE/../../hack/lock.bash"
lock "$BIN.lock" 1800 # one build per directory at a time: a second caller waits, then finds them built
find_missing
if [ ${#missing[@]} -eq 0 ]; then
  echo "yunikorn v$V: scheduler and admission controller built meanwhile in $BIN"
  exit 0
fi
echo "building YuniKorn v$V (${missing[*]%%:*}) from the Go module proxy (cold: 2-5 min on a quiet 2-core machine)"
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd)
(while sleep 60; do echo "  still compiling yunikorn v$V... [$(el)]"; done) &
HB=$!
trap 'kill $HB 2>/dev/null || true' EXIT
cd "$SRC"
# -mod=readonly: go.sum is the record; a build that wants to change it is a failure, not a silent update.
# GONOSUMDB: go.sum already pins every module; the checksum database does not know the apache ones.
# The two share the module, its go.sum and most packages: the second build reuses the first's cache.
rc=0
rm -f "$BIN/.complete"
: > "$BIN/build.log"
for c in "${missing[@]}"; do
  GOFLAGS='-buildvcs=false -mod=readonly' GOWORK=off GONOSUMDB='github.com/apache/*' \
    nice -n 10 go build -trimpath -ldflags='-s -w' -o "$BIN/${c%%:*}" "github.com/apache/yunikorn-k8shim/${c#*:}" \
    >> "$BIN/build.log" 2>&1 || { rc=$?; break; }
done
if [ $rc -ne 0 ]; then
  cat "$BIN/build.log" >&2
  if grep -qE '(403|404|410) |Forbidden|Not Found|Gone|dial tcp|no such host' "$BIN/build.log"; then exit 3; fi
  exit 1
fi
touch "$BIN/.complete"
echo "yunikorn v$V built in $(el): $BIN"
