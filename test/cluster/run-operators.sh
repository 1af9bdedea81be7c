#!/usr/bin/env bash
# run-operators.sh: the operator scenarios, end to end (`make e2e-operators` runs it with the paths filled in).
#
#  1. kube-apiserver and friends (build-k8s.sh, cached) and the operators (build-operators.sh, cached in
#     $OPERATORS_DIR): their CRDs from their published artifacts, their controllers from their Go modules.
#     When the proxy refuses Kubernetes the stage is SKIPPED with a banner; when it refuses an operator,
#     that operator's scenarios are skipped with a banner. REQUIRE_CLUSTER=1 (or CI=true) makes either an error.
#     YuniKorn's scheduler (build-yunikorn.sh, cached) for the KubeRay scenarios that read its application users.
#  2. run.sh with SUITE=operators.bats, inside network and mount namespaces of its own (`unshare`, unprivileged):
#     Argo's health endpoint (:6060), the training operator's webhook (:9443) and YuniKorn's REST API (:9080)
#     listen on every interface, hard-coded; in the namespace "every interface" is a private loopback, so nothing
#     listens on the machine's network and nothing collides with another suite's ports.
#  3. The table the scenarios recorded: operator, version, resource form, expected, observed.
#
# Env: as run.sh (RUN defaults to build/cluster-operators), OPERATORS_DIR, OPERATOR_KEYS (which operators),
# OPERATORS_YUNIKORN_VERSION (the YuniKorn scheduler of the KubeRay + YuniKorn scenarios, default 1.8.0).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=run-env.bash
. "$HERE/run-env.bash"
export RUN=${RUN:-$ROOT/build/cluster-operators}
export OPERATORS_DIR=${OPERATORS_DIR:-$ROOT/.tools/operators}
read -ra keys <<< "${OPERATOR_KEYS:-spark-operator-v2.4.0 flink-operator-1.10.0 kuberay-v1.4.0 kuberay-v1.5.0 argo-v3.7.9 argo-v4.0.7 training-operator-v1.9.3}"
# Every operator example's custom-resource rules are registered (register_webhook custom-resources).
ex=$ROOT/examples
export OPERATOR_EXAMPLES=$ex/spark-operator.yaml,$ex/kuberay.yaml,$ex/flink-operator.yaml,$ex/kubeflow-training.yaml,$ex/argo-workflows.yaml
export SUITE=operators.bats

# banner WHAT WHY [part]: a loud skip, noted for the table of make test (hack/stage-note.sh); "part" when
# the stage's other scenarios still run.
banner() {
  cat >&2 <<B

##############################################################################################
##  SKIPPED: $1
##  $2
##  Set REQUIRE_CLUSTER=1 to make this an error.
##############################################################################################

B
  "$ROOT/hack/stage-note.sh" "${3:-skipped}" "$1 $2"
  if [ "${REQUIRE_CLUSTER:-0}" = 1 ] || [ "${CI:-}" = true ]; then exit 1; fi
}

"$ROOT/hack/ensure-debian-packages.sh" etcd:etcd-server bats:bats jq:jq yq:yq openssl:openssl curl:curl \
  unzip:unzip mvn:maven unshare:util-linux ip:iproute2 column:bsdextrautils
echo "== operators: kube binaries and operators [$(el)]"
rc=0
timeout 2700 "$HERE/build-k8s.sh" "$KUBE_BIN" || rc=$?
case $rc in
  0) ;;
  3) banner "the operator scenarios (make e2e-operators) did NOT run." \
       "kube-apiserver v$KUBE_VERSION could not be built: the Go module proxy did not serve its modules."
     exit 0 ;;
  *) echo "building kube-apiserver failed (exit $rc)" >&2; exit 1 ;;
esac
rc=0
timeout 1800 "$HERE/build-operators.sh" "$OPERATORS_DIR" "${keys[@]}" || rc=$?
case $rc in
  0) ;;
  3) missing=()
     for k in "${keys[@]}"; do [ -f "$OPERATORS_DIR/$k/.complete" ] || missing+=("$k"); done
     banner "the scenarios of ${missing[*]} did NOT run." \
       "The module proxy (or Maven Central) refused them; the other operators' scenarios run." part ;;
  *) echo "building the operators failed (exit $rc)" >&2; exit 1 ;;
esac
# YuniKorn's scheduler for the KubeRay scenarios that read its application users (build-yunikorn.sh, cached in
# .tools/yunikorn/vVERSION; yunikorn.bash installs and starts it). Refused: those scenarios are skipped.
export YUNIKORN_VERSION=${OPERATORS_YUNIKORN_VERSION:-1.8.0}
export YUNIKORN_BIN=$ROOT/.tools/yunikorn/v$YUNIKORN_VERSION YUNIKORN_TABLE=$RUN/yunikorn.tsv
rc=0
timeout 1800 "$HERE/build-yunikorn.sh" "$YUNIKORN_VERSION" "$YUNIKORN_BIN" || rc=$?
case $rc in
  0) ;;
  3) banner "the KubeRay scenarios with YuniKorn's scheduler did NOT run." \
       "YuniKorn v$YUNIKORN_VERSION could not be built: the Go module proxy did not serve its modules." part ;;
  *) echo "building YuniKorn v$YUNIKORN_VERSION failed (exit $rc)" >&2; exit 1 ;;
esac
echo "operators ready [$(el)]"

# run.sh inside a private network namespace (its loopback starts down) and mount namespace: the training
# operator's certificate rotator writes to /tmp/k8s-webhook-server/serving-certs, hard-coded, so that folder
# is a tmpfs of the suite's own (only that folder: a checkout under /tmp, as a CI clone may be, stays seen).
# root needs no user namespace (some distributions refuse unprivileged ones: Ubuntu 24.04's AppArmor default).
ns=(--net --mount)
if [ "$(id -u)" -ne 0 ]; then ns=(--user --map-root-user "${ns[@]}"); fi
if ! unshare "${ns[@]}" true 2> /dev/null; then
  banner "the operator scenarios (make e2e-operators) did NOT run." \
    "unshare ${ns[*]} is refused here: the operators need network and mount namespaces of their own."
  exit 0
fi
rc=0
# shellcheck disable=SC2016 # $0 is expanded by the inner shell
unshare "${ns[@]}" -- \
  bash -c 'ip link set lo up && mkdir -p /tmp/k8s-webhook-server &&
    mount -t tmpfs -o size=256m e2e-tmp /tmp/k8s-webhook-server && exec "$0"' "$HERE/run.sh" || rc=$?

if [ -s "$RUN/operators.tsv" ]; then
  echo
  echo "== operators: what the controllers did with each resource form"
  { printf 'operator\tversion\tresource form\texpected\tobserved\n'; cat "$RUN/operators.tsv"; } |
    column -t -s $'\t' -o ' | '
fi
echo "operator scenarios: exit $rc in $(el)"
exit "$rc"
