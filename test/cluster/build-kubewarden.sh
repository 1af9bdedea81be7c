#!/usr/bin/env bash
# build-kubewarden.sh VERSION DIR: Kubewarden's controller (github.com/kubewarden/adm-controller, cmd/controller) at
# VERSION, from the Go module proxy, into DIR/kubewarden-controller, with what the Kubewarden stage applies next to
# it, copied from the same module: the CRDs (charts/kubewarden-crds/templates/crds, into DIR/crds) and the Helm
# chart templates the suite renders (the controller's RBAC, Service and webhook configurations, into DIR/chart).
# Keyed by version, so a second run only checks that everything is there. The module is
# test/cluster/kubewarden/adm-controller-VERSION: its go.mod (with the controller's own three replace lines, which
# is why `go install ...@VERSION` refuses to build it) and go.sum are committed.
#
# Exit codes: 0 built or cached; 3 the module proxy would not serve what the build needs (the caller skips
# loudly, or fails under CI=true); anything else is a real failure.
set -euo pipefail
V=${1:?usage: build-kubewarden.sh VERSION DIR}
BIN=${2:?usage: build-kubewarden.sh VERSION DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/kubewarden/adm-controller-$V
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }

[ -f "$SRC/go.mod" ] || { echo "build-kubewarden.sh: no module for adm-controller $V ($SRC)" >&2; exit 2; }
built() { [ -x "$BIN/kubewarden-controller" ] && [ -f "$BIN/.complete" ]; }
if built; then
  echo "kubewarden controller v$V: cached in $BIN"
  exit 0
fi
# shellcheck source=../../hack/lock.bash
source "$HERE/../../hack/lock.bash"
lock "$BIN.lock" 1800 # one build per directory at a time: a second caller waits, then finds it built
if built; then
  echo "kubewarden controller v$V: built meanwhile in $BIN"
  exit 0
fi
echo "building Kubewarden's controller v$V from the Go module proxy (cold: about 4 min of CPU, 3-6 min on 2 cores)"
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd)
rm -f "$BIN/.complete"
(while sleep 60; do echo "  still compiling the kubewarden controller v$V... [$(el)]"; done) &
HB=$!
trap 'kill $HB 2>/dev/null || true' EXIT
cd "$SRC"
# -mod=readonly: go.sum is the record; a build that wants to change it is a failure, not a silent update.
export GOFLAGS='-buildvcs=false -mod=readonly' GOWORK=off
rc=0
{
  go mod download -json github.com/kubewarden/adm-controller > "$BIN/module.json" &&
    nice -n 10 go build -trimpath -ldflags='-s -w' -o "$BIN/kubewarden-controller" github.com/kubewarden/adm-controller/cmd/controller
} > "$BIN/build.log" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
  # go mod download -json reports a refused download in the JSON it prints
  jq -r '.Error // empty' "$BIN/module.json" >> "$BIN/build.log" 2> /dev/null || true
  cat "$BIN/build.log" >&2
  if grep -qE '(403|404|410) |Forbidden|Not Found|Gone|dial tcp|no such host' "$BIN/build.log"; then exit 3; fi
  exit 1
fi
MOD=$(jq -r .Dir "$BIN/module.json")
# What the stage applies: the CRD chart's five plain files (config/crd/bases holds only an older PolicyServer CRD),
# and the controller chart's templates, rendered by the suite (kubewarden.bash, kw_render).
rm -rf "$BIN/crds" "$BIN/chart"
mkdir -p "$BIN/crds" "$BIN/chart"
cp "$MOD"/charts/kubewarden-crds/templates/crds/*.yaml "$BIN/crds/"
for t in serviceaccount.yaml controller-rbac-roles.yaml controller-rbac-rolebinding.yaml controller-rbac-metrics-role.yaml \
  service.yaml webhooks.yaml; do
  cp "$MOD/charts/kubewarden-controller/templates/$t" "$BIN/chart/"
done
cp "$MOD/charts/kubewarden-controller/Chart.yaml" "$BIN/chart/Chart.yaml"
cp "$MOD/charts/kubewarden-defaults/values.yaml" "$BIN/chart/defaults-values.yaml"
chmod -R u+w "$BIN/crds" "$BIN/chart"
touch "$BIN/.complete"
echo "kubewarden controller v$V built in $(el): $BIN"
