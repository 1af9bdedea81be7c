# guard.bash: the guard (examples/guard.yaml: the policy deployed again with mutating: false) and the mutators that
# run after the policy, for guard.bats and yunikorn.bats. Loaded after lib.bash. GUARD_PORT and COPIER_PORT are
# beside WEBHOOK_PORT; the guard's settings are kwhost's ($RUN/kwhost.settings), as the guard must have the
# policy's. ROOT_VALUE is the identity the mutators write unless the namespace says another.

# shellcheck disable=SC2034 # constants for the suites
{
  GUARD_PORT=$((WEBHOOK_PORT + 2)) COPIER_PORT=$((WEBHOOK_PORT + 3))
  GUARD_ID=clusterwide-yunikorn-user-info-guard
  MUTATION_REFUSAL="The policy attempted to mutate the request, but it is currently configured to not allow mutations."
}

# start_copier: the namespace-annotation copier on COPIER_PORT, reading namespaces as admin
start_copier() {
  stop nscopier
  start nscopier "$NSCOPIER" -listen "127.0.0.1:$COPIER_PORT" -cert-file "$PKI/webhook.crt" -key-file "$PKI/webhook.key" \
    -api "https://127.0.0.1:$API_PORT" -ca-file "$PKI/ca.crt" -client-cert "$PKI/admin.crt" -client-key "$PKI/admin.key" \
    -annotations "$ANNOTATION,yunikorn.apache.org/task-groups" -labels applicationId
  wait_until 30 "nscopier /healthz" curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$COPIER_PORT/healthz"
}

# start_guard: the policy served a second time as policy-server serves it with mutating: false (policy-server
# itself with POLICY_SERVER), with the policy's settings (restarted, so that they are kwhost's now).
start_guard() {
  local settings
  settings=$(cat "$RUN/kwhost.settings")
  stop guard
  if [ -n "${POLICY_SERVER:-}" ]; then
    jq -n --arg id "$GUARD_ID" --argjson s "$settings" '{($id): {module: "", allowedToMutate: false, settings: $s}}' > "$RUN/guard.policies.yml"
    PS_PORT=$((WEBHOOK_PORT + 1004)) PS_READY_PORT=$((WEBHOOK_PORT + 1005)) \
      ps_start guard "$RUN/guard.policies.yml" "127.0.0.1:$GUARD_PORT" "$PKI/webhook.crt" "$PKI/webhook.key" "$RUN/guard-reviews.jsonl"
    return
  fi
  start guard "$KWHOST" serve --policy "$POLICY" --allow-unannotated --settings-json "$settings" --allowed-to-mutate=false \
    --policy-id "$GUARD_ID" --cert-file "$PKI/webhook.crt" --key-file "$PKI/webhook.key" --listen "127.0.0.1:$GUARD_PORT" \
    --record "$RUN/guard-reviews.jsonl"
  wait_until 30 "the guard's /healthz" curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$GUARD_PORT/healthz"
}

# register_guard: the guard's ValidatingWebhookConfiguration (metadata.yml's rules, the example's matchConditions)
register_guard() {
  start_guard
  "$WEBHOOKCONFIG" -validating -name yunikorn-user-info-guard-e2e -metadata "$METADATA" \
    -url "https://127.0.0.1:$GUARD_PORT/validate/$GUARD_ID" -ca-file "$PKI/ca.crt" -namespace-label "$NS_LABEL" \
    -match-conditions "$BATS_TEST_DIRNAME/../../examples/guard.yaml" > "$RUN/guard-configuration.json"
  kc admin apply -f "$RUN/guard-configuration.json" > /dev/null
}

# register_copier NAME REINVOCATION: the copier's MutatingWebhookConfiguration. Mutating webhooks are called in
# the order of their configurations' names: zz-nscopier runs after the policy's, aa-nscopier before it (and,
# with IfNeeded, once more after the policy changed the pod).
register_copier() {
  local ca
  ca=$(base64 -w0 "$PKI/ca.crt")
  kc admin apply -f - > /dev/null <<Y
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: $1}
webhooks:
- name: $1.e2e.test
  clientConfig: {url: "https://127.0.0.1:$COPIER_PORT/mutate", caBundle: $ca}
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
  namespaceSelector: {matchLabels: {${NS_LABEL%%=*}: ${NS_LABEL#*=}}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 10
  reinvocationPolicy: $2
Y
}

# map_served: the API server serves MutatingAdmissionPolicy v1 (GA and on by default from Kubernetes 1.36)
map_served() {
  kc admin get --raw /apis/admissionregistration.k8s.io/v1 | jq -e '.resources[] | select(.name == "mutatingadmissionpolicies")' > /dev/null
}

# register_map_copier: the same copy as a MutatingAdmissionPolicy (CEL, in the API server). It runs before the
# mutating webhooks and, with IfNeeded, once more after the policy changed the pod. (The namespace test is in the
# expression: matchConditions cannot read namespaceObject.)
register_map_copier() {
  kc admin apply -f - > /dev/null <<Y
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: e2e-ns-copier}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        has(namespaceObject.metadata.annotations) && '$ANNOTATION' in namespaceObject.metadata.annotations ?
        Object{metadata: Object.metadata{annotations: {"$ANNOTATION": namespaceObject.metadata.annotations["$ANNOTATION"]}}} :
        Object{}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: e2e-ns-copier}
spec:
  policyName: e2e-ns-copier
  matchResources:
    namespaceSelector: {matchLabels: {${NS_LABEL%%=*}: ${NS_LABEL#*=}}}
Y
}

# copier_live NS VALUE [USER]: the copier's configuration is in force (configurations take effect asynchronously):
# a dry run of USER's (alice's) pod carries VALUE, the namespace's
copier_live() {
  [ "$(kc "${3:-alice}" -n "$1" run probe --image="$IMAGE" --restart=Never --dry-run=server -o json 2> /dev/null |
    jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k] // empty')" = "$2" ]
}

# guard_live NS [USER]: the guard is in force: a dry run of USER's (alice's) pod is refused with the guard's words
guard_live() {
  kc "${2:-alice}" -n "$1" run probe --image="$IMAGE" --restart=Never --dry-run=server 2>&1 | grep -q "$MUTATION_REFUSAL"
}

# unregister_mutators: neither the guard nor a copier registered
unregister_mutators() {
  kc admin delete validatingwebhookconfiguration yunikorn-user-info-guard-e2e --ignore-not-found > /dev/null
  kc admin delete mutatingwebhookconfiguration aa-nscopier zz-nscopier --ignore-not-found > /dev/null
  kc admin delete mutatingadmissionpolicybinding e2e-ns-copier --ignore-not-found > /dev/null 2>&1 || true
  kc admin delete mutatingadmissionpolicy e2e-ns-copier --ignore-not-found > /dev/null 2>&1 || true
}

