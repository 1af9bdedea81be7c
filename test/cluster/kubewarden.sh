#!/usr/bin/env bash
# kubewarden.sh: the Kubewarden stage (`make e2e-kubewarden`): Kubewarden's own controller (adm-controller
# v$KW_VERSION, built from the Go module proxy) reconciles the project's ClusterAdmissionPolicies against the
# cluster suite's control plane, and the README's Quick start and the cluster scenarios go through the webhook
# configuration it wrote (kubewarden.bats).
#
#  1. Debian packages and kube-apiserver/kube-controller-manager (build-k8s.sh, cached), then the controller
#     (build-kubewarden.sh, cached in .tools/kubewarden/vVERSION with the CRDs and chart templates of the same
#     module). A module the proxy refuses SKIPS the stage with a banner, or fails it when REQUIRE_CLUSTER=1 or CI=true.
#  2. run.sh with SUITE=kubewarden.bats in a private network namespace: the controller's webhook server listens on
#     every interface (there is no flag for its address), and the Services' ClusterIPs go on lo there.
#
# Env: KW_VERSION (default 1.36.0), RUN (state, default build/cluster-kubewarden), SVCPROXY (built by make), and
# everything run.sh takes (ports, BATS_FILTER, KEEP=1: run `make e2e-cluster-down CLUSTER_RUN=...` afterwards; the
# network namespace goes away with the run, so what it left cannot be reached).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }

export KW_VERSION=${KW_VERSION:-1.36.0}
export KW_BIN=${KW_BIN:-$ROOT/.tools/kubewarden/v$KW_VERSION}
export RUN=${RUN:-$ROOT/build/cluster-kubewarden}
export SVCPROXY=${SVCPROXY:-$ROOT/build/svcproxy}
KUBE_VERSION=${KUBE_VERSION:-1.37.2}
export KUBE_VERSION KUBE_BIN=${KUBE_BIN:-$ROOT/.tools/k8s/v$KUBE_VERSION/bin}

banner() {
  cat >&2 <<B

##############################################################################################
##  SKIPPED: the Kubewarden stage (make e2e-kubewarden) did NOT run.
##  $1
##  Set REQUIRE_CLUSTER=1 to make this an error.
##############################################################################################

B
  if [ "${REQUIRE_CLUSTER:-0}" = 1 ] || [ "${CI:-}" = true ]; then exit 1; fi
  exit 0
}

[ -x "$SVCPROXY" ] || { echo "kubewarden.sh: $SVCPROXY is missing: run it through 'make e2e-kubewarden'" >&2; exit 2; }
# Everything that needs the network happens here, before the suite enters its network namespace.
"$ROOT/hack/ensure-debian-packages.sh" etcd:etcd-server bats:bats jq:jq openssl:openssl curl:curl ip:iproute2
rc=0
timeout 2700 "$HERE/build-k8s.sh" "$KUBE_BIN" || rc=$?
case $rc in
  0) ;;
  3) banner "kube-apiserver v$KUBE_VERSION could not be built: the Go module proxy did not serve it." ;;
  *) echo "building kube-apiserver failed (exit $rc)" >&2; exit 1 ;;
esac
rc=0
timeout 1800 "$HERE/build-kubewarden.sh" "$KW_VERSION" "$KW_BIN" || rc=$?
case $rc in
  0) ;;
  3) banner "Kubewarden's controller v$KW_VERSION could not be built: the Go module proxy ($(go env GOPROXY)) did not serve its modules." ;;
  *) echo "building Kubewarden's controller v$KW_VERSION failed (exit $rc)" >&2; exit 1 ;;
esac
echo "Kubewarden controller v$KW_VERSION: $KW_BIN [$(el)]"

# A private network namespace: as root, unshare -n; otherwise a user namespace too (unshare -rn).
netns=(unshare -n)
[ "$(id -u)" = 0 ] || netns=(unshare -rn)
if ! "${netns[@]}" true 2> /dev/null; then
  # A CI job's container is a network namespace of its own already: run there when the controller's webhook port is
  # free and lo takes addresses. Anywhere else, skip rather than listen on every interface.
  if [ "${CI:-}" = true ] && ! (exec 3<> /dev/tcp/127.0.0.1/"${KW_WEBHOOK_PORT:-9443}") 2> /dev/null; then
    echo "'${netns[*]}' is not permitted here; CI=true: running in this (container's) network namespace"
    netns=(env)
  else
    banner "'${netns[*]}' is not permitted here: the controller's webhook server would listen on every interface."
  fi
fi
echo "==== the Kubewarden stage (state in $RUN) [$(el)]"
rc=0
# shellcheck disable=SC2016 # $1 is the inner shell's
SUITE=kubewarden.bats "${netns[@]}" bash -c 'PATH=$PATH:/usr/sbin:/sbin; { ip link show lo | grep -q LOOPBACK,UP || ip link set lo up; } && exec "$1"' _ "$HERE/run.sh" || rc=$?
if [ $rc -ne 0 ]; then
  echo "the Kubewarden stage FAILED (exit $rc) after $(el); logs: $RUN/logs (kw-controller.log, kw-kubelet.log, kw-policy-server.log)" >&2
  exit $rc
fi
echo "the Kubewarden stage passed in $(el) (Kubewarden's controller v$KW_VERSION${BATS_FILTER:+, scenarios matching $BATS_FILTER})"
