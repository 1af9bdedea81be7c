#!/usr/bin/env bats
# yunikorn-bench.bats: the head-to-head of the policy's webhook (kwhost serve) and YuniKorn's own admission
# controller under the same load (make bench-yunikorn, not part of make test). yunikorn.sh runs it once per
# YuniKorn version, one version after the other, each in its own network namespace. No scheduler runs: the
# pods stay pending, and only admission is measured.
#
# Four sides, each the only mutating webhook on the pods while it is measured, in alternating rounds (the
# order of the sides reversed every other round): "policy" (kwhost as the suites run it: a record line and a
# log line per request), "policy-norecord" (kwhost restarted without --record, so the record's share shows),
# "floor" (kwhost without --record serving the benchmark's floor module, which accepts without reading the
# request: what the host itself costs, TLS, HTTP, the review's JSON, a fresh instance and the log line; the
# policy's own cost is policy-norecord minus floor) and "yunikorn" (YuniKorn's admission controller with its
# defaults, logging every review at INFO).
# Per side: the API server's own admission latency histogram (apiserver_admission_webhook_admission_duration_
# seconds, by webhook name) p50/p99, and the webhook process's CPU per admission (/proc/PID/stat, user +
# system, during its own rounds only). For "policy", kwhost's evaluation time per request (its record's
# micros: parsing the review and running the policy, what policy-server would do too).
#
# BENCH_ROUNDS (default 4) rounds of BENCH_PODS (default 300) pods per side, BENCH_CONCURRENCY (8).
bats_require_minimum_version 1.5.0

load lib
load yunikorn

setup_file() {
  yk_install # the namespace, account and ConfigMaps; the scheduler is not started
}

BENCH_NS=bench-yk
NORECORD_NAME=yunikorn-user-info-norecord
FLOOR_NAME=yunikorn-user-info-floor

# bench_buckets FILE WEBHOOK: the histogram's _bucket lines of WEBHOOK (its name label) in the scrape FILE
bench_buckets() { grep -F "name=\"$2\"" "$1" || true; }
scrape() { curl_admin "https://127.0.0.1:$API_PORT/metrics" | grep '^apiserver_admission_webhook_admission_duration_seconds_bucket{' > "$1" || true; }
# delta BEFORE AFTER WEBHOOK: AFTER minus BEFORE by le, as bucket lines loadgen histogram reads
delta() {
  bench_buckets "$1" "$3" > "$RUN/bench.b"
  bench_buckets "$2" "$3" > "$RUN/bench.a"
  awk -v f="$RUN/bench.b" '
    { i = index($0, "le=\""); if (!i) next; s = substr($0, i + 4); le = substr(s, 1, index(s, "\"") - 1); v = $NF + 0
      if (FILENAME == f) b[le] += v; else a[le] += v }
    END { for (le in a) printf "x{le=\"%s\"} %d\n", le, a[le] - b[le] }' "$RUN/bench.b" "$RUN/bench.a"
}
# cpu_ticks NAME: the process's user + system CPU in clock ticks (/proc/PID/stat; 10 ms each, hence many pods)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$(cat "$RUN/pids/$1.pid")/stat"; }

# kwhost_norecord MODULE TAG: kwhost restarted as start_kwhost does, without --record, serving MODULE
kwhost_norecord() {
  stop kwhost
  start kwhost "$KWHOST" serve --policy "$1" --allow-unannotated --settings-json '{}' \
    --cert-file "$PKI/webhook.crt" --key-file "$PKI/webhook.key" --listen "127.0.0.1:$WEBHOOK_PORT"
  echo "$2" > "$RUN/kwhost.settings"
  wait_until 30 "kwhost serve /healthz" curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$WEBHOOK_PORT/healthz"
}
# only_policy_config NAME: the policy's configuration as register_webhook made it, renamed NAME (and its webhook
# NAME.kwhost.test, the API server's metrics label) unless NAME is its own; the other kwhost ones and YuniKorn's deleted
only_policy_config() {
  local n
  if [ "$1" = yunikorn-user-info-e2e ]; then
    kc admin apply -f "$RUN/webhook-configuration.json" > /dev/null
  else
    jq --arg n "$1" '.metadata.name = $n | .webhooks[0].name = $n + ".kwhost.test"' "$RUN/webhook-configuration.json" |
      kc admin apply -f - > /dev/null
  fi
  for n in yunikorn-user-info-e2e "$NORECORD_NAME" "$FLOOR_NAME" "$YK_AC_MUTATING"; do
    if [ "$n" != "$1" ]; then kc admin delete mutatingwebhookconfiguration "$n" --ignore-not-found > /dev/null; fi
  done
}

