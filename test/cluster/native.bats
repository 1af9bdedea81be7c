#!/usr/bin/env bats
# native.bats: the policy against the strongest native version of it we could write (test/native: Mutating- and
# ValidatingAdmissionPolicies, CEL in the API server, no webhook). Every case of test/native/cases.json (the e2e
# corpus and of the demo the API server can carry, and the rules' edges) is sent twice through the same API server:
# into a namespace the policy's webhook covers and into one the native policies cover; what each stored is compared
# (test/native/table.sh) and the table by rule must be the one docs/native-comparison.md carries. A case that names
# other settings (the demo's: reject, kubeflow-training, argo-workflows, kuberay; and external-submitters, bypassAuth on)
# goes into namespaces of those settings: a webhook of their own and the native policies bound to them. run.sh runs it
# after cluster.bats; state in $RUN/native.
bats_require_minimum_version 1.5.0

NATIVE=$BATS_TEST_DIRNAME/../native
# NATIVE_POLICIES: another file in place of test/native/policies.yaml (a copy broken on purpose must fail the run).
POLICIES=${NATIVE_POLICIES:-$NATIVE/policies.yaml}
W_NS=native-cmp-webhook
N_NS=native-cmp-native
NATIVE_LABEL=yunikorn-user-info-native=enabled
# The other settings cases name (cases.json "settings", as testdata/tour.json names them). Each has a webhook of its
# own, `kwhost serve` on WEBHOOK_PORT+6 to +10 (native-cost.bats holds +4 and +5) registered for the namespaces
# labelled SET_LABEL=SET, and native policies bound to the namespaces labelled yunikorn-user-info-native=SET.
SETS=(reject kubeflow-training argo-workflows kuberay external-submitters)
SET_LABEL=yunikorn-user-info-native-cmp
# Those webhooks live at most this long (timeout(1)), should the run be killed before its teardown: run.sh gives the
# whole bats run 1,200 s.
SET_LIFETIME=1300
ROOT=$BATS_TEST_DIRNAME/../..

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

# set_ns SIDE SET: the namespace of a side (webhook or native) for a case's settings ("" for the comparison's own)
set_ns() {
  if [ -z "$2" ]; then
    if [ "$1" = webhook ]; then echo "$W_NS"; else echo "$N_NS"; fi
  else
    echo "native-cmp-$1-$2"
  fi
}

# dry_run USER NS JSON [FLAG...]: the object USER would create in NS now (server-side dry run), or nothing when refused;
# FLAGs go to kubectl (--as=NAME: admin impersonating NAME)
dry_run() { kc "$1" "${@:4}" -n "$2" create --dry-run=server -f - -o json <<< "$3" 2> /dev/null; }

# set_live SET: the native policies of SET act in its namespace: they stamp alice's object and refuse bob's forgery
set_live() {
  local ns pod
  ns=$(set_ns native "$1")
  case $1 in
    reject)
      [ "$(probe_value alice "$ns")" = "$ALICE_VALUE" ] &&
        [ -z "$(dry_run bob "$ns" "$(jq -nc --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" --arg i "$IMAGE" '{apiVersion: "v1", kind: "Pod",
          metadata: {name: "probe", annotations: {($k): $v}}, spec: {containers: [{name: "c", image: $i}]}}')")" ]
      ;;
    kubeflow-training)
      dry_run alice "$ns" '{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "probe"}, "spec": {"pytorchReplicaSpecs": {"Master": {"template": {}}}}}' |
        jq -e --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '.spec.pytorchReplicaSpecs.Master.template.metadata.annotations[$k] == $v' > /dev/null &&
        [ -z "$(dry_run bob "$ns" '{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "probe"}, "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"metadata": {"annotations": {"{{k}}": "x"}}}}}}}')" ]
      ;;
    argo-workflows)
      dry_run alice "$ns" '{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "probe"}, "spec": {}}' |
        jq -e --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '.spec.podMetadata.annotations[$k] == $v' > /dev/null &&
        [ -z "$(dry_run bob "$ns" '{"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTemplate", "metadata": {"name": "probe"}, "spec": {"templates": [{"name": "t", "metadata": {"annotations": {"a": "yunikorn.apache.org/user.info"}}}]}}')" ]
      ;;
    external-submitters)
      # and bob's forged value is replaced where the allow-listed service account's is kept, and that account's legacy
      # label stands (rule 2)
      pod=$(jq -nc --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" --arg i "$IMAGE" '{apiVersion: "v1", kind: "Pod",
        metadata: {name: "probe", annotations: {($k): $v}}, spec: {containers: [{name: "c", image: $i}]}}')
      [ "$(probe_value alice "$ns")" = "$ALICE_VALUE" ] &&
        dry_run bob "$ns" "$pod" | jq -e --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '.metadata.annotations[$k] == $v' > /dev/null &&
        dry_run admin "$ns" "$pod" --as=system:serviceaccount:airflow:airflow-scheduler |
        jq -e --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '.metadata.annotations[$k] == $v' > /dev/null &&
        dry_run admin "$ns" "$(jq -c --arg k "$ANNOTATION" 'del(.metadata.annotations[$k]) | .metadata.labels = {"yunikorn.apache.org/username": "alice"}' <<< "$pod")" \
          --as=system:serviceaccount:airflow:airflow-scheduler | jq -e --arg k "$ANNOTATION" '.metadata.annotations[$k] == null' > /dev/null
      ;;
    kuberay)
      dry_run alice "$ns" '{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "probe"}, "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "registry.invalid/ray:1"}]}}}}}' |
        jq -e --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '.spec.headGroupSpec.template.metadata.annotations[$k] == $v' > /dev/null
      ;;
  esac
}

