#!/usr/bin/env bats
# guard.bats: what a mutator that runs after the policy can do to the stored pod, and the guard that stops it
# (examples/guard.yaml: the same module deployed again with mutating: false, a validating webhook). The mutators
# are the namespace-annotation copier (nscopier/) registered after the policy and, for reinvocation, before it,
# and a MutatingAdmissionPolicy doing the same copy in CEL. Each is shown storing a forged identity without the
# guard, and refused with it; then everything the policy admits is shown still admitted with the guard, and the
# guard's limit (a trusted controller's pod) is shown as it is.
bats_require_minimum_version 1.5.0

setup_file() {
  load lib
  load guard
  # The examples' settings: the default controllers and YuniKorn's scheduler trusted.
  export SETTINGS='{"systemUsers":["^system:serviceaccount:kube-system:","^system:kube-controller-manager$","^system:serviceaccount:yunikorn:yunikorn-admin$"]}'
  export ROOT_VALUE='{"user":"root-admin","groups":["admins"]}'
  export FORGED_GROUPS='[{"name":"g","minMember":1,"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"root-admin\",\"groups\":[\"admins\"]}"}}]'
  export SCHEDULER=system:serviceaccount:yunikorn:yunikorn-admin
  [ "$(cat "$RUN/kwhost.settings")" = "$SETTINGS" ] || start_kwhost "$SETTINGS"
  start_copier
  ensure_node
}

setup() {
  load lib
  load guard
}

# The guard and the copiers are left as the next scenario expects them: none registered.
teardown() {
  unregister_mutators
}

# forged_namespace NS WHAT...: a namespace whose annotations and applicationId label the copier copies onto its
# pods: root-admin's identity (user-info), task groups naming root-admin (task-groups), the generated application
# of another namespace (application). Anybody allowed to annotate or label a namespace can write these.
forged_namespace() {
  local ns=$1 what
  shift
  new_namespace "$ns"
  for what in "$@"; do
    case $what in
      user-info) kc admin annotate namespace "$ns" "$ANNOTATION=$ROOT_VALUE" > /dev/null ;;
      task-groups) kc admin annotate namespace "$ns" "yunikorn.apache.org/task-groups=$FORGED_GROUPS" > /dev/null ;;
      application) kc admin label namespace "$ns" applicationId=yunikorn-victims-autogen > /dev/null ;;
    esac
  done
}

# stored NS POD: the pod's user.info, task groups' first user.info and applicationId label, as stored
stored() {
  kc admin -n "$1" get pod "$2" -o json | jq -r --arg k "$ANNOTATION" '.metadata as $m |
    "user.info=\(($m.annotations // {})[$k] // "<none>") task-group-user=\((($m.annotations // {})["yunikorn.apache.org/task-groups"] // "[]") | fromjson | .[0].annotations[$k] // "<none>") applicationId=\(($m.labels // {}).applicationId // "<none>")"'
}



# guard_called NS: the guard is in force in NS: alice's dry run reached it
guard_called() {
  kc alice -n "$1" run probe --image="$IMAGE" --restart=Never --dry-run=server > /dev/null 2>&1 || true
  sleep 0.3 # the record is written just after the answer
  jq -e --arg ns "$1" 'select(.namespace == $ns)' "$RUN/guard-reviews.jsonl" > /dev/null 2>&1
}

# refused NS: alice's pod in NS is refused and not stored; prints the refusal
refused() {
  run --separate-stderr kc alice -n "$1" run alice-pod --image="$IMAGE" --restart=Never
  echo "  $1: exit $status: $stderr"
  [ "$status" -ne 0 ] && [[ "$stderr" == *"denied the request"* ]] && ! kc admin -n "$1" get pod alice-pod > /dev/null 2>&1
}


@test "without the guard: the namespace-annotation copier, registered after the policy, stores root-admin's identity, task groups and another namespace's application on alice's pod" {
  forged_namespace g-after user-info task-groups application
  register_copier zz-nscopier Never
  wait_until 60 "the copier to be in force" copier_live g-after "$ROOT_VALUE"
  kc alice -n g-after run alice-pod --image="$IMAGE" --restart=Never
  echo "stored: $(stored g-after alice-pod)"
  # the policy stamped alice (its webhook's record); the copier rewrote it after
  jq -e 'select(.namespace == "g-after" and .name == "alice-pod" and (.dryRun | not)) | .patch' "$RUN/reviews.jsonl" > /dev/null
  [ "$(stored g-after alice-pod)" = "user.info=$ROOT_VALUE task-group-user=$ROOT_VALUE applicationId=yunikorn-victims-autogen" ]
}

@test "with the guard: each rewrite by the copier after the policy is refused (user.info, a task group, an application ID); nothing is stored" {
  register_guard
  register_copier zz-nscopier Never
  forged_namespace g-after-user user-info
  forged_namespace g-after-groups task-groups
  forged_namespace g-after-app application
  wait_until 60 "the guard to be in force" guard_called g-after-app
  refused g-after-user
  [[ "$stderr" == *"Request rejected by policy $GUARD_ID. $MUTATION_REFUSAL"* ]]
  refused g-after-groups
  [[ "$stderr" == *"Request rejected by policy $GUARD_ID. $MUTATION_REFUSAL"* ]]
  refused g-after-app
  [[ "$stderr" == *"application ID yunikorn-victims-autogen is the generated application of namespace victims"* ]]
}

