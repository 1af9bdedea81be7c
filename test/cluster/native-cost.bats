#!/usr/bin/env bats
# native-cost.bats: what admission costs, side by side, on one control plane. Pods are created through the API server
# into namespaces of one configuration each: "none" (no admission policy covers it), "native" (the native policies of
# test/native), "kwhost" (the policy's webhook served by `kwhost serve`) and, with POLICY_SERVER, "policy-server" (the
# same webhook served by Kubewarden's policy-server itself, over TLS, no proxy in front). Both webhooks get the
# comparison's settings (native.bats) and are registered from metadata.yml with the examples' matchConditions.
#
# Each round, in an order that rotates from round to round: COST_PODS bare pods per configuration (loadgen, alice's
# and bob's client certificates, COST_CONC at a time), then per configuration alice's Deployment of COST_DEPLOY
# replicas, timed from its creation until all its pods exist (the ReplicaSet controller creates them: a trusted
# system user, whose copy of the template's value the policy keeps). Around each step two scrapes of the API
# server's metrics give p50 and p99 of its own admission histograms for CREATE (the mutating and validating steps,
# the MutatingAdmissionPolicy, ValidatingAdmissionPolicy and MutatingAdmissionWebhook plugins, and the webhook's
# own call). Results: $RUN/native-cost/cost.jsonl (a line per step) and cost.md (medians over the rounds).
#
# `make e2e-cluster` (so `make test`) runs it small: the verdicts are that every pod is admitted and every pod carries
# what its configuration promises (its creator's stamp, alice's on the Deployment's pods; none without a policy). The
# figures of docs/native-comparison.md come from the run by hand written there (COST_ROUNDS=5 COST_PODS=500
# COST_DEPLOY=1000, POLICY_SERVER set). NATIVE_POLICIES=FILE tries another copy of the native policies (a copy
# without the pods' binding must fail the verdict).
bats_require_minimum_version 1.5.0

NATIVE=$BATS_TEST_DIRNAME/../native
POLICIES=${NATIVE_POLICIES:-$NATIVE/policies.yaml}
COST_ROUNDS=${COST_ROUNDS:-1}
COST_PODS=${COST_PODS:-150}
COST_CONC=${COST_CONC:-8}
# Replicas of each round's Deployment (0: no Deployment), and how long it may take to reach them.
COST_DEPLOY=${COST_DEPLOY:-100}
COST_DEPLOY_TIMEOUT=${COST_DEPLOY_TIMEOUT:-300}
# The controllers' client rate limit while the Deployments run (20 requests/s a controller by default would time
# the ReplicaSet controller's client, not admission), as make e2e-load raises it.
COST_KCM_ARGS=${COST_KCM_ARGS:---kube-api-qps=200 --kube-api-burst=400}
COST_LABEL=yunikorn-user-info-cost
COST_KWHOST_PORT=$((WEBHOOK_PORT + 4)) COST_PS_PORT=$((WEBHOOK_PORT + 5)) COST_PS_READY_PORT=$((WEBHOOK_PORT + 1006))
# The webhooks started here live at most this long (timeout(1)), should the run be killed before its teardown: run.sh
# gives the whole bats run 1,200 s.
COST_LIFETIME=1300
NATIVE_LABEL=yunikorn-user-info-native=enabled
OUT=$RUN/native-cost

setup() {
  load lib
  if [ -f "$OUT/unsupported" ]; then skip "$(cat "$OUT/unsupported")"; fi
  read -ra CONFIGS < "$OUT/configs"
  LOADGEN=$(cat "$OUT/loadgen")
}

# ns_label CONFIG: the label that puts a namespace under CONFIG ("" for none)
ns_label() {
  case $1 in
    none) echo "" ;;
    native) echo "$NATIVE_LABEL" ;;
    *) echo "$COST_LABEL=$1" ;;
  esac
}

# cost_namespace NAME CONFIG: a namespace under CONFIG, ready for pods
cost_namespace() {
  local label
  label=$(ns_label "$2")
  new_namespace "$1" unlabelled
  if [ -n "$label" ]; then kc admin label namespace "$1" "$label" > /dev/null; fi
}

