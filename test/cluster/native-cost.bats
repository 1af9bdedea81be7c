#!/usr/bin/env bats
# native-cost.bats: what admission costs, side by side, run by hand (not in make test: figures, not a verdict).
# Bare pods are created through the API server (loadgen, client certificates, COST_CONC at a time) into three
# namespaces: one no admission policy covers, one the native policies of test/native cover, one the policy's
# webhook (kwhost serve) covers, COST_PODS pods each, in COST_ROUNDS alternating rounds. For each it records pods
# per second and, from two scrapes of the API server's metrics around the round, p50 and p99 of its own admission
# histograms: the mutating and validating steps for CREATE, and the MutatingAdmissionPolicy,
# ValidatingAdmissionPolicy and MutatingAdmissionWebhook plugins. Results: $RUN/native-cost.jsonl and
# $RUN/native-cost.md. The command is in docs/native-comparison.md ("Cost").
bats_require_minimum_version 1.5.0

NATIVE=$BATS_TEST_DIRNAME/../native
COST_ROUNDS=${COST_ROUNDS:-3}
COST_PODS=${COST_PODS:-500}
COST_CONC=${COST_CONC:-8}

setup() {
  load lib
}

# metric NAME FILTER FILE: the bucket lines of histogram NAME whose labels contain FILTER (a fixed string), from FILE
metric() { grep "^$1_bucket{" "$3" | grep -F "$2" || true; }

# histograms FILE: the histograms compared, each into FILE.KEY
histograms() {
  local f=$1
  metric apiserver_admission_step_admission_duration_seconds 'operation="CREATE",rejected="false",type="admit"' "$f" > "$f.step-admit"
  metric apiserver_admission_step_admission_duration_seconds 'operation="CREATE",rejected="false",type="validate"' "$f" > "$f.step-validate"
  metric apiserver_admission_controller_admission_duration_seconds 'name="MutatingAdmissionPolicy",operation="CREATE",rejected="false"' "$f" > "$f.map"
  metric apiserver_admission_controller_admission_duration_seconds 'name="ValidatingAdmissionPolicy",operation="CREATE",rejected="false"' "$f" > "$f.vap"
  metric apiserver_admission_controller_admission_duration_seconds 'name="MutatingAdmissionWebhook",operation="CREATE",rejected="false"' "$f" > "$f.webhook"
}

scrape() {
  curl_admin "https://127.0.0.1:$API_PORT/metrics" > "$1"
  histograms "$1"
}

# round CONFIG NS ROUND: COST_PODS bare pods into NS; one JSON line into $RUN/native-cost.jsonl
round() {
  local config=$1 ns=$2 r=$3 b=$RUN/cost.before a=$RUN/cost.after pods k h line
  scrape "$b"
  pods=$("$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users alice,bob -namespace "$ns" \
    -n "$COST_PODS" -c "$COST_CONC" -prefix "r$r")
  scrape "$a"
  line=$(jq -c --arg c "$config" --argjson r "$r" '{config: $c, round: $r, created, failed, perSecond}' <<< "$pods")
  for k in step-admit step-validate map vap webhook; do
    if [ -s "$a.$k" ]; then
      h=$("$LOADGEN" histogram -before "$b.$k" -after "$a.$k")
    else
      h=null
    fi
    line=$(jq -c --arg k "$k" --argjson h "$h" '.[$k] = $h' <<< "$line")
  done
  echo "$line" | tee -a "$RUN/native-cost.jsonl"
}

@test "cost: bare pods with no admission policy, with the native policies, with the webhook (alternating rounds)" {
  [ -x "${LOADGEN:-}" ] || skip "LOADGEN is not set: go build -o build/loadgen ./test/cluster/loadgen"
  new_namespace cost-none unlabelled
  new_namespace cost-webhook
  new_namespace cost-native unlabelled
  kc admin label namespace cost-native yunikorn-user-info-native=enabled > /dev/null
  kc admin apply -f "$NATIVE/policies.yaml" > /dev/null
  wait_until 60 "the native policies to stamp in cost-native" bash -c \
    "[ \"\$(kubectl --kubeconfig='$RUN/alice.kubeconfig' -n cost-native run p --image=x --restart=Never --dry-run=server -o json |
      jq -r '.metadata.annotations[\"yunikorn.apache.org/user.info\"] // empty')\" = '$ALICE_VALUE' ]"
  wait_webhook cost-webhook
  : > "$RUN/native-cost.jsonl"
  # warm-up: connections, the webhook's module, the policies' compiled programs
  for ns in cost-none cost-native cost-webhook; do
    "$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users alice,bob -namespace "$ns" -n 40 -c "$COST_CONC" -prefix warm > /dev/null
  done
  local configs=(none native webhook) r i c
  for r in $(seq 1 "$COST_ROUNDS"); do
    for i in 0 1 2; do
      c=${configs[$(((i + r - 1) % 3))]}
      round "$c" "cost-$c" "$r"
    done
  done
  kc admin delete -f "$NATIVE/policies.yaml" --ignore-not-found > /dev/null
  kc admin delete namespace cost-none cost-native cost-webhook --wait=false > /dev/null
  # The median over the rounds of each figure, per configuration.
  jq -rs '
    def med: sort | .[(length / 2 | floor)];
    def f(k; q): [.[] | .[k] | select(. != null) | .[q]] | if length == 0 then "-" else (med | tostring) end;
    group_by(.config) | map({config: .[0].config, rounds: length, failed: (map(.failed) | add), perSecond: (map(.perSecond) | med),
      a50: f("step-admit"; "p50ms"), a99: f("step-admit"; "p99ms"), v50: f("step-validate"; "p50ms"), v99: f("step-validate"; "p99ms"),
      m50: f("map"; "p50ms"), m99: f("map"; "p99ms"), p50: f("vap"; "p50ms"), p99: f("vap"; "p99ms"), w50: f("webhook"; "p50ms"), w99: f("webhook"; "p99ms")}) |
    sort_by({none: 0, native: 1, webhook: 2}[.config]) |
    ["| pods admitted by | pods/s | mutating step p50 / p99 ms | validating step p50 / p99 ms | MutatingAdmissionPolicy p50 / p99 ms | ValidatingAdmissionPolicy p50 / p99 ms | MutatingAdmissionWebhook p50 / p99 ms |",
     "| --- | --- | --- | --- | --- | --- | --- |"] +
    map("| \(.config) | \(.perSecond) | \(.a50) / \(.a99) | \(.v50) / \(.v99) | \(.m50) / \(.m99) | \(.p50) / \(.p99) | \(.w50) / \(.w99) |") | .[]' \
    "$RUN/native-cost.jsonl" | tee "$RUN/native-cost.md"
  [ "$(jq -s 'map(.failed) | add' "$RUN/native-cost.jsonl")" -eq 0 ]
}
