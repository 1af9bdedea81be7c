#!/usr/bin/env bash
# run.sh: the cluster suite, end to end (`make e2e-cluster` runs it with the paths filled in).
#
#  1. Debian packages: etcd-server, bats, jq, openssl, curl (installed when missing).
#  2. kube-apiserver and kube-controller-manager built from the Go module proxy (build-k8s.sh; cached
#     in $KUBE_BIN). When the proxy will not serve them the suite is SKIPPED with a loud banner, or
#     fails when REQUIRE_CLUSTER=1.
#  3. A PKI, then etcd, kube-apiserver, kwhost serve and kube-controller-manager on 127.0.0.1, the
#     MutatingWebhookConfiguration generated from metadata.yml, and RBAC for the test users.
#  4. cluster.bats, which changes the policy's settings (restarting kwhost) and the controller
#     manager's identity mode (restarting it) as its scenarios need.
#  5. Everything started here is stopped by recorded PID on the way out, failure or not (KEEP=1 leaves
#     it running for a look; `make e2e-cluster-down` stops it).
#
# Env: KWHOST, PREFLIGHT, POLICY, WEBHOOKCONFIG (built by make), METADATA, MATCH_CONDITIONS, KUBE_BIN, KUBE_VERSION, RUN (state, default
# build/cluster), API_PORT, ETCD_PORT, KCM_PORT, WEBHOOK_PORT, BATS_FILTER (a regex of test names).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=run-env.bash
. "$HERE/run-env.bash"
export RUN=${RUN:-$ROOT/build/cluster}
export KWHOST=${KWHOST:-$ROOT/build/kwhost} POLICY=${POLICY:-$ROOT/policy.wasm}
export PREFLIGHT=${PREFLIGHT:-$ROOT/build/yunikorn-user-info-preflight}
export WEBHOOKCONFIG=${WEBHOOKCONFIG:-$ROOT/build/webhookconfig} METADATA=${METADATA:-$ROOT/metadata.yml}
# The webhook gets the matchConditions of the shipped example, so that the suite proves what users deploy.
export MATCH_CONDITIONS=${MATCH_CONDITIONS:-$ROOT/examples/default.yaml}
# The operator examples whose custom-resource rules "register_webhook custom-resources" adds; the CRDs
# (comma-separated files or folders) are the operators' own, fetched below.
export OPERATOR_EXAMPLES=${OPERATOR_EXAMPLES:-$ROOT/examples/spark-operator.yaml,$ROOT/examples/kuberay.yaml}
export OPERATORS_DIR=${OPERATORS_DIR:-$ROOT/.tools/operators}
# Uncommon ports, so that the suite does not collide with a cluster or a policy-server on this machine.
export API_PORT=${API_PORT:-16443} ETCD_PORT=${ETCD_PORT:-12379} ETCD_PEER_PORT=${ETCD_PEER_PORT:-12380}
export KCM_PORT=${KCM_PORT:-20257} WEBHOOK_PORT=${WEBHOOK_PORT:-19443}

skip_loudly() {
  cat >&2 <<B

##############################################################################################
##  SKIPPED: the cluster suite (make e2e-cluster) did NOT run.
##  $1
##  Nothing was tested against a real API server. Set REQUIRE_CLUSTER=1 to make this an error.
##############################################################################################

B
  "$ROOT/hack/stage-note.sh" skipped "the cluster suite did NOT run: $1"
  # In CI (CI=true) the suite must run: a skip there would hide that nothing was tested.
  if [ "${REQUIRE_CLUSTER:-0}" = 1 ] || [ "${CI:-}" = true ]; then exit 1; fi
  exit 0
}

for f in "$KWHOST" "$PREFLIGHT" "$POLICY" "$WEBHOOKCONFIG" "$METADATA" "$MATCH_CONDITIONS"; do
  [ -e "$f" ] || { echo "run.sh: $f is missing: run it through 'make e2e-cluster'" >&2; exit 2; }
done

echo "== [1/4] tools"
"$ROOT/hack/ensure-debian-packages.sh" etcd:etcd-server bats:bats jq:jq openssl:openssl curl:curl
export ETCD=${ETCD:-$(command -v etcd)}
echo "etcd $("$ETCD" --version | awk 'NR==1{print $3}'), bats $(bats --version | awk '{print $2}') [$(el)]"

echo "== [2/4] kube-apiserver, kube-controller-manager and kubectl v$KUBE_VERSION"
# Long children run in the background and are waited for: bash runs a signal trap only between
# commands, so a foreground child would make Ctrl-C (or a CI cancel) wait for it to finish. timeout
# puts the child in a process group of its own and passes a signal on to all of it.
CHILD=
run_child() {
  timeout "$@" &
  CHILD=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=
  return "$rc"
}
on_signal() {
  if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2> /dev/null || true; fi
  exit 130
}
trap on_signal INT TERM