# start_cost_kwhost SETTINGS: the policy behind `kwhost serve` on COST_KWHOST_PORT
start_cost_kwhost() {
  stop cost-kwhost
  start cost-kwhost timeout "$COST_LIFETIME" "$KWHOST" serve --policy "$POLICY" --allow-unannotated --settings-json "$1" \
    --cert-file "$PKI/webhook.crt" --key-file "$PKI/webhook.key" --listen "127.0.0.1:$COST_KWHOST_PORT"
  wait_until 30 "kwhost serve on $COST_KWHOST_PORT" curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$COST_KWHOST_PORT/healthz" ||
    die_with_log cost-kwhost "kwhost serve did not start"
}

# start_cost_ps SETTINGS: the policy behind Kubewarden's policy-server ($POLICY_SERVER), serving TLS itself on
# COST_PS_PORT with the suite's webhook certificate, as a PolicyServer's pod does (two workers for two cores), with the
# module `kwctl annotate` wrote ($POLICY_SERVER_POLICY) and POLICY_SERVER_FLAGS (--sigstore-trust-config FILE offline).
start_cost_ps() {
  local extra=()
  read -ra extra <<< "${POLICY_SERVER_FLAGS:-}"
  if [ ! -f "$POLICY_SERVER_POLICY" ] || [ "$POLICY_SERVER_POLICY" -ot "$POLICY" ]; then
    echo "$POLICY_SERVER_POLICY is missing or older than $POLICY: make annotated-policy.wasm KWCTL=..." >&2
    return 1
  fi
  mkdir -p "$OUT/ps"
  jq -n --arg m "file://$POLICY_SERVER_POLICY" --argjson s "$1" \
    '{"yunikorn-user-info": {module: $m, allowedToMutate: true, settings: $s}}' > "$OUT/ps/policies.yml"
  stop cost-ps
  start cost-ps timeout "$COST_LIFETIME" "$POLICY_SERVER" --policies "$OUT/ps/policies.yml" --addr 127.0.0.1 --port "$COST_PS_PORT" \
    --cert-file "$PKI/webhook.crt" --key-file "$PKI/webhook.key" --readiness-probe-port "$COST_PS_READY_PORT" \
    --policies-download-dir "$OUT/ps" --sigstore-cache-dir "$OUT/ps/sigstore" --ignore-kubernetes-connection-failure \
    --workers 2 --log-fmt text "${extra[@]}"
  wait_until 120 "policy-server's readiness on $COST_PS_READY_PORT" curl -sf --max-time 2 "http://127.0.0.1:$COST_PS_READY_PORT/readiness" ||
    die_with_log cost-ps "policy-server did not become ready"
}

# register_cost_webhook CONFIG PORT: the MutatingWebhookConfiguration yunikorn-user-info-cost-CONFIG (metadata.yml's rules,
# the examples' matchConditions) for the namespaces under CONFIG
register_cost_webhook() {
  "$WEBHOOKCONFIG" -name "yunikorn-user-info-cost-$1" -metadata "$METADATA" -url "https://127.0.0.1:$2/validate/yunikorn-user-info" \
    -ca-file "$PKI/ca.crt" -namespace-label "$(ns_label "$1")" -match-conditions "$MATCH_CONDITIONS" > "$OUT/webhook-$1.json"
  kc admin apply -f "$OUT/webhook-$1.json" > /dev/null
}

# template_value NS: the annotation of the template of a Deployment alice would create in NS now (server-side dry run)
template_value() {
  kc alice -n "$1" create deployment probe --image="$IMAGE" --dry-run=server -o json 2> /dev/null |
    jq -r --arg k "$ANNOTATION" '.spec.template.metadata.annotations[$k] // empty'
}

# native_live NS: the native policies are in force in NS: alice's Deployment gets her stamp on its template (not the
# pods' policy: a copy of the policies without it must reach the verdicts, and fail them)
native_live() { [ "$(template_value "$1")" = "$ALICE_VALUE" ]; }

