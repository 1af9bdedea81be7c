#!/usr/bin/env bash
# yunikorn.sh: the YuniKorn stage (`make e2e-yunikorn`): Apache YuniKorn's real scheduler (and its admission
# controller) against the cluster suite's control plane, with the policy (kwhost serve) in the loop, once per
# YuniKorn version; also the head-to-head (`make bench-yunikorn`, YUNIKORN_SUITE=yunikorn-bench.bats).
#
#  1. Debian packages and kube-apiserver/kube-controller-manager (build-k8s.sh, cached), then each YuniKorn
#     version (build-yunikorn.sh, cached in .tools/yunikorn/vVERSION). A module the proxy refuses SKIPS that
#     version with a banner, or fails when REQUIRE_CLUSTER=1 or CI=true.
#  2. For each version, run.sh with SUITE=yunikorn.bats in a private network namespace of its own: YuniKorn's
#     REST API listens on :9080 on every interface (hard-coded), so the whole control plane and the scheduler
#     run where nothing outside can reach them and nothing collides with another suite on this machine. The
#     versions run side by side (YUNIKORN_SERIAL=1: one after the other), each printing its output when done.
#  3. A table of version, scenario, expected and observed, from every version's run.
#
# Env: YUNIKORN_VERSIONS (default "1.4.0 1.8.0"), RUN (state, default build/cluster-yunikorn; one directory
# per version below it), YUNIKORN_SUITE (default yunikorn.bats; make bench-yunikorn: yunikorn-bench.bats), and
# everything run.sh takes (ports, BATS_FILTER, KEEP is not supported here).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }

read -ra VERSIONS <<< "${YUNIKORN_VERSIONS:-1.4.0 1.8.0}"
BASE=${RUN:-$ROOT/build/cluster-yunikorn}
KUBE_VERSION=${KUBE_VERSION:-1.37.2}
export KUBE_VERSION KUBE_BIN=${KUBE_BIN:-$ROOT/.tools/k8s/v$KUBE_VERSION/bin}
TABLE=$BASE/table.tsv

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

# Everything that needs the network happens here, before the suite enters its network namespace.
"$ROOT/hack/ensure-debian-packages.sh" etcd:etcd-server bats:bats jq:jq openssl:openssl curl:curl ip:iproute2
rc=0
timeout 2700 "$HERE/build-k8s.sh" "$KUBE_BIN" || rc=$?
case $rc in
  0) ;;
  3) banner "the YuniKorn stage (make e2e-yunikorn) did NOT run." "kube-apiserver v$KUBE_VERSION could not be built: the Go module proxy did not serve it."; exit 0 ;;
  *) echo "building kube-apiserver failed (exit $rc)" >&2; exit 1 ;;
esac
ran=()
for v in "${VERSIONS[@]}"; do
  rc=0
  timeout 1800 "$HERE/build-yunikorn.sh" "$v" "$ROOT/.tools/yunikorn/v$v" || rc=$?
  case $rc in
    0) ran+=("$v") ;;
    3) banner "YuniKorn v$v was NOT tested." "Its modules could not be downloaded from the Go module proxy ($(go env GOPROXY))." part ;;
    *) echo "building YuniKorn v$v failed (exit $rc)" >&2; exit 1 ;;
  esac
done
echo "YuniKorn versions to run: ${ran[*]:-none} [$(el)]"

# A private network namespace: as root, unshare -n; otherwise a user namespace too (unshare -rn).
netns=(unshare -n)
[ "$(id -u)" = 0 ] || netns=(unshare -rn)
if ! "${netns[@]}" true 2> /dev/null; then
  # A CI job's container (no CAP_SYS_ADMIN, no user namespaces) is a network namespace of its own already: run
  # there when nothing else holds YuniKorn's ports. Anywhere else, skip rather than listen on every interface.
  if [ "${CI:-}" = true ] && ! (exec 3<> /dev/tcp/127.0.0.1/9080) 2> /dev/null; then
    echo "'${netns[*]}' is not permitted here; CI=true: running in this (container's) network namespace"
    netns=(env)
  else
    banner "the YuniKorn stage did NOT run." "'${netns[*]}' is not permitted here: YuniKorn's REST API would listen on every interface."
    exit 0
  fi
fi

rm -rf "$BASE"
mkdir -p "$BASE"
: > "$TABLE"
failed=()
# start_version V: run.sh for YuniKorn V in a network namespace of its own (unshare and bash exec, so the PID
# left in $! is run.sh's, which stops what it started when signalled)
start_version() {
  # shellcheck disable=SC2016,SC2034 # the variables are the command's environment; $1 is the inner shell's
  RUN=$BASE/v$1 YUNIKORN_VERSION=$1 YUNIKORN_BIN=$ROOT/.tools/yunikorn/v$1 YUNIKORN_TABLE=$TABLE SUITE=${YUNIKORN_SUITE:-yunikorn.bats} \
    "${netns[@]}" bash -c 'PATH=$PATH:/usr/sbin:/sbin; { ip link show lo | grep -q LOOPBACK,UP || ip link set lo up; } && exec "$1"' _ "$HERE/run.sh"
}
if [ "${netns[0]}" != env ] && [ "${YUNIKORN_SERIAL:-0}" != 1 ] && [ ${#ran[@]} -gt 1 ]; then
  # Each version in its own network namespace: they share nothing, so they run side by side (the scenarios
  # mostly wait for the scheduler). Their output follows, one version after the other.
  echo "==== YuniKorn ${ran[*]} side by side (YUNIKORN_SERIAL=1 runs them one by one); output in $BASE/v<version>.log [$(el)]"
  pids=()
  for v in "${ran[@]}"; do
    start_version "$v" > "$BASE/v$v.log" 2>&1 &
    pids+=("$!")
  done
  trap 'kill -TERM "${pids[@]}" 2> /dev/null; wait; exit 130' INT TERM
  for i in "${!ran[@]}"; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    echo "==== YuniKorn v${ran[$i]}: exit $rc [$(el)]"
    cat "$BASE/v${ran[$i]}.log"
    [ $rc -eq 0 ] || failed+=("v${ran[$i]} (exit $rc)")
  done
  trap - INT TERM
else
  for v in "${ran[@]}"; do
    echo "==== YuniKorn v$v (state in $BASE/v$v) [$(el)]"
    rc=0
    start_version "$v" || rc=$?
    [ $rc -eq 0 ] || failed+=("v$v (exit $rc)")
  done
fi
echo
echo "YuniKorn in the loop: what YuniKorn did, per version and scenario ($(date -u +%Y-%m-%dT%H:%MZ), $(el))"
{
  printf 'version\tscenario\texpected\tobserved\n'
  sort -s -t $'\t' -k1,1 "$TABLE"
} | awk -F'\t' '{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
  END { for (r = 1; r <= n; r++) { line = ""; for (i = 1; i <= 4; i++) line = line sprintf("%-" w[i] "s  ", cell[r, i]); sub(/ +$/, "", line); print line } }'
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "YuniKorn stage passed for: ${ran[*]:-none} in $(el)"