# side NAME: NAME's webhook is the only one on the pods; waits until a probe shows it
side() {
  case $1 in
    policy)
      if [ "$(cat "$RUN/kwhost.settings")" != '{}' ]; then start_kwhost '{}' > /dev/null; fi
      only_policy_config yunikorn-user-info-e2e
      ;;
    policy-norecord)
      if [ "$(cat "$RUN/kwhost.settings")" != norecord ]; then kwhost_norecord "$POLICY" norecord; fi
      only_policy_config "$NORECORD_NAME"
      ;;
    floor)
      if [ "$(cat "$RUN/kwhost.settings")" != floor ]; then kwhost_norecord "$FLOOR" floor; fi
      only_policy_config "$FLOOR_NAME"
      ;;
    yunikorn)
      kc admin apply -f "$RUN/yk-mutating.json" > /dev/null
      kc admin delete mutatingwebhookconfiguration yunikorn-user-info-e2e "$NORECORD_NAME" "$FLOOR_NAME" --ignore-not-found > /dev/null
      ;;
  esac
  PROBE=0
  wait_until 30 "only $1's webhook on the pods" probe_side "$1"
}
# probe_side NAME: a dry-run pod of alice's went through NAME's webhook alone (kwhost logs a line per request;
# YuniKorn's webhook sets the schedulerName)
probe_side() {
  PROBE=$((PROBE + 1))
  local name="bp-$PROBE-$RANDOM" out sched lines
  out=$(kc alice -n "$BENCH_NS" run "$name" --image="$IMAGE" --restart=Never --dry-run=server -o json) || return 1
  sched=$(jq -r '.spec.schedulerName // ""' <<< "$out")
  lines=$(grep -c " $BENCH_NS/$name by " "$RUN/logs/kwhost.log" || true)
  case $1 in
    yunikorn) [ "$sched" = yunikorn ] && [ "${lines:-0}" -eq 0 ] ;;
    floor) [ "$sched" != yunikorn ] && [ "${lines:-0}" -eq 1 ] ;;
    *) [ "$sched" != yunikorn ] && [ "${lines:-0}" -eq 1 ] && jq -e --arg k "$ANNOTATION" '.metadata.annotations[$k]' <<< "$out" > /dev/null ;;
  esac
}