setup_file() {
  load lib
  # shellcheck source=../native/compare.bash
  source "$NATIVE/compare.bash"
  rm -rf "$OUT"
  mkdir -p "$OUT"
  if ! kc admin get --raw /apis/admissionregistration.k8s.io/v1 | jq -e '.resources | any(.name == "mutatingadmissionpolicies")' > /dev/null; then
    # every test skips (setup); bats cannot skip from setup_file
    echo "kube-apiserver v$KUBE_VERSION serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (1.36 and later do)" > "$OUT/unsupported"
    return 0
  fi
  touch "$OUT/set-up" # teardown_file undoes only what a setup that ran did
  local configs=(none native kwhost) c r settings
  [ -z "${POLICY_SERVER:-}" ] || configs+=(policy-server)
  echo "${configs[*]}" > "$OUT/configs"
  if [ -n "${LOADGEN:-}" ]; then
    echo "$LOADGEN" > "$OUT/loadgen"
  else
    (cd "$BATS_TEST_DIRNAME/../.." && go build -o "$OUT/loadgen-bin" ./test/cluster/loadgen)
    echo "$OUT/loadgen-bin" > "$OUT/loadgen"
  fi
  settings=$(webhook_settings)
  start_cost_kwhost "$settings"
  register_cost_webhook kwhost "$COST_KWHOST_PORT"
  if [ -n "${POLICY_SERVER:-}" ]; then
    start_cost_ps "$settings"
    register_cost_webhook policy-server "$COST_PS_PORT"
  fi
  kc admin apply -f "$POLICIES" > /dev/null
  # A namespace per configuration for the bare pods, and one per configuration and round for the Deployments (so that
  # counting a Deployment's pods is counting its namespace's).
  for c in "${configs[@]}"; do
    cost_namespace "cost-$c" "$c"
    if [ "$COST_DEPLOY" -gt 0 ]; then
      for r in $(seq 1 "$COST_ROUNDS"); do cost_namespace "cost-$c-d$r" "$c"; done
    fi
  done
  wait_until 60 "the native policies to act in cost-native" native_live cost-native
  sleep 2 # the other bindings load with the same informers; give them a moment more
  for c in "${configs[@]:2}"; do wait_webhook "cost-$c"; done
  if [ "$COST_DEPLOY" -gt 0 ]; then KCM_EXTRA_ARGS="${KCM_EXTRA_ARGS:-} $COST_KCM_ARGS" start_kcm "$(kcm_mode)"; fi
}

teardown_file() {
  load lib
  [ -f "$OUT/set-up" ] || return 0
  local c r configs namespaces=()
  read -ra configs < "$OUT/configs"
  for c in "${configs[@]}"; do
    namespaces+=("cost-$c")
    if [ "$COST_DEPLOY" -gt 0 ]; then
      for r in $(seq 1 "$COST_ROUNDS"); do namespaces+=("cost-$c-d$r"); done
    fi
  done
  kc admin delete -f "$POLICIES" --ignore-not-found > /dev/null 2>&1 || true
  kc admin delete mutatingwebhookconfiguration yunikorn-user-info-cost-kwhost yunikorn-user-info-cost-policy-server --ignore-not-found > /dev/null 2>&1 || true
  kc admin delete namespace "${namespaces[@]}" --wait=false > /dev/null 2>&1 || true
  stop cost-kwhost
  stop cost-ps
  # the controller manager as it was (its client rate limit)
  if [ "$COST_DEPLOY" -gt 0 ]; then start_kcm "$(kcm_mode)"; fi
}

# metric FILE NAME FILTER...: the bucket lines of histogram NAME in FILE whose labels contain every FILTER (fixed strings)
metric() {
  local lines f
  lines=$(grep "^$2_bucket{" "$1") || true
  shift 2
  for f in "$@"; do lines=$(grep -F "$f" <<< "$lines") || true; done
  [ -z "$lines" ] || echo "$lines"
}

# histograms FILE: the histograms compared, each into FILE.KEY, all for CREATE and not rejected (webhook-kwhost and
# webhook-policy-server: the API server's call of that configuration's webhook)
histograms() {
  local f=$1 c k=('operation="CREATE"' 'rejected="false"')
  metric "$f" apiserver_admission_step_admission_duration_seconds "${k[@]}" 'type="admit"' > "$f.step-admit"
  metric "$f" apiserver_admission_step_admission_duration_seconds "${k[@]}" 'type="validate"' > "$f.step-validate"
  metric "$f" apiserver_admission_controller_admission_duration_seconds "${k[@]}" 'name="MutatingAdmissionPolicy"' > "$f.map"
  metric "$f" apiserver_admission_controller_admission_duration_seconds "${k[@]}" 'name="ValidatingAdmissionPolicy"' > "$f.vap"
  metric "$f" apiserver_admission_controller_admission_duration_seconds "${k[@]}" 'name="MutatingAdmissionWebhook"' > "$f.mwh"
  for c in kwhost policy-server; do
    metric "$f" apiserver_admission_webhook_admission_duration_seconds "${k[@]}" "name=\"yunikorn-user-info-cost-$c.kwhost.test\"" > "$f.webhook-$c"
  done
}

