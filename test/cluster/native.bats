#!/usr/bin/env bats
# native.bats: the policy against the strongest native version of it we could write (test/native: Mutating- and
# ValidatingAdmissionPolicies, CEL in the API server, no webhook). Every case of test/native/cases.json (the e2e
# corpus the API server can carry, and the rules' edges) is sent twice through the same API server: into a
# namespace the policy's webhook covers and into one the native policies cover; what each stored is compared
# (test/native/table.sh) and the table by rule must be the one docs/native-comparison.md carries.
# run.sh runs it after cluster.bats; state in $RUN/native.
bats_require_minimum_version 1.5.0

NATIVE=$BATS_TEST_DIRNAME/../native
# NATIVE_POLICIES: another file in place of test/native/policies.yaml (a copy broken on purpose must fail the run).
POLICIES=${NATIVE_POLICIES:-$NATIVE/policies.yaml}
W_NS=native-cmp-webhook
N_NS=native-cmp-native
NATIVE_LABEL=yunikorn-user-info-native=enabled

setup() {
  load lib
  # shellcheck source=../native/compare.bash
  source "$NATIVE/compare.bash"
  if [ -f "$RUN/native/unsupported" ]; then skip "$(cat "$RUN/native/unsupported")"; fi
}

# cmp_namespace NAME LABEL: a namespace in which every authenticated user may do what the cases do
cmp_namespace() {
  kc admin delete namespace "$1" --ignore-not-found --wait=false > /dev/null
  wait_until 60 "namespace $1 to be gone" bash -c "! kubectl --kubeconfig='$RUN/admin.kubeconfig' get namespace '$1'"
  kc admin create namespace "$1" > /dev/null
  kc admin label namespace "$1" "$2" > /dev/null
  kc admin -n "$1" create rolebinding native-cmp --clusterrole=native-cmp --group=system:authenticated > /dev/null
  wait_until 60 "the default service account in $1" sa_exists "$1"
}

# native_live: the native policies stamp a dry-run pod and refuse an invalid value from a trusted controller
native_live() {
  [ "$(probe_value alice "$N_NS")" = "$ALICE_VALUE" ] &&
    ! kc kcm -n "$N_NS" run e2e-probe --image="$IMAGE" --restart=Never --dry-run=server \
      --annotations="$ANNOTATION={\"user\":\"\"}" > /dev/null 2>&1
}

# apply_native FILE: the native policies of FILE, live in $N_NS
apply_native() {
  kc admin apply -f "$1" > /dev/null
  wait_until 60 "the native policies to act in $N_NS" native_live
  # the other bindings load with the same informers; give them a moment more
  sleep 2
}

# run_all MODE NS [ID...]: the cases (all of them by default) into NS, one JSON line each in $RUN/native/MODE.jsonl
run_all() {
  local mode=$1 ns=$2 id
  shift 2
  local ids=("$@")
  [ ${#ids[@]} -gt 0 ] || mapfile -t ids < <(jq -r '.[].id' "$NATIVE/cases.json")
  : > "$RUN/native/$mode.jsonl"
  for id in "${ids[@]}"; do
    run_case "$ns" "$id" | jq -c --arg m "$mode" '.mode = $m' >> "$RUN/native/$mode.jsonl"
  done
}

setup_file() {
  load lib
  # shellcheck source=../native/compare.bash
  source "$NATIVE/compare.bash"
  # MutatingAdmissionPolicy is served as admissionregistration.k8s.io/v1 from Kubernetes 1.36 on.
  mkdir -p "$RUN/native"
  if ! kc admin get --raw /apis/admissionregistration.k8s.io/v1 | jq -e '.resources | any(.name == "mutatingadmissionpolicies")' > /dev/null; then
    # every test skips (setup); bats cannot skip from setup_file
    echo "kube-apiserver v$KUBE_VERSION serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (1.36 and later do)" > "$RUN/native/unsupported"
    return 0
  fi
  touch "$RUN/native/set-up" # teardown_file undoes only what a setup that ran did
  cluster_role native-cmp '- apiGroups: [""]
  resources: [pods, pods/status, pods/binding, bindings, replicationcontrollers]
  verbs: ["*"]
- apiGroups: [apps]
  resources: [deployments, deployments/scale, replicasets, statefulsets, daemonsets]
  verbs: ["*"]
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: ["*"]
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications, scheduledsparkapplications]
  verbs: ["*"]
- apiGroups: [ray.io]
  resources: [rayclusters, rayjobs, rayservices]
  verbs: ["*"]
- apiGroups: [flink.apache.org]
  resources: [flinkdeployments]
  verbs: ["*"]' '- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:authenticated}'
  # The operators' CRDs (as cluster.bats's custom-resource scenario applies them, and a stand-in for Flink's) and
  # the webhook's rules for them.
  local crds=() c
  IFS=, read -ra crds <<< "$CRDS,$NATIVE/flink-crd.yaml"
  for c in "${crds[@]}"; do kc admin apply --server-side --force-conflicts -f "$c" > /dev/null; done
  kc admin wait --for=condition=Established --timeout=60s crd/sparkapplications.sparkoperator.k8s.io crd/rayclusters.ray.io \
    crd/rayjobs.ray.io crd/flinkdeployments.flink.apache.org > /dev/null
  start_kwhost "$(webhook_settings)"
  OPERATOR_EXAMPLES=$OPERATOR_EXAMPLES,$BATS_TEST_DIRNAME/../../examples/flink-operator.yaml register_webhook custom-resources
  cmp_namespace "$W_NS" "$NS_LABEL"
  cmp_namespace "$N_NS" "$NATIVE_LABEL"
  wait_webhook "$W_NS"
  apply_native "$POLICIES"
}

