#!/usr/bin/env bats
# kubewarden.bats: Kubewarden's own controller (adm-controller, built from the Go module proxy by
# build-kubewarden.sh) reconciles every ClusterAdmissionPolicy of examples/, the README's Quick start runs as
# written, and the cluster scenarios go through the MutatingWebhookConfiguration the controller wrote (the suite's
# own is deleted first). kubewarden.sh runs it through run.sh in a private network namespace. The scenarios run in
# order: each builds on what the one before left. The policy server that answers is kwhost serve, started by the
# kubelet stand-in from what the controller generated (kubewarden.bash).
bats_require_minimum_version 1.5.0

load lib
load kubewarden

setup_file() {
  # Only the controller's webhook configuration may stamp anything here: the suite's own goes, and its kwhost.
  kc admin delete mutatingwebhookconfiguration yunikorn-user-info-e2e --ignore-not-found > /dev/null
  stop kwhost
  : > "$RUN/kw-reviews.jsonl"
}

teardown_file() {
  if [ "${KEEP:-0}" != 1 ]; then kw_stop; fi
}

# The first scenario installs Kubewarden; a run whose BATS_FILTER leaves it out installs it here, without its checks.
setup() {
  if [ -f "$RUN/kw-install-attempted" ] || [[ $BATS_TEST_DESCRIPTION == "Kubewarden's controller"* ]]; then return 0; fi
  touch "$RUN/kw-install-attempted"
  kw_install
  kw_start
  kw_register_webhooks
  kw_kubelet_start
  kw_policy_server > /dev/null
  wait_until 60 "the policy server's pod to be Ready (kubelet stand-in)" kw_rolled_out
}

teardown() {
  if [ "${BATS_TEST_COMPLETED:-}" != 1 ]; then
    echo "--- last lines of the controller's log"
    tail -n 15 "$RUN/logs/kw-controller.log" 2> /dev/null || true
    echo "--- last lines of the kubelet stand-in's log"
    tail -n 15 "$RUN/logs/kw-kubelet.log" 2> /dev/null || true
    echo "--- policies"
    kc admin get clusteradmissionpolicies -o wide 2> /dev/null || true
    kc admin -n "$KW_NS" get deploy,rs,pods -o wide 2> /dev/null || true
  fi
}