rc=0
run_child 2700 "$HERE/build-k8s.sh" "$KUBE_BIN" || rc=$?
case $rc in
  0) ;;
  3) skip_loudly "kube-apiserver v$KUBE_VERSION could not be built: the Go module proxy did not serve its modules." ;;
  124) echo "building kube-apiserver took more than 45 minutes: gave up" >&2; exit 1 ;;
  *) echo "building kube-apiserver failed (exit $rc)" >&2; exit 1 ;;
esac
# The suite's kubectl is the one built with the API server: a fresh machine has none that is current, and a
# kubectl elsewhere on PATH may be too old or too new for this API server.
export PATH="$KUBE_BIN:$PATH"
echo "kubectl $(kubectl version --client -o json | jq -r .clientVersion.gitVersion) from $KUBE_BIN [$(el)]"
# cluster.bats applies the Spark operator's and KubeRay's own CRDs (from their Go modules, cached in
# $OPERATORS_DIR); the hand-written crds.yaml stands in when the module proxy refuses them, and for the
# other suites (yunikorn.bats applies it client-side).
if [ -z "${CRDS:-}" ] && [[ " ${SUITE:-cluster.bats guard.bats native.bats native-cost.bats} " =~ " "(cluster|native)".bats " ]]; then
  mkdir -p "$(dirname "$RUN")"
  if CRDS_ONLY=1 "$HERE/build-operators.sh" "$OPERATORS_DIR" spark-operator-v2.4.0 kuberay-v1.5.0 > "$RUN.crds.log" 2>&1; then
    # copied: a build of the operators in the background (make test) may replace their directories meanwhile
    rm -rf "$RUN.crds" && mkdir -p "$RUN.crds/spark" "$RUN.crds/kuberay"
    cp "$OPERATORS_DIR"/spark-operator-v2.4.0/crds/* "$RUN.crds/spark/"
    cp "$OPERATORS_DIR"/kuberay-v1.5.0/crds/* "$RUN.crds/kuberay/"
    CRDS=$RUN.crds/spark,$RUN.crds/kuberay
  else
    echo "the operators' CRDs could not be fetched ($RUN.crds.log): the hand-written test/cluster/crds.yaml stands in" >&2
    CRDS=$HERE/crds.yaml
  fi
fi
export CRDS=${CRDS:-$HERE/crds.yaml}
echo "custom-resource CRDs: $CRDS"

echo "== [3/4] control plane on 127.0.0.1 (state and logs in $RUN)"
# shellcheck source=lib.bash
source "$HERE/lib.bash"
stop_all # a previous run's leftovers (KEEP=1 or a killed run), by their recorded PIDs
for port in "$API_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" "$KCM_PORT" "$WEBHOOK_PORT"; do
  if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
    echo "port $port is in use: stop what listens there, or choose other ports (API_PORT, ETCD_PORT, KCM_PORT, WEBHOOK_PORT)" >&2
    exit 1
  fi
done
rm -rf "$RUN"
mkdir -p "$RUN/logs" "$RUN/pids"
cleanup() {
  local rc=$?
  if [ "${KEEP:-0}" = 1 ]; then
    echo "KEEP=1: left running; KUBECONFIG=$RUN/admin.kubeconfig; stop with 'make e2e-cluster-down'"
  else
    stop_all
  fi
  if [ $rc -ne 0 ]; then echo "logs: $RUN/logs (kwhost.log has one line per admission request)" >&2; fi
  exit $rc
}
trap cleanup EXIT

"$HERE/pki.sh" "$RUN/pki"
for u in admin kcm alice bob airflow binder carol; do write_kubeconfig "$u"; done
start_etcd
echo "etcd ready [$(el)]"
start_apiserver
echo "kube-apiserver ready [$(el)]"
start_kwhost '{}'
setup_rbac
# The default configuration: no arguments.
# shellcheck disable=SC2119
register_webhook
decider="kwhost serve"
[ -z "${POLICY_SERVER:-}" ] || decider="policy-server ($POLICY_SERVER) behind kwhost front"
echo "$decider ready, webhook registered from $(basename "$METADATA") with the matchConditions of $(basename "$MATCH_CONDITIONS") [$(el)]"
start_kcm sa
new_namespace e2e-probe
wait_webhook e2e-probe
kc admin delete namespace e2e-probe --wait=false > /dev/null
echo "kube-controller-manager ready, webhook live [$(el)]"

# SUITE: the bats files to run, in order (make e2e-load: load.bats faults.bats). guard.bats shows mutators after the
# policy and the guard; native.bats compares the policy
# with the native admission policies of test/native on the same control plane, native-cost.bats times pod creation
# with neither, with the native policies and with the policy's webhook (small here; by hand in docs/native-comparison.md).
read -ra suite <<< "${SUITE:-cluster.bats guard.bats native.bats native-cost.bats}"
echo "== [4/4] scenarios (${suite[*]})"
args=(--timing --show-output-of-passing-tests)
if [ -n "${BATS_FILTER:-}" ]; then args+=(--filter "$BATS_FILTER"); fi
run_child -k 10 1200 bats "${args[@]}" "${suite[@]/#/$HERE/}"
echo "cluster suite passed in $(el)"