scrape() {
  curl_admin "https://127.0.0.1:$API_PORT/metrics" > "$1"
  histograms "$1"
}

# record LINE CONFIG: LINE (a step's JSON) with the histograms between the two scrapes, into cost.jsonl
record() {
  local line=$1 b=$OUT/before a=$OUT/after k f h
  for k in step-admit step-validate map vap mwh webhook; do
    f=$k
    [ "$k" != webhook ] || f=webhook-$2
    h=null
    if [ -s "$a.$f" ]; then h=$("$LOADGEN" histogram -before "$b.$f" -after "$a.$f"); fi
    line=$(jq -c --arg k "$k" --argjson h "$h" '.[$k] = $h' <<< "$line")
  done
  echo "$line" | tee -a "$OUT/cost.jsonl"
}

# pods_round CONFIG ROUND: COST_PODS bare pods into cost-CONFIG
pods_round() {
  local out
  scrape "$OUT/before"
  out=$("$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users alice,bob -namespace "cost-$1" \
    -n "$COST_PODS" -c "$COST_CONC" -prefix "r$2")
  scrape "$OUT/after"
  record "$(jq -c --arg c "$1" --argjson r "$2" '{config: $c, workload: "pods", round: $r, created, failed, seconds, perSecond, errors}' <<< "$out")" "$1"
}

# pod_count_now NS: how many pods NS holds (a list of one: the API server counts the rest); 0 when it cannot tell
pod_count_now() {
  local n
  n=$(curl_admin "https://127.0.0.1:$API_PORT/api/v1/namespaces/$1/pods?limit=1" | jq '(.metadata.remainingItemCount // 0) + (.items | length)') || n=0
  echo "${n:-0}"
}

# deployment_round CONFIG ROUND: alice's Deployment of COST_DEPLOY replicas into cost-CONFIG-dROUND, timed from its
# creation until the namespace holds COST_DEPLOY pods (at most COST_DEPLOY_TIMEOUT seconds)
deployment_round() {
  local ns=cost-$1-d$2 t0 t1 n=0 ms body
  body=$(jq -nc --arg img "$IMAGE" --argjson n "$COST_DEPLOY" '{apiVersion: "apps/v1", kind: "Deployment", metadata: {name: "web"},
    spec: {replicas: $n, selector: {matchLabels: {app: "web"}},
           template: {metadata: {labels: {app: "web", "e2e-owner": "alice"}}, spec: {containers: [{name: "c", image: $img}]}}}}')
  scrape "$OUT/before"
  t0=$(date +%s%N)
  curl -sf --max-time 20 --cacert "$PKI/ca.crt" --cert "$PKI/alice.crt" --key "$PKI/alice.key" -H 'Content-Type: application/json' \
    -X POST --data-binary "$body" "https://127.0.0.1:$API_PORT/apis/apps/v1/namespaces/$ns/deployments" > /dev/null
  while n=$(pod_count_now "$ns") && [ "$n" -lt "$COST_DEPLOY" ] && [ $(($(date +%s%N) - t0)) -lt $((COST_DEPLOY_TIMEOUT * 1000000000)) ]; do
    sleep 0.2
  done
  t1=$(date +%s%N)
  scrape "$OUT/after"
  ms=$(((t1 - t0) / 1000000))
  record "$(jq -nc --arg c "$1" --argjson r "$2" --argjson n "$n" --argjson want "$COST_DEPLOY" --argjson ms "$ms" \
    '{config: $c, workload: "deployment", round: $r, created: $n, failed: ($want - $n), seconds: ($ms / 1000),
      perSecond: ($n * 100000 / $ms | round / 100)}')" "$1"
}

