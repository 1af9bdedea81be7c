#!/usr/bin/env bats
# load.bats: many users and the controllers create pods at once through the webhook (make e2e-load).
# run.sh starts the control plane; the controller manager runs with KCM_EXTRA_ARGS (a higher client
# rate limit, so that the controllers' own 20 requests/s do not hide the webhook). Figures go to
# $RUN/load-results.txt; the test fails on a single pod without exactly its owner's stamp.
#
# LOAD_BARE (default 500): bare pods per measured phase; LOAD_MIXED (500): bare pods during the mixed
# phase; LOAD_REPLICAS (250): pods per workload in the mixed phase; LOAD_CONCURRENCY (8).
bats_require_minimum_version 1.5.0

setup() {
  load lib
  BARE=${LOAD_BARE:-500} MIXED=${LOAD_MIXED:-500} REPLICAS=${LOAD_REPLICAS:-250} CONC=${LOAD_CONCURRENCY:-8}
  USERS=alice,bob,carol,airflow
  RESULTS=$RUN/load-results.txt
}

# bare NS N PREFIX: loadgen's bare pods, round-robin over the four users; prints its JSON result
bare() {
  "$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users "$USERS" -namespace "$1" \
    -n "$2" -c "$CONC" -prefix "$3"
}

# workloads NS REPLICAS: alice's Deployment, bob's Job, carol's StatefulSet and airflow's Deployment,
# each of REPLICAS pods, created at once by their owners (the templates carry e2e-owner)
workloads() {
  local ns=$1 r=$2
  deployment alice "$ns" alice-web "$r" &
  job bob "$ns" bob-batch "$r" &
  statefulset carol "$ns" carol-db "$r" &
  deployment airflow "$ns" airflow-tasks "$r" &
  wait
}

@test "load: four users and the controllers create pods at once; every pod carries exactly its owner's stamp" {
  local t0 cpu0 cpu1 reviews0 reviews1 without with mixed mixed_secs hist took
  new_namespace load-plain unlabelled
  new_namespace load-bare
  new_namespace load-mixed
  echo "kube-controller-manager flags: ${KCM_EXTRA_ARGS:-<none>}; users $USERS; concurrency $CONC"

  # Warm both paths up (connections, the webhook's first compilations), then measure each alone.
  bare load-plain 40 warm > /dev/null
  bare load-bare 40 warm > /dev/null
  without=$(bare load-plain "$BARE" plain)
  echo "without the webhook (namespace not selected): $without"

  webhook_metrics "$RUN/metrics.before"
  cpu0=$(kwhost_cpu_ticks)
  reviews0=$(wc -l < "$RUN/reviews.jsonl")
  with=$(bare load-bare "$BARE" bare)
  echo "with the webhook:                             $with"

  # Mixed: bare pods and four workloads of four owners, all at once.
  t0=$(date +%s.%N)
  bare load-mixed "$MIXED" mixed > "$RUN/mixed.json" &
  workloads load-mixed "$REPLICAS"
  wait_until 240 "$((MIXED + 4 * REPLICAS)) pods in load-mixed" pods_reach load-mixed "$((MIXED + 4 * REPLICAS))"
  mixed_secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  wait
  mixed=$(cat "$RUN/mixed.json")
  echo "mixed phase: bare $mixed; $((4 * REPLICAS)) controller pods; $((MIXED + 4 * REPLICAS)) pods in ${mixed_secs}s"

  webhook_metrics "$RUN/metrics.after"
  cpu1=$(kwhost_cpu_ticks)
  reviews1=$(wc -l < "$RUN/reviews.jsonl")
  hist=$("$LOADGEN" histogram -before "$RUN/metrics.before" -after "$RUN/metrics.after")
  took=$(tail -n +"$((reviews0 + 1))" "$RUN/reviews.jsonl" | jq -s -c '[.[].micros] | sort |
    {n: length, p50ms: (.[(length * 0.5 | floor)] / 1000), p99ms: (.[(length * 0.99 | floor)] / 1000)}')
  local admissions=$((reviews1 - reviews0)) ticks=$((cpu1 - cpu0)) hz
  hz=$(getconf CLK_TCK)

  # Nothing lost, nothing failed.
  [ "$(jq .failed <<< "$without")" -eq 0 ]
  [ "$(jq .failed <<< "$with")" -eq 0 ]
  [ "$(jq .failed <<< "$mixed")" -eq 0 ]
  [ "$(pod_total load-bare)" -eq "$((BARE + 40))" ]
  [ "$(pod_total load-mixed)" -eq "$((MIXED + 4 * REPLICAS))" ]

  {
    echo "load run $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)," \
      "kube-apiserver/kube-controller-manager v$KUBE_VERSION, etcd $("$ETCD" --version | awk 'NR==1{print $3}'), concurrency $CONC, users $USERS"
    echo "bare pods without the webhook: $(jq -r '"\(.created) in \(.seconds)s = \(.perSecond) pods/s"' <<< "$without")"
    echo "bare pods with the webhook:    $(jq -r '"\(.created) in \(.seconds)s = \(.perSecond) pods/s"' <<< "$with")"
    echo "mixed (bare + 2 Deployments, a Job, a StatefulSet): $((MIXED + 4 * REPLICAS)) pods in ${mixed_secs}s"
    echo "webhook admission latency (API server histogram, $(jq -r .count <<< "$hist") calls): p50 $(jq -r .p50ms <<< "$hist") ms, p99 $(jq -r .p99ms <<< "$hist") ms; buckets $(jq -r .buckets <<< "$hist")"
    echo "policy evaluation inside kwhost ($(jq -r .n <<< "$took") requests): p50 $(jq -r .p50ms <<< "$took") ms, p99 $(jq -r .p99ms <<< "$took") ms"
    echo "kwhost CPU: $ticks ticks at ${hz} Hz for $admissions admissions = $(awk -v t="$ticks" -v hz="$hz" -v n="$admissions" 'BEGIN {printf "%.3f", t * 1000 / hz / n}') ms per admission"
  } | tee "$RESULTS"

  audit_pods
}