# reviews NS: what the policy server stand-in received for NS (not dry runs): kind, operation, subresource, user,
# and the answer (patched, unchanged or refused)
reviews() {
  jq -r --arg ns "$1" 'select(.namespace == $ns and (.dryRun | not)) |
    [.kind, .operation, (.subResource // "-"), .userInfo.username,
     (if .allowed | not then "refused" elif .patch then "patched" else "unchanged" end)] | @tsv' "$RUN/kw-reviews.jsonl"
}

# mutating_webhooks: the MutatingWebhookConfigurations in the cluster and what they cover
mutating_webhooks() {
  kc admin get mutatingwebhookconfigurations -o json |
    jq -r '.items[] | "\(.metadata.name): \([.webhooks[].rules[]?.resources[]] | unique | join(","))"'
}

# the webhook the controller wrote for the policy, as the API server names it in errors and metrics
POLICY_WEBHOOK=clusterwide-yunikorn-user-info.kubewarden.admission

# webhook_calls: how many times the API server called the controller's webhook for the policy (its metrics)
webhook_calls() {
  curl_admin "https://127.0.0.1:$API_PORT/metrics" |
    awk -v n="name=\"$POLICY_WEBHOOK\"" '/^apiserver_admission_webhook_admission_duration_seconds_count\{/ && index($0, n) { s += $NF } END { print s + 0 }'
}

# webhook_matches NAME EXAMPLE_JSON CA: the controller's webhook configuration for the policy NAME has the example's
# rules, matchConditions and failurePolicy, its namespaceSelector plus the controller's own exclusion of kubewarden,
# the policy server's Service, port and path, and the chart's CA
webhook_matches() {
  local kind=mutatingwebhookconfiguration
  [ "$(jq -r '.spec.mutating' <<< "$2")" = true ] || kind=validatingwebhookconfiguration # the guard
  kc admin get "$kind" "clusterwide-$1" -o json |
    jq -e --arg name "$1" --argjson ex "$2" --arg ca "$3" '.webhooks | length == 1 and (.[0] |
      .name == "clusterwide-\($name).kubewarden.admission" and
      [.rules[] | del(.scope)] == $ex.spec.rules and
      (.matchConditions // []) == ($ex.spec.matchConditions // []) and
      .failurePolicy == ($ex.spec.failurePolicy // "Fail") and
      .clientConfig.caBundle == $ca and
      .clientConfig.service == {namespace: "kubewarden", name: "policy-server-default", path: "/validate/clusterwide-\($name)", port: 443} and
      .namespaceSelector.matchExpressions as $got |
      any($got[]; . == {key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["kubewarden"]}) and
      all(($ex.spec.namespaceSelector.matchExpressions // [])[]; . as $e | any($got[]; . == $e)))' > /dev/null
}

@test "Kubewarden's controller v$KW_VERSION, installed as its Helm chart installs it: its webhooks refuse a matchCondition that is not CEL, and a PolicyServer gets its Deployment, ConfigMap, Service and certificate" {
  touch "$RUN/kw-install-attempted"
  kw_install
  echo "CRDs (kubewarden-crds $(awk '/^appVersion:/ {print $2}' "$KW_BIN/chart/Chart.yaml")): $(kc admin get crd -o name | grep -c kubewarden.io) applied"
  echo "chart objects: $(grep -c '^kind:' "$RUN/kw-chart.yaml") ($(awk '/^kind:/ {print $2}' "$RUN/kw-chart.yaml" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}'))"
  kw_start
  echo "controller: $(grep -c 'Starting workers' "$RUN/logs/kw-controller.log") controllers started, webhook server answers through $KW_SVC ($(kw_cluster_ip "$KW_SVC"):443)"
  # Without the chart's webhooks the API server takes the policy (the CRD's schema does not compile CEL) ...
  kw_bad_cel_policy > "$BATS_TEST_TMPDIR/bad-cel.yaml"
  run -0 kc admin apply --dry-run=server -f "$BATS_TEST_TMPDIR/bad-cel.yaml"
  echo "before the chart's webhooks: a ClusterAdmissionPolicy with matchCondition 'object.metadata.(' -> $output"
  # ... with them, the controller refuses it.
  kw_register_webhooks
  run --separate-stderr kc admin apply --dry-run=server -f "$BATS_TEST_TMPDIR/bad-cel.yaml"
  echo "a ClusterAdmissionPolicy with matchCondition 'object.metadata.(' -> exit $status: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"$KW_BAD_CEL_REFUSAL"* ]]
  # the controller's webhook said it (the CRD's schema does not compile CEL)
  grep -q '"msg":"Validating ClusterAdmissionPolicy creation","name":"e2e-bad-cel"' "$RUN/logs/kw-controller.log"
  kw_kubelet_start
  kw_policy_server
  wait_until 30 "the controller to make the PolicyServer's objects" kc admin -n "$KW_NS" get deployment,configmap,service,secret "$KW_PS"
  kc admin -n "$KW_NS" get deployment,configmap,service,secret "$KW_PS"
  echo "policies.yml: $(kw_policies_yml)"
  # the certificate the controller made for the policy server, signed by the chart's CA
  kc admin -n "$KW_NS" get secret "$KW_PS" -o json | jq -r '.data["tls.crt"] | @base64d' > "$BATS_TEST_TMPDIR/ps.crt"
  openssl verify -CAfile "$KW_PKI/ca.crt" -verify_hostname "$KW_PS.$KW_NS.svc" "$BATS_TEST_TMPDIR/ps.crt"
  wait_until 60 "the policy server's pod to be Ready (kubelet stand-in)" kw_rolled_out
  kc admin get policyserver default -o wide
}

@test "every ClusterAdmissionPolicy of examples/ is accepted by the controller's webhooks, reconciled and active: its policies.yml entry and its MutatingWebhookConfiguration say what the example says" {
  local f json name ca rows=()
  ca=$(base64 -w0 "$KW_PKI/ca.crt")
  for f in "$KW_ROOT"/examples/*.yaml; do
    json=$(kw_example_json "$f")
    [ "$(jq -r .kind <<< "$json")" = ClusterAdmissionPolicy ]
    name=$(jq -r .metadata.name <<< "$json")
    echo "=== examples/$(basename "$f"): $name"
    # The stand-in serves one policy: another example's policy goes first (a user replaces one with the other).
    for other in $(kc admin get clusteradmissionpolicies -o jsonpath='{.items[*].metadata.name}'); do
      [ "$other" = "$name" ] || kw_delete "$other"
    done
    kw_apply admin "$f"
    # policies.yml: the module, the mode, the settings, allowed to mutate as the example says (not the guard)
    kw_policies_yml | jq -e --arg id "clusterwide-$name" --argjson ex "$json" '.[$id] as $p |
      $p.module == $ex.spec.module and $p.policyMode == ($ex.spec.mode // "protect") and ($p.allowedToMutate == true) == $ex.spec.mutating and
      ($p.settings // {}) == ($ex.spec.settings // {})' > /dev/null
    # the webhook configuration: the example's rules, matchConditions and failurePolicy, its namespaceSelector plus
    # the controller's own exclusion of kubewarden, the policy server's Service and path, the chart's CA
    wait_until 30 "clusterwide-$name to say what examples/$(basename "$f") says" webhook_matches "$name" "$json" "$ca"
    kc admin get "$([ "$(jq -r .spec.mutating <<< "$json")" = true ] && echo mutating || echo validating)webhookconfiguration" "clusterwide-$name" -o json | jq -r '.kind + " " + (.webhooks[0] |
      "  webhook \(.name): \([.rules[] | .resources[]] | length) resources (\([.rules[] | .apiGroups[] | select(. != "")] | unique | join(", ") | if . == "" then "core" else "core, " + . end)), matchConditions \([.matchConditions[]?.name] | join(", ")), failurePolicy \(.failurePolicy), namespaceSelector \(.namespaceSelector | tojson), \(.clientConfig.service | "\(.name):\(.port)\(.path)")")'
    rows+=("$(basename "$f")	$name	$(jq -r '.spec.mode // "protect"' <<< "$json")	$(jq -r '.spec.settings // {} | keys | join(",") | if . == "" then "{}" else . end' <<< "$json")	active")
  done
  echo
  printf '%s\n' "example	policy	mode	settings	status" "${rows[@]}" | column -t -s $'\t'
  [ "${#rows[@]}" -eq "$(find "$KW_ROOT/examples" -name '*.yaml' | wc -l)" ]
  # Uninstalled, as a user would before the Quick start: the controller removes its webhook configuration.
  for name in $(kc admin get clusteradmissionpolicies -o jsonpath='{.items[*].metadata.name}'); do kw_delete "$name"; done
  [ -z "$(kc admin get clusteradmissionpolicies -o name)" ]
  mutating_webhooks
}

@test "the README's Quick start, as written: a PolicyServer of its own, kubectl apply, kubectl wait --for=condition=PolicyActive, and alice's server-side dry run shows her stamp" {
  local block admin probe expect calls0
  # the sh block of "### Quick start" that installs the policy (the one before it builds and pushes the module)
  block=$(awk '/^### Quick start/ { q = 1; next } q && /^### / { exit } q && /^```sh/ { b = 1; blk = ""; next }
    b && /^```/ { b = 0; if (blk ~ /--for=condition=PolicyActive/) { printf "%s", blk; exit } next } b { blk = blk $0 "\n" }' "$KW_ROOT/README.md")
  [ -n "$block" ]
  echo "$block" | sed 's/^/  README: /'
  expect=$(sed -nE 's/^# for user alice in group devops: (.*)$/\1/p' <<< "$block")
  [ -n "$expect" ]
  # The admin's part is everything before alice's probe (`kubectl run ... --dry-run=server`, continued lines included).
  admin=$(awk '/^kubectl run / { exit } { print }' <<< "$block")
  probe=$(awk '/^kubectl run / { p = 1 } p && !/^#/ { print }' <<< "$block" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
  [[ $admin == *"kind: PolicyServer"* && $admin == *"kubectl wait --for=condition=PolicyActive "* ]]
  [[ $probe == "kubectl run "*"--dry-run=server"* ]]
  calls0=$(webhook_calls)
  # The cluster admin installs the policy, with MODULE as the block before set it; alice (group devops) runs the
  # probe. From the repository's root, with the suite's kubectl, as each of them.
  cd "$KW_ROOT"
  echo "admin\$ (the block above, up to alice's probe)"
  run -0 timeout 400 env KUBECONFIG="$RUN/admin.kubeconfig" MODULE="registry://registry.example.com/you/yunikorn-user-info:v0.1.0-unreleased" \
    bash -euo pipefail -c "$admin"
  echo "$output"
  kw_ps_pick
  [ "$KW_PS_NAME" = yunikorn ]
  wait_until 30 "the policy server to serve it" kw_rolled_out
  echo "alice\$ $probe"
  run -0 --separate-stderr timeout 60 env KUBECONFIG="$RUN/alice.kubeconfig" bash -c "$probe"
  echo "$output"
  echo "README says: $expect"
  [ "$output" = "$expect" ]
  # It went through the webhook the controller wrote: the API server called it, and the stand-in saw alice's probe.
  echo "API server calls of $POLICY_WEBHOOK: $calls0 -> $(webhook_calls)"
  [ "$(webhook_calls)" -gt "$calls0" ]
  jq -e 'select(.kind == "Pod" and .dryRun and .userInfo.username == "alice")' "$RUN/kw-reviews.jsonl" > /dev/null
  echo "module in policies.yml: $(kw_policies_yml | jq -r '.["clusterwide-yunikorn-user-info"].module') (the stand-in runs $(basename "$POLICY") built here)"
  echo "mutating webhook configurations:"
  mutating_webhooks | sed 's/^/  /'
  [ "$(mutating_webhooks | grep -c pods)" -eq 1 ]
  mutating_webhooks | grep -q '^clusterwide-yunikorn-user-info: '
}

@test "through the controller's webhook configuration: alice's Pod is stamped; bob's forged value is replaced with his own and a warning" {
  new_namespace kw-a unlabelled
  kc alice -n kw-a run alice-pod --image="$IMAGE" --restart=Never > /dev/null
  echo "alice's pod: $(kc admin -n kw-a get pod alice-pod -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k]')"
  [ "$(kc admin -n kw-a get pod alice-pod -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k]')" = "$ALICE_VALUE" ]
  jq -n --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" --arg img "$IMAGE" \
    '{apiVersion: "v1", kind: "Pod", metadata: {name: "bob-pod", annotations: {($k): $v}}, spec: {containers: [{name: "c", image: $img}]}}' \
    > "$BATS_TEST_TMPDIR/forged.json"
  run -0 --separate-stderr kc bob -n kw-a create -f "$BATS_TEST_TMPDIR/forged.json"
  echo "bob: create a Pod carrying alice's value -> $output; stderr: $stderr"
  [[ "$stderr" == "Warning: $ANNOTATION in metadata replaced by your identity: do not set it"* ]]
  [ "$(kc admin -n kw-a get pod bob-pod -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k]')" = "$BOB_VALUE" ]
  echo "what the policy server received in kw-a:"
  reviews kw-a | sed 's/^/  /'
  [ "$(reviews kw-a | grep -c 'Pod	CREATE	-	alice	patched')" -eq 1 ]
  [ "$(reviews kw-a | grep -c 'Pod	CREATE	-	bob	patched')" -eq 1 ]
}

@test "through the controller's webhook configuration: a Binding carrying the annotation is refused; a scheduler's Binding binds without reaching the policy" {
  kc admin get node e2e-node > /dev/null 2>&1 || kc admin apply -f - > /dev/null <<'Y'
apiVersion: v1
kind: Node
metadata: {name: e2e-node, labels: {kubernetes.io/hostname: e2e-node}}
Y
  kc alice -n kw-a run pending --image="$IMAGE" --restart=Never > /dev/null
  kc alice -n kw-a run scheduled --image="$IMAGE" --restart=Never > /dev/null
  binding() {
    jq -n --arg name "$1" --arg v "${2:-}" --arg k "$ANNOTATION" \
      '{apiVersion: "v1", kind: "Binding", metadata: ({name: $name} + (if $v == "" then {} else {annotations: {($k): $v}} end)),
        target: {apiVersion: "v1", kind: "Node", name: "e2e-node"}}'
  }
  binding pending "$BOB_VALUE" > "$BATS_TEST_TMPDIR/b1.json"
  run --separate-stderr kc binder create --raw /api/v1/namespaces/kw-a/pods/pending/binding -f "$BATS_TEST_TMPDIR/b1.json"
  echo "binder: a Binding of alice's pending pod carrying bob's value -> exit $status; $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"admission webhook \"$POLICY_WEBHOOK\" denied the request: a Binding cannot set the $ANNOTATION annotation"* ]]
  [ "$(kc admin -n kw-a get pod pending -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k]')" = "$ALICE_VALUE" ]
  [ -z "$(kc admin -n kw-a get pod pending -o jsonpath='{.spec.nodeName}')" ]
  binding scheduled > "$BATS_TEST_TMPDIR/b2.json"
  run -0 --separate-stderr kc binder create --raw /api/v1/namespaces/kw-a/pods/scheduled/binding -f "$BATS_TEST_TMPDIR/b2.json"
  echo "binder: a scheduler's Binding (no annotations) -> bound to $(kc admin -n kw-a get pod scheduled -o jsonpath='{.spec.nodeName}')"
  [ "$(kc admin -n kw-a get pod scheduled -o jsonpath='{.spec.nodeName}')" = e2e-node ]
  echo "Bindings the policy server received in kw-a:"
  reviews kw-a | grep Binding | sed 's/^/  /' || true
  [ "$(reviews kw-a | grep -c '^Binding')" -eq 1 ]
  [ "$(reviews kw-a | grep -c '^Binding	CREATE	binding	binder	refused')" -eq 1 ]
  kc admin -n kw-a delete pod scheduled --force --grace-period=0 > /dev/null 2>&1 || true
}

@test "through the controller's webhook configuration: alice's Deployment's pods carry her stamp, created by the controllers' service accounts" {
  deployment alice kw-a web 2
  wait_until 60 "the Deployment's 2 pods" bash -c "[ \$(kubectl --kubeconfig='$RUN/admin.kubeconfig' -n kw-a get pods -l app=web --no-headers | wc -l) -ge 2 ]"
  kc admin -n kw-a get pods -l app=web -o json |
    jq -r --arg k "$ANNOTATION" '.items[] | "  \(.metadata.name): \(.metadata.annotations[$k])"'
  [ "$(kc admin -n kw-a get pods -l app=web -o json | jq --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '[.items[] | select(.metadata.annotations[$k] == $v)] | length')" -eq 2 ]
  [ "$(kc admin -n kw-a get rs -l app=web -o json | jq -r --arg k "$ANNOTATION" '.items[0].spec.template.metadata.annotations[$k]')" = "$ALICE_VALUE" ]
  echo "who created what in kw-a, as the policy server saw it:"
  reviews kw-a | sed 's/^/  /'
  reviews kw-a | grep -q '^ReplicaSet	CREATE	-	system:serviceaccount:kube-system:deployment-controller	unchanged'
  [ "$(reviews kw-a | grep -c '^Pod	CREATE	-	system:serviceaccount:kube-system:replicaset-controller	unchanged')" -eq 2 ]
}

@test "through the controller's webhook configuration: kube-system is left alone (the example's namespaceSelector)" {
  local before
  before=$(wc -l < "$RUN/kw-reviews.jsonl")
  kc alice -n kube-system run kw-probe --image="$IMAGE" --restart=Never > /dev/null
  echo "alice's pod in kube-system: annotation $(kc admin -n kube-system get pod kw-probe -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k] // "<none>"')"
  [ "$(kc admin -n kube-system get pod kw-probe -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k] // "<none>"')" = "<none>" ]
  [ -z "$(tail -n +$((before + 1)) "$RUN/kw-reviews.jsonl" | jq -c 'select(.namespace == "kube-system")')" ]
  kc admin -n kube-system delete pod kw-probe --wait=false > /dev/null
}

@test "examples/strict.yaml in its place: bob's forged value is refused through the controller's webhook, naming him" {
  kw_delete "$KW_POLICY" # a policy's spec.policyServer cannot change: the Quick start's runs on a PolicyServer of its own
  kw_apply admin "$KW_ROOT/examples/strict.yaml"
  jq -n --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" --arg img "$IMAGE" \
    '{apiVersion: "v1", kind: "Pod", metadata: {name: "bob-forged", annotations: {($k): $v}}, spec: {containers: [{name: "c", image: $img}]}}' \
    > "$BATS_TEST_TMPDIR/forged.json"
  run --separate-stderr kc bob -n kw-a create -f "$BATS_TEST_TMPDIR/forged.json"
  echo "bob: create a Pod carrying alice's value -> exit $status; $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"admission webhook \"$POLICY_WEBHOOK\" denied the request: user bob with groups [qa,system:authenticated] is not allowed to set the $ANNOTATION annotation"* ]]
  run kc admin -n kw-a get pod bob-forged
  [ "$status" -ne 0 ]
  # alice is still stamped
  kc alice -n kw-a run alice-strict --image="$IMAGE" --restart=Never > /dev/null
  [ "$(kc admin -n kw-a get pod alice-strict -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k]')" = "$ALICE_VALUE" ]
}