# table WORKLOAD: the medians over the rounds of each figure, per configuration, as a Markdown table
table() {
  jq -rs --arg w "$1" '
    def med: sort | .[(length / 2 | floor)];
    def f(k; q): [.[] | .[k] | select(. != null) | .[q]] | if length == 0 then "-" else (med | tostring) end;
    def names: {none: "no policy", native: "the native policies", kwhost: "the policy, kwhost serve", "policy-server": "the policy, policy-server"};
    map(select(.workload == $w)) | group_by(.config) |
    map({config: .[0].config, perSecond: (map(.perSecond) | med), rounds: (map(.perSecond) | map(tostring) | join(", ")),
      a: "\(f("step-admit"; "p50ms")) / \(f("step-admit"; "p99ms"))", v: "\(f("step-validate"; "p50ms")) / \(f("step-validate"; "p99ms"))",
      m: "\(f("map"; "p50ms")) / \(f("map"; "p99ms"))", p: "\(f("vap"; "p50ms")) / \(f("vap"; "p99ms"))",
      h: "\(f("mwh"; "p50ms")) / \(f("mwh"; "p99ms"))", c: "\(f("webhook"; "p50ms")) / \(f("webhook"; "p99ms"))"}) |
    sort_by({none: 0, native: 1, kwhost: 2, "policy-server": 3}[.config]) |
    ["| pods admitted by | pods/s | mutating step p50 / p99 ms | validating step p50 / p99 ms | MutatingAdmissionPolicy p50 / p99 ms | ValidatingAdmissionPolicy p50 / p99 ms | MutatingAdmissionWebhook p50 / p99 ms | the webhook call p50 / p99 ms | pods/s by round |",
     "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"] +
    map("| \(names[.config]) | \(.perSecond) | \(.a) | \(.v) | \(.m) | \(.p) | \(.h) | \(.c) | \(.rounds) |") | .[]' "$OUT/cost.jsonl"
}

@test "cost: bare pods and a Deployment's pods with no policy, the native policies and the policy's webhook (alternating rounds)" {
  : > "$OUT/cost.jsonl"
  local n=${#CONFIGS[@]} r i c
  # warm-up: connections, the webhooks' modules, the policies' compiled programs
  for c in "${CONFIGS[@]}"; do
    "$LOADGEN" pods -api "https://127.0.0.1:$API_PORT" -pki "$PKI" -users alice,bob -namespace "cost-$c" -n 40 -c "$COST_CONC" -prefix warm > /dev/null
  done
  for r in $(seq 1 "$COST_ROUNDS"); do
    for i in $(seq 0 $((n - 1))); do pods_round "${CONFIGS[$(((i + r - 1) % n))]}" "$r"; done
    if [ "$COST_DEPLOY" -gt 0 ]; then
      for i in $(seq 0 $((n - 1))); do deployment_round "${CONFIGS[$(((i + r - 1) % n))]}" "$r"; done
    fi
  done
  {
    echo "$COST_PODS bare pods a round, $COST_ROUNDS rounds (medians):"
    table pods
    if [ "$COST_DEPLOY" -gt 0 ]; then
      echo
      echo "a Deployment of $COST_DEPLOY replicas a round, $COST_ROUNDS rounds (medians):"
      table deployment
    fi
  } | tee "$OUT/cost.md"
  # Every pod was admitted: every step created all it asked for.
  jq -e -s --argjson p "$COST_PODS" --argjson d "$COST_DEPLOY" \
    'length > 0 and all(.failed == 0 and .created == (if .workload == "pods" then $p else $d end))' "$OUT/cost.jsonl" > /dev/null
}

# stamps NS WANT COUNT: every one of NS's COUNT pods carries what WANT says: "none", no annotation; "owner", the stamp
# of the user in its e2e-owner label (the creator of a bare pod, the Deployment's owner for its pods)
stamps() {
  local report
  report=$(kc admin -n "$1" get pods -o json --chunk-size=500 | jq -c --arg want "$2" --argjson stamps "$STAMPS" --arg k "$ANNOTATION" '
    [.items[] | {pod: .metadata.name, owner: (.metadata.labels["e2e-owner"] // null), value: ((.metadata.annotations // {})[$k] // null)} |
      .ok = (if $want == "none" then .value == null else .owner != null and .value == $stamps[.owner] end)] |
    {pods: length, ok: map(select(.ok)) | length, offenders: map(select(.ok | not)) | .[:3]}')
  echo "$1 ($2): $report"
  jq -e --argjson n "$3" '.pods == $n and .ok == $n' <<< "$report" > /dev/null
}

@test "cost: every pod carries what its configuration promises (no stamp without a policy, its creator's with one)" {
  local c r want fails=0
  for c in "${CONFIGS[@]}"; do
    want=owner
    [ "$c" != none ] || want=none
    stamps "cost-$c" "$want" $((40 + COST_ROUNDS * COST_PODS)) || fails=$((fails + 1))
    if [ "$COST_DEPLOY" -gt 0 ]; then
      for r in $(seq 1 "$COST_ROUNDS"); do stamps "cost-$c-d$r" "$want" "$COST_DEPLOY" || fails=$((fails + 1)); done
    fi
  done
  [ "$fails" -eq 0 ]
}