# apply_native FILE: the native policies of FILE, live in $N_NS and in every SET's namespace
apply_native() {
  local set
  kc admin apply -f "$1" > /dev/null
  wait_until 60 "the native policies to act in $N_NS" native_live
  for set in "${SETS[@]}"; do wait_until 60 "the native policies of $set to act" set_live "$set"; done
  # the other bindings load with the same informers; give them a moment more
  sleep 2
}

# start_set SET INDEX: SET's webhook: kwhost serve with its settings (the comparison's with onUntrustedAnnotation:
# reject, or the example's of testdata/settings or test/native) and the rules of the examples it stands for, for SET's
# namespaces
start_set() {
  local set=$1 port=$((WEBHOOK_PORT + 6 + $2)) settings examples
  case $set in
    reject)
      settings=$(webhook_settings | jq -c '.onUntrustedAnnotation = "reject"')
      examples=$OPERATOR_EXAMPLES,$ROOT/examples/flink-operator.yaml
      ;;
    external-submitters)
      # examples/external-submitters.yaml's settings (test/shipcheck holds the file to them); its rules are
      # metadata.yml's, so no rules to add
      settings=$(jq -c . "$NATIVE/external-submitters.json")
      examples=
      ;;
    *)
      settings=$(jq -c . "$ROOT/testdata/settings/$set.json")
      examples=$ROOT/examples/$set.yaml
      ;;
  esac
  stop "native-$set"
  start "native-$set" timeout "$SET_LIFETIME" "$KWHOST" serve --policy "$POLICY" --allow-unannotated --settings-json "$settings" \
    --cert-file "$PKI/webhook.crt" --key-file "$PKI/webhook.key" --listen "127.0.0.1:$port"
  wait_until 30 "kwhost serve on $port" curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$port/healthz" ||
    die_with_log "native-$set" "kwhost serve did not start"
  "$WEBHOOKCONFIG" -name "yunikorn-user-info-native-$set" -metadata "$METADATA" -url "https://127.0.0.1:$port/validate/yunikorn-user-info" \
    -ca-file "$PKI/ca.crt" -namespace-label "$SET_LABEL=$set" -match-conditions "$MATCH_CONDITIONS" -extra-rules "$examples" > "$RUN/native/webhook-$set.json"
  kc admin apply -f "$RUN/native/webhook-$set.json" > /dev/null
}