@test "reinvocation and a MutatingAdmissionPolicy: root-admin's identity is stored on alice's pod without the guard, and refused with it" {
  local ns mutator
  for mutator in webhook-reinvoked admission-policy; do
    if [ "$mutator" = admission-policy ] && ! map_served; then
      echo "admission-policy: this API server serves no MutatingAdmissionPolicy v1 (before 1.36): not tried"
      continue
    fi
    ns=g-$mutator
    forged_namespace "$ns" user-info
    case $mutator in
      webhook-reinvoked) register_copier aa-nscopier IfNeeded ;;
      admission-policy) register_map_copier ;;
    esac
    wait_until 60 "the copier to be in force in $ns" copier_live "$ns" "$ROOT_VALUE"
    kc alice -n "$ns" run alice-pod --image="$IMAGE" --restart=Never
    echo "$mutator, without the guard: stored $(stored "$ns" alice-pod)"
    [ "$(stored "$ns" alice-pod)" = "user.info=$ROOT_VALUE task-group-user=<none> applicationId=<none>" ]
    kc admin -n "$ns" delete pod alice-pod --wait=false > /dev/null
    register_guard
    wait_until 60 "the guard to refuse in $ns" guard_live "$ns"
    wait_until 30 "alice-pod to be gone" bash -c "! kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get pod alice-pod"
    echo "$mutator, with the guard:"
    refused "$ns"
    [[ "$stderr" == *"Request rejected by policy $GUARD_ID. $MUTATION_REFUSAL"* ]]
    unregister_mutators
  done
}

@test "with the guard, what the policy admits is still admitted: alice's pod, bob's forged value replaced, task groups, YuniKorn's placeholder, a label change, a scheduler's Binding, alice's Deployment's pods" {
  new_namespace g-ok
  register_guard
  wait_until 60 "the guard to be in force" guard_called g-ok
  kc alice -n g-ok run alice-pod --image="$IMAGE" --restart=Never
  [ "$(value g-ok pod/alice-pod)" = "$ALICE_VALUE" ]
  pod_json bob-pod "$ALICE_VALUE" | kc bob -n g-ok create -f -
  [ "$(value g-ok pod/bob-pod)" = "$BOB_VALUE" ]
  # task groups: the policy writes alice's identity into each group (rule 16); the guard finds nothing to change
  pod_json tg-pod | jq --arg g '[{"name":"g","minMember":1,"minResource":{"cpu":"1"}}]' '.metadata.annotations["yunikorn.apache.org/task-groups"] = $g' |
    kc alice -n g-ok create -f -
  echo "task groups stored: $(kc admin -n g-ok get pod tg-pod -o json | jq -r '.metadata.annotations["yunikorn.apache.org/task-groups"]')"
  [ "$(kc admin -n g-ok get pod tg-pod -o json | jq -r --arg k "$ANNOTATION" '.metadata.annotations["yunikorn.apache.org/task-groups"] | fromjson | .[0].annotations[$k]')" = "$ALICE_VALUE" ]
  # YuniKorn's placeholder: the scheduler's account creates it with the originator's identity (trusted, rule 1)
  kc admin -n g-ok create rolebinding yunikorn-pods --clusterrole=edit --serviceaccount=yunikorn:yunikorn-admin > /dev/null
  pod_json tg-g-placeholder "$ALICE_VALUE" | kc admin --as="$SCHEDULER" --as-group=system:serviceaccounts -n g-ok create -f -
  [ "$(value g-ok pod/tg-g-placeholder)" = "$ALICE_VALUE" ]
  kc alice -n g-ok label pod alice-pod tier=web
  bind admin g-ok alice-pod > /dev/null
  [ "$(kc admin -n g-ok get pod alice-pod -o jsonpath='{.spec.nodeName}')" = e2e-node ]
  deployment alice g-ok web 2
  wait_until 60 "alice's Deployment's 2 pods" pods_at_least g-ok 2 app=web
  pods g-ok
  [ -z "$(kc admin -n g-ok get pods -l app=web -o json | jq -r --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '.items[] | select(.metadata.annotations[$k] != $v) | .metadata.name')" ]
  # the guard saw them and refused none
  echo "guard: $(jq -r 'select(.namespace == "g-ok" and (.dryRun | not)) | "\(.operation) \(.kind)\(if .subResource then "/" + .subResource else "" end) by \(.userInfo.username): \(.allowed)"' "$RUN/guard-reviews.jsonl" | sort | uniq -c | tr '\n' ';')"
  [ "$(jq -r 'select(.namespace == "g-ok" and (.dryRun | not)) | .name' "$RUN/guard-reviews.jsonl" | wc -l)" -ge 7 ]
  [ -z "$(jq -r 'select(.namespace == "g-ok" and (.allowed | not) and (.dryRun | not)) | .name' "$RUN/guard-reviews.jsonl")" ]
}

@test "the guard's limit: a pod a trusted controller creates keeps the value it carries, so the copier's rewrite of alice's Deployment's pods is stored (README Limitations)" {
  forged_namespace g-limit user-info
  register_copier zz-nscopier Never
  register_guard
  wait_until 60 "the guard to refuse in g-limit" guard_live g-limit
  deployment alice g-limit web 1
  wait_until 60 "alice's Deployment's pod" pods_at_least g-limit 1 app=web
  pods g-limit
  # alice's template carries her stamp; the ReplicaSet controller's pod carries root-admin's, admitted by the guard
  [ "$(value g-limit deployment/web .spec.template.metadata)" = "$ALICE_VALUE" ]
  [ "$(kc admin -n g-limit get pods -l app=web -o json | jq -r --arg k "$ANNOTATION" '.items[0].metadata.annotations[$k]')" = "$ROOT_VALUE" ]
}