@test "head-to-head: the policy's webhook and YuniKorn's admission controller, the same load, alternating rounds" {
  local rounds=${BENCH_ROUNDS:-4} pods=${BENCH_PODS:-300} conc=${BENCH_CONCURRENCY:-8} users=alice,bob,carol,airflow
  NS_CO=$BENCH_NS # yk_ac_live probes there
  new_namespace "$BENCH_NS"
  yk_ac_install
  yk_ac_start
  kc admin get mutatingwebhookconfiguration "$YK_AC_MUTATING" -o json |
    jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields)' > "$RUN/yk-mutating.json"
  declare -A hook=([policy]=yunikorn-user-info-e2e.kwhost.test [policy-norecord]=$NORECORD_NAME.kwhost.test
    [floor]=$FLOOR_NAME.kwhost.test [yunikorn]=$YK_AC_HOOK)
  declare -A proc=([policy]=kwhost [policy-norecord]=kwhost [floor]=kwhost [yunikorn]=yunikorn-admission)
  declare -A ticks=([policy]=0 [policy-norecord]=0 [floor]=0 [yunikorn]=0) created=([policy]=0 [policy-norecord]=0 [floor]=0 [yunikorn]=0)
  local s r order out t0 t1 rec0 micros=""
  : > "$RUN/bench.micros"
  for s in policy yunikorn policy-norecord floor; do
    : > "$RUN/bench.$s.delta"
    side "$s"
    out=$("$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users "$users" -namespace "$BENCH_NS" -n 40 -c "$conc" -prefix "warm-$s")
    echo "warm-up $s: $out"
  done
  for r in $(seq 1 "$rounds"); do
    order="policy yunikorn policy-norecord floor"
    [ $((r % 2)) -eq 0 ] && order="floor policy-norecord yunikorn policy"
    for s in $order; do
      side "$s"
      scrape "$RUN/bench.before"
      t0=$(cpu_ticks "${proc[$s]}")
      rec0=$(wc -l < "$RUN/reviews.jsonl")
      out=$(timeout 300 "$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users "$users" -namespace "$BENCH_NS" \
        -n "$pods" -c "$conc" -prefix "r$r-$s")
      t1=$(cpu_ticks "${proc[$s]}")
      scrape "$RUN/bench.after"
      echo "round $r $s: $out; CPU $((t1 - t0)) ticks"
      [ "$(jq .failed <<< "$out")" -eq 0 ]
      ticks[$s]=$((ticks[$s] + t1 - t0))
      created[$s]=$((created[$s] + $(jq .created <<< "$out")))
      delta "$RUN/bench.before" "$RUN/bench.after" "${hook[$s]}" >> "$RUN/bench.$s.delta"
      if [ "$s" = policy ]; then tail -n +"$((rec0 + 1))" "$RUN/reviews.jsonl" | jq -r '.micros' >> "$RUN/bench.micros"; fi
    done
  done
  local hz hist cpu lines=() counts=()
  hz=$(getconf CLK_TCK)
  micros=$(sort -n "$RUN/bench.micros" | awk '{v[NR] = $1} END {printf "p50 %.2f ms, p99 %.2f ms (%d requests)", v[int(NR * 0.5) + 1] / 1000, v[int(NR * 0.99) + 1] / 1000, NR}')
  lines+=("head-to-head $(date -u +%Y-%m-%dT%H:%MZ), YuniKorn v$YUNIKORN_VERSION: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of $pods pods per side, concurrency $conc, users $users")
  for s in policy policy-norecord floor yunikorn; do
    hist=$("$LOADGEN" histogram -after "$RUN/bench.$s.delta")
    cpu=$(awk -v t="${ticks[$s]}" -v hz="$hz" -v n="${created[$s]}" 'BEGIN {printf "%.3f", t * 1000 / hz / n}')
    lines+=("$s: ${created[$s]} pods; API server admission latency ($(jq -r .count <<< "$hist") calls) p50 $(jq -r .p50ms <<< "$hist") ms, p99 $(jq -r .p99ms <<< "$hist") ms, buckets $(jq -r .buckets <<< "$hist"); CPU ${ticks[$s]} ticks = $cpu ms per admission")
    record "bench: $s" "-" "$(jq -r '"p50 \(.p50ms) ms, p99 \(.p99ms) ms"' <<< "$hist"), CPU $cpu ms/admission (${created[$s]} pods)"
    counts+=("${created[$s]}" "$(jq -r .count <<< "$hist")")
  done
  lines+=("policy evaluation inside kwhost (its record's micros): $micros")
  record "bench: kwhost evaluation (record micros)" "-" "$micros"
  printf '%s\n' "${lines[@]}" | tee -a "$RUN/../bench-results.txt"
  local c
  for c in "${counts[@]}"; do [ "$c" -ge $((rounds * pods)) ]; done
  yk_ac_stop
}