teardown_file() {
  load lib
  [ -f "$RUN/native/set-up" ] || return 0
  kc admin delete -f "$POLICIES" --ignore-not-found > /dev/null 2>&1 || true
  kc admin delete namespace "$W_NS" "$N_NS" --wait=false > /dev/null 2>&1 || true
  start_kwhost '{}'
  register_webhook
}

@test "native: every case through the webhook and through the native policies; the table by rule" {
  run_all webhook "$W_NS"
  run_all native "$N_NS"
  "$NATIVE/table.sh" markdown "$RUN/native/webhook.jsonl" "$RUN/native/native.jsonl" | tee "$RUN/native/table.md"
  # every case ran on both sides, and none failed in its preparation
  [ "$(wc -l < "$RUN/native/webhook.jsonl")" -eq "$(jq length "$NATIVE/cases.json")" ]
  [ "$(wc -l < "$RUN/native/native.jsonl")" -eq "$(jq length "$NATIVE/cases.json")" ]
  jq -e -s 'map(select(.setup != "")) | length == 0' "$RUN/native/webhook.jsonl" "$RUN/native/native.jsonl"
}

@test "native: the webhook's side of the comparison is the policy's documented behaviour" {
  # Spot checks that the comparison measures the policy, not a broken set-up: alice's stamp, bob's replacement
  # with the warning, rule 5 and rule 10 refusals.
  v() { jq -r --arg id "$1" 'select(.id == $id)' "$RUN/native/webhook.jsonl"; }
  v pod-create-alice | jq -e --arg a "$ALICE_VALUE" '.accepted and (.view | map(select(.key == "yunikorn.apache.org/user.info") | {path, value})) ==
    [{path: "metadata.annotations.yunikorn.apache.org/user.info", value: $a}]'
  v pod-create-bob-forged | jq -e --arg b "$BOB_VALUE" '.accepted and (.view[0].value == $b) and (.warnings | length == 1)'
  v pod-update-annotation-change | jq -e '(.accepted | not) and (.message | test("cannot be changed once the pod exists"))'
  v binding-create-forged | jq -e '(.accepted | not) and (.message | startswith("a Binding cannot set"))'
}

@test "native: docs/native-comparison.md carries this run's tables" {
  run "$NATIVE/table.sh" check "$RUN/native/webhook.jsonl" "$RUN/native/native.jsonl" "$BATS_TEST_DIRNAME/../../docs/native-comparison.md"
  echo "$output"
  [ "$status" -eq 0 ]
}

# The comparison must be able to fail: with the native Binding rule (rule 10) and the pod-update rule (rule 5)
# removed, their rows must turn to "admits a forged identity".
@test "native: a native policy broken on purpose shows in the table (rules 5 and 10 removed)" {
  kc admin delete validatingadmissionpolicybinding native-user-info-binding native-user-info-pod-update > /dev/null
  wait_until 60 "the Binding rule to be gone" bash -c "kubectl --kubeconfig='$RUN/admin.kubeconfig' -n $N_NS get pods > /dev/null && ! kubectl --kubeconfig='$RUN/admin.kubeconfig' get validatingadmissionpolicybinding native-user-info-binding > /dev/null 2>&1"
  sleep 3
  local ids=(binding-create-forged bindings-create-forged pod-update-annotation-change pod-status-bob-changes)
  run_all broken "$N_NS" "${ids[@]}"
  jq -c 'select(.mode == "webhook")' "$RUN/native/webhook.jsonl" > "$RUN/native/webhook-subset.jsonl"
  run "$NATIVE/table.sh" markdown "$RUN/native/webhook-subset.jsonl" <(jq -c '.mode = "native"' "$RUN/native/broken.jsonl")
  echo "$output"
  kc admin apply -f "$POLICIES" > /dev/null
  [[ "$output" == *"| 5: the annotation of an existing pod never changes | admits a forged identity |"* ]]
  [[ "$output" == *"| 10: a Binding cannot carry the annotation | admits a forged identity |"* ]]
}