# run_all MODE SIDE [ID...]: the cases (all of them by default) into SIDE's namespace for each case's settings (SIDE
# webhook or native), one JSON line each in $RUN/native/MODE.jsonl
run_all() {
  local mode=$1 side=$2 id
  shift 2
  local ids=("$@")
  [ ${#ids[@]} -gt 0 ] || mapfile -t ids < <(jq -r '.[].id' "$NATIVE/cases.json")
  : > "$RUN/native/$mode.jsonl"
  for id in "${ids[@]}"; do
    run_case "$(set_ns "$side" "$(jq -r --arg id "$id" '.[] | select(.id == $id) | .settings // ""' "$NATIVE/cases.json")")" "$id" |
      jq -c --arg m "$mode" '.mode = $m' >> "$RUN/native/$mode.jsonl"
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
  verbs: ["*"]
- apiGroups: [kubeflow.org]
  resources: [pytorchjobs, tfjobs, mpijobs]
  verbs: ["*"]
- apiGroups: [argoproj.io]
  resources: [workflows, cronworkflows, workflowtemplates]
  verbs: ["*"]' '- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:authenticated}'
  # The operators' CRDs (as cluster.bats's custom-resource scenario applies them, and stand-ins for Flink's,
  # Kubeflow's and Argo's) and the webhook's rules for them.
  local crds=() c i
  IFS=, read -ra crds <<< "$CRDS,$NATIVE/flink-crd.yaml,$NATIVE/kubeflow-argo-crds.yaml"
  for c in "${crds[@]}"; do kc admin apply --server-side --force-conflicts -f "$c" > /dev/null; done
  kc admin wait --for=condition=Established --timeout=60s crd/sparkapplications.sparkoperator.k8s.io crd/rayclusters.ray.io \
    crd/rayjobs.ray.io crd/flinkdeployments.flink.apache.org crd/pytorchjobs.kubeflow.org crd/tfjobs.kubeflow.org \
    crd/mpijobs.kubeflow.org crd/workflows.argoproj.io crd/cronworkflows.argoproj.io crd/workflowtemplates.argoproj.io > /dev/null
  start_kwhost "$(webhook_settings)"
  OPERATOR_EXAMPLES=$OPERATOR_EXAMPLES,$ROOT/examples/flink-operator.yaml register_webhook custom-resources
  cmp_namespace "$W_NS" "$NS_LABEL"
  cmp_namespace "$N_NS" "$NATIVE_LABEL"
  for i in "${!SETS[@]}"; do
    start_set "${SETS[$i]}" "$i"
    cmp_namespace "$(set_ns webhook "${SETS[$i]}")" "$SET_LABEL=${SETS[$i]}"
    cmp_namespace "$(set_ns native "${SETS[$i]}")" "yunikorn-user-info-native=${SETS[$i]}"
  done
  wait_webhook "$W_NS"
  for c in "${SETS[@]}"; do wait_webhook "$(set_ns webhook "$c")"; done
  apply_native "$POLICIES"
}

teardown_file() {
  load lib
  [ -f "$RUN/native/set-up" ] || return 0
  local set
  kc admin delete -f "$POLICIES" --ignore-not-found > /dev/null 2>&1 || true
  kc admin delete namespace "$W_NS" "$N_NS" --wait=false > /dev/null 2>&1 || true
  for set in "${SETS[@]}"; do
    kc admin delete mutatingwebhookconfiguration "yunikorn-user-info-native-$set" --ignore-not-found > /dev/null 2>&1 || true
    kc admin delete namespace "$(set_ns webhook "$set")" "$(set_ns native "$set")" --wait=false > /dev/null 2>&1 || true
    stop "native-$set"
  done
  start_kwhost '{}'
  register_webhook
}

@test "native: every case through the webhook and through the native policies; the table by rule" {
  run_all webhook webhook
  run_all native native
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
  # and with the other settings: reject refuses bob's forgery; Kubeflow's and Argo's maps are stamped, a templated key
  # and a WorkflowTemplate naming the annotation refused
  v pod-create-bob-forged-reject | jq -e '(.accepted | not) and (.message | test("user bob with groups \\[qa,system:authenticated\\] is not allowed to set"))'
  v tfjob-create-bob-forged | jq -e --arg b "$BOB_VALUE" '.accepted and (.view | length == 2) and all(.view[]; .value == $b) and (.warnings | length == 1)'
  v workflow-create-alice | jq -e --arg a "$ALICE_VALUE" '.accepted and any(.view[]; .path == "spec.podMetadata.annotations.yunikorn.apache.org/user.info" and .value == $a)'
  v workflow-create-bob-templated-key | jq -e '(.accepted | not) and (.message | test("is not a valid annotation key"))'
  v workflowtemplate-create-bob-forged | jq -e '(.accepted | not) and (.message | test("sets the yunikorn.apache.org/user.info annotation"))'
  # and with bypassAuth: the allow-listed account's value kept without a warning, its legacy label standing with one,
  # bob's forgery replaced
  v pod-create-external-user-keeps | jq -e --arg a "$ALICE_VALUE" '.accepted and any(.view[]; .key == "yunikorn.apache.org/user.info" and .value == $a) and (.warnings | length == 0)'
  v pod-create-legacy-label-external | jq -e '.accepted and (.view | map(.key) == ["yunikorn.apache.org/username"]) and (.warnings[0] | test("label is deprecated"))'
  v pod-create-bob-forged-external | jq -e --arg b "$BOB_VALUE" '.accepted and any(.view[]; .key == "yunikorn.apache.org/user.info" and .value == $b) and (.warnings | length == 1)'
}

@test "native: docs/native-comparison.md carries this run's tables" {
  run "$NATIVE/table.sh" check "$RUN/native/webhook.jsonl" "$RUN/native/native.jsonl" "$BATS_TEST_DIRNAME/../../docs/native-comparison.md"
  echo "$output"
  [ "$status" -eq 0 ]
}

# broken_table ID...: the cases again through the native policies as they are now (some removed on purpose), and
# the table by rule of that run against the webhook's in $output; the policies are applied again afterwards
broken_table() {
  run_all broken native "$@"
  jq -c 'select(.mode == "webhook")' "$RUN/native/webhook.jsonl" > "$RUN/native/webhook-subset.jsonl"
  run "$NATIVE/table.sh" markdown "$RUN/native/webhook-subset.jsonl" <(jq -c '.mode = "native"' "$RUN/native/broken.jsonl")
  echo "$output"
  kc admin apply -f "$POLICIES" > /dev/null
}

# The comparison must be able to fail: with the native Binding rule (rule 10) and the pod-update rule (rule 5)
# removed, their rows must turn to "admits a forged identity".
@test "native: a native policy broken on purpose shows in the table (rules 5 and 10 removed)" {
  kc admin delete validatingadmissionpolicybinding native-user-info-binding native-user-info-pod-update > /dev/null
  wait_until 60 "the Binding rule to be gone" bash -c "kubectl --kubeconfig='$RUN/admin.kubeconfig' -n $N_NS get pods > /dev/null && ! kubectl --kubeconfig='$RUN/admin.kubeconfig' get validatingadmissionpolicybinding native-user-info-binding > /dev/null 2>&1"
  sleep 3
  local ids=(binding-create-forged bindings-create-forged pod-update-annotation-change pod-status-bob-changes)
  broken_table "${ids[@]}"
  [[ "$output" == *"| 5: the annotation of an existing pod never changes | admits a forged identity |"* ]]
  [[ "$output" == *"| 10: a Binding cannot carry the annotation | admits a forged identity |"* ]]
}

# unstamped USER NS: a pod USER would create in NS now carries no user.info
unstamped() { [ -z "$(probe_value "$1" "$2")" ]; }

# The same for the other settings' policies: with the reject mode's validating policy, Argo's guard and the external
# submitters' Pod policy removed, bob's forged pod in the reject namespace, his templated key and both WorkflowTemplates
# must get through (rules 1, 11, 13), and with bypassAuth on his forged pod and his legacy label (rules 1 and 2).
@test "native: a reject-mode, an Argo and an external-submitters policy broken on purpose show in the table" {
  kc admin delete validatingadmissionpolicybinding native-user-info-pods-reject native-user-info-argo-guard > /dev/null
  kc admin delete mutatingadmissionpolicybinding native-user-info-pods-external > /dev/null
  wait_until 60 "the reject and Argo rules to be gone" bash -c "! kubectl --kubeconfig='$RUN/admin.kubeconfig' get validatingadmissionpolicybinding native-user-info-pods-reject > /dev/null 2>&1 && ! kubectl --kubeconfig='$RUN/admin.kubeconfig' get validatingadmissionpolicybinding native-user-info-argo-guard > /dev/null 2>&1"
  # bob's dry-run pod is no longer stamped there
  wait_until 60 "the external submitters' Pod rule to be gone" unstamped bob "$(set_ns native external-submitters)"
  sleep 3
  local ids=(pod-create-bob-forged-reject workflow-create-bob-templated-key workflowtemplate-create-bob-forged workflowtemplate-create-alice-identity
    pod-create-bob-forged-external pod-create-legacy-label-bob-external)
  # the first test stored the last two (stamped): out of the way, so that they can be created again
  kc admin -n "$(set_ns native external-submitters)" delete pod pod-create-bob-forged-external pod-create-legacy-label-bob-external --ignore-not-found --timeout=60s > /dev/null
  broken_table "${ids[@]}"
  [[ "$output" == *"| 1: a supplied value is kept only from a trusted requester | admits a forged identity |"* ]]
  [[ "$output" == *"| 2: the legacy label (stands only with bypassAuth) | admits a forged identity |"* ]]
  [[ "$output" == *"| 11: CREATE of a custom workload (Spark, Ray, Flink, Kubeflow, Argo) | admits a forged identity |"* ]]
  [[ "$output" == *"| 13: guarded configuration maps (sparkConf, flinkConfiguration, Argo's WorkflowTemplate maps) | admits a forged identity |"* ]]
  [[ "$output" == *"| pod-create-bob-forged-external | 1 | stored applicationId, user.info | stored applicationId, user.info | forged"* ]]
}
