#!/usr/bin/env bats
# cluster.bats: the policy, served by `kwhost serve`, against a real kube-apiserver and
# kube-controller-manager (the version KUBE_VERSION names). run.sh starts them (see README.md beside this file); each test
# sets the policy settings and the controller manager's identity mode it needs, works in a namespace of
# its own, prints what it saw and then asserts it. Pods stay Pending: there is no scheduler or kubelet.
bats_require_minimum_version 1.5.0

setup() {
  load lib
}

# A scenario that stops the webhook or registers another configuration puts them back at its end; this
# does it when the scenario failed half-way, so that the next one starts from the shipped state.
teardown() {
  if [ ! -f "$RUN/pids/kwhost.pid" ]; then start_kwhost "$(cat "$RUN/kwhost.settings")" > /dev/null; fi
  if [ "$(cat "$RUN/webhook.variant")" != default ]; then register_webhook; fi
}

# use_settings JSON: restart kwhost only when the settings change
use_settings() {
  if [ "$(cat "$RUN/kwhost.settings")" != "$1" ]; then start_kwhost "$1"; fi
  echo "policy settings: $1"
}

# use_kcm MODE (sa | single): restart the controller manager only when the mode changes
use_kcm() {
  if [ "$(kcm_mode)" != "$1" ]; then start_kcm "$1"; fi
  case $1 in
    sa) echo "kube-controller-manager --use-service-account-credentials=true" ;;
    single) echo "kube-controller-manager --use-service-account-credentials=false (all controllers are system:kube-controller-manager)" ;;
  esac
}


# received NS KIND OPERATION: each userInfo the webhook received for them (not dry runs), one per line
received() {
  jq -c --arg ns "$1" --arg kind "$2" --arg op "$3" \
    'select(.namespace == $ns and .kind == $kind and .operation == $op and (.dryRun | not)) | .userInfo' "$RUN/reviews.jsonl"
}

# identities NS: who created what in NS, as the webhook saw it, and whether it patched
identities() {
  jq -r --arg ns "$1" 'select(.namespace == $ns and .operation == "CREATE" and (.dryRun | not) and (.subResource // "") == "")
    | [.kind, (if (.name // "") != "" then .name else (.generateName // "") + "*" end), (.userInfo | tojson), (if .patch then "patched" else "unchanged" end)] | @tsv' \
    "$RUN/reviews.jsonl" | sort -u
}

# binding_probe NS POD: what a dry-run Binding of POD carrying an annotation gets now: allowed or denied
binding_probe() {
  local out
  binding_json "$2" "$BOB_VALUE" > "$RUN/probe-binding.json"
  if out=$(kc binder create --raw "/api/v1/namespaces/$1/pods/$2/binding?dryRun=All" -f "$RUN/probe-binding.json" 2>&1); then
    echo allowed
  elif [[ $out == *"denied the request"* ]]; then
    echo denied
  else
    echo "error: $out"
  fi
}
binding_denied() { [ "$(binding_probe "$@")" = denied ]; }
binding_allowed() { [ "$(binding_probe "$@")" = allowed ]; }

calls() { wc -l < "$RUN/reviews.jsonl"; }

# label_probe NS POD: whether a dry-run label change of POD (annotation untouched) reached the webhook:
# "called" without matchConditions, "skipped" with them
label_probe() {
  local before
  before=$(calls)
  kc admin -n "$1" label pod "$2" "probe=p$RANDOM" --overwrite --dry-run=server > /dev/null || { echo error; return; }
  sleep 0.3 # kwhost records a request just after answering it
  if [ "$(calls)" -gt "$before" ]; then echo called; else echo skipped; fi
}
updates_skipped() { [ "$(label_probe "$@")" = skipped ]; }
updates_called() { [ "$(label_probe "$@")" = called ]; }

# use_webhook NS POD [register_webhook ARGS...]: registers that configuration and waits until it is in force
# (configurations take effect asynchronously), probing with POD, an unscheduled pod in NS
use_webhook() {
  local ns=$1 pod=$2
  shift 2
  register_webhook "$@"
  local binding=denied updates=skipped arg
  for arg in "$@"; do
    case $arg in
      no-conditions) updates=called ;;
      without:pods/binding) binding=allowed ;;
    esac
  done
  wait_until 60 "Bindings of $ns to be $binding" "binding_$binding" "$ns" "$pod"
  wait_until 60 "unchanged pod updates in $ns to be $updates" "updates_$updates" "$ns" "$pod"
  echo "webhook configuration: ${*:-as shipped (metadata.yml rules, matchConditions of examples/default.yaml)}"
}

# kubelet_status NS POD: a status update like the kubelet's (Running and Ready), annotation untouched
kubelet_status() {
  kc admin -n "$1" patch pod "$2" --subresource=status --type=merge \
    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}]}}'
}

# create_workloads NS: alice creates one of each workload kind, without the annotation
create_workloads() {
  local ns=$1
  kc alice -n "$ns" apply -f - <<Y
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        metadata: {labels: {app: cron}}
        spec: {restartPolicy: Never, containers: [{name: c, image: $IMAGE}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: deploy}
spec:
  replicas: 2
  selector: {matchLabels: {app: deploy}}
  template:
    metadata: {labels: {app: deploy}}
    spec: {containers: [{name: c, image: $IMAGE}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  replicas: 1
  serviceName: sts
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec: {containers: [{name: c, image: $IMAGE}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      # The fake node has no kubelet: the node lifecycle controller taints it unreachable.
      tolerations: [{operator: Exists}]
      containers: [{name: c, image: $IMAGE}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  template:
    metadata: {labels: {app: job}}
    spec: {restartPolicy: Never, containers: [{name: c, image: $IMAGE}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 1
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec: {containers: [{name: c, image: $IMAGE}]}
Y
}

# workloads MODE: the controllers turn alice's workloads into pods that all carry alice's identity
workloads() {
  local mode=$1 ns=t-workloads-$1
  use_settings '{}'
  use_kcm "$mode"
  new_namespace "$ns"
  ensure_node
  create_workloads "$ns"
  run --separate-stderr kc alice -n "$ns" create job manual --from=cronjob/cron
  echo "alice: kubectl create job manual --from=cronjob/cron -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]

  # 2 (deployment) + 1 (statefulset) + 1 (daemonset) + 1 (job) + 1 (replicationcontroller) + 1 (manual job)
  wait_until 90 "7 pods in $ns" pods_at_least "$ns" 7
  # The cronjob controller starts a job at the next minute boundary.
  wait_until 75 "the cronjob controller's job to have a pod" pods_at_least "$ns" 1 "app=cron,batch.kubernetes.io/job-name!=manual"
  echo "pods (name, owner, annotation):"
  pods "$ns" | sed 's/^/  /'
  [ "$(pod_count "$ns")" -eq 8 ]
  local bad
  bad=$(pods "$ns" | awk -F'\t' -v want="$ALICE_VALUE" '$3 != want')
  [ -z "$bad" ]
  echo "checked: all 8 pods carry $ALICE_VALUE byte for byte"

  # Templates the controllers create are copies; rule 4 leaves them alone (YUNIKORN-1627).
  local rs parent
  rs=$(kc admin -n "$ns" get rs -l app=deploy -o name)
  parent=$(value "$ns" deployment/deploy .spec.template.metadata)
  echo "Deployment template: $parent"
  echo "ReplicaSet template ($rs): $(value "$ns" "$rs" .spec.template.metadata)"
  [ "$parent" = "$ALICE_VALUE" ]
  [ "$(value "$ns" "$rs" .spec.template.metadata)" = "$parent" ]
  local cronjob scheduled
  cronjob=$(value "$ns" cronjob/cron .spec.jobTemplate.spec.template.metadata)
  scheduled=$(kc admin -n "$ns" get jobs -o json | jq -r '.items[] | select(.metadata.ownerReferences[0].kind == "CronJob") | .metadata.name' | head -1)
  echo "CronJob job template: $cronjob"
  echo "Job $scheduled (created by the cronjob controller) template: $(value "$ns" "job/$scheduled" .spec.template.metadata)"
  [ "$cronjob" = "$ALICE_VALUE" ]
  [ "$(value "$ns" "job/$scheduled" .spec.template.metadata)" = "$cronjob" ]

  echo "who created what, as the webhook received it (kind, name, userInfo, decision):"
  identities "$ns" | sed 's/^/  /'
  # The controllers' own workloads were not patched; alice's were stamped.
  [ -z "$(identities "$ns" | awk -F'\t' '$3 !~ /"username":"alice"/ && ($1 == "ReplicaSet" || $1 == "Job") && $4 != "unchanged"')" ]
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

# expect_creators NS KIND USER...: USER (each) created objects of KIND in NS, as the webhook saw it
expect_creators() {
  local ns=$1 kind=$2 got user
  shift 2
  got=$(identities "$ns" | awk -F'\t' -v k="$kind" '$1 == k {print $3}' | jq -r .username | sort -u)
  echo "$kind objects were created by: ${got//$'\n'/, }"
  for user in "$@"; do
    echo "$got" | grep -qx -- "$user"
  done
}

# deployment_rollout MODE: bob's edit of alice's template is undone; set image gives exactly 2 ReplicaSets
deployment_rollout() {
  local mode=$1 ns=t-rollout-$1
  use_settings '{}'
  use_kcm "$mode"
  new_namespace "$ns"
  kc alice -n "$ns" create deployment web --image="$IMAGE" --replicas=1 > /dev/null
  wait_until 60 "the first pod" pods_at_least "$ns" 1
  local gen
  gen=$(kc admin -n "$ns" get deployment web -o jsonpath='{.metadata.generation}')

  local patch
  patch=$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{spec: {template: {metadata: {annotations: {($k): $v}}}}}')
  run --separate-stderr kc bob -n "$ns" patch deployment web --type=merge -p "$patch"
  echo "bob: kubectl patch deployment web (template annotation := his value) -> exit $status"
  echo "  stdout: $output"
  echo "  stderr: $stderr"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"Warning: $ANNOTATION in spec.template.metadata restored: only trusted submitters may change it"* ]]
  echo "template annotation now: $(value "$ns" deployment/web .spec.template.metadata)"
  [ "$(value "$ns" deployment/web .spec.template.metadata)" = "$ALICE_VALUE" ]
  [ "$(kc admin -n "$ns" get deployment web -o jsonpath='{.metadata.generation}')" = "$gen" ]
  echo "checked: restored, with a warning, and the Deployment's generation did not change (no rollout)"

  patch=$(jq -cn --arg k "$ANNOTATION" '{spec: {template: {metadata: {annotations: {($k): null}}}}}')
  run --separate-stderr kc bob -n "$ns" patch deployment web --type=merge -p "$patch"
  echo "bob: kubectl patch deployment web (template annotation removed) -> exit $status; stderr: $stderr"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"Warning: "*" restored: only trusted submitters may change it"* ]]
  [ "$(value "$ns" deployment/web .spec.template.metadata)" = "$ALICE_VALUE" ]

  run --separate-stderr kc alice -n "$ns" set image deployment/web "pause=registry.invalid/pause:2"
  echo "alice: kubectl set image deployment/web -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  wait_until 60 "a second ReplicaSet" bash -c "[ \$(kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get rs --no-headers | wc -l) -ge 2 ]"
  no_replicaset_loop "$ns" 8
  wait_until 60 "a pod of the new ReplicaSet" bash -c \
    "kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get pods -o json | jq -e '[.items[] | select(.spec.containers[0].image == \"registry.invalid/pause:2\")] | length >= 1'"
  [ -z "$(pods "$ns" | awk -F'\t' -v want="$ALICE_VALUE" '$3 != want')" ]
  echo "checked: exactly 2 ReplicaSets, both templates and every pod carry alice's value"
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

# no_bypass MODE CONTROLLER_VALUE: bypassControllers false + replace: the pods carry the controller
no_bypass_replace() {
  local mode=$1 want=$2 ns=t-nobypass-$1
  use_settings '{"bypassControllers":false}'
  use_kcm "$mode"
  new_namespace "$ns"
  kc alice -n "$ns" create deployment web --image="$IMAGE" --replicas=2 > /dev/null
  wait_until 60 "2 pods" pods_at_least "$ns" 2
  echo "pods (name, owner, annotation):"
  pods "$ns" | sed 's/^/  /'
  local rs
  rs=$(kc admin -n "$ns" get rs -o name)
  echo "ReplicaSet template: $(value "$ns" "$rs" .spec.template.metadata)"
  [ "$(value "$ns" "$rs" .spec.template.metadata)" = "$ALICE_VALUE" ]
  [ -z "$(pods "$ns" | awk -F'\t' -v want="$want" '$3 != want')" ]
  echo "checked: rule 1 (the controller is not trusted, its copy of alice's value is replaced by its own"
  echo "identity) and rule 4 (the ReplicaSet the deployment controller created is still not mutated)"
  echo "who created what:"
  identities "$ns" | sed 's/^/  /'
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

@test "alice creates a Pod: it carries her identity byte for byte, and no warning" {
  use_settings '{}'
  new_namespace t-pod
  run --separate-stderr kc alice -n t-pod run alice-pod --image="$IMAGE" --restart=Never
  echo "alice: kubectl run alice-pod -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  echo "annotation: $(value t-pod pod/alice-pod)"
  echo "userInfo the webhook received: $(received t-pod Pod CREATE)"
  [ "$(value t-pod pod/alice-pod)" = "$ALICE_VALUE" ]
  [ "$(received t-pod Pod CREATE | jq -c '{username, groups}')" = '{"username":"alice","groups":["devops","system:authenticated"]}' ]
}

@test "bob creates a Pod carrying alice's value: it gets his identity and kubectl shows him a warning (replace)" {
  use_settings '{}'
  new_namespace t-forge
  pod_json bob-pod "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/pod.json"
  run --separate-stderr kc bob -n t-forge create -f "$BATS_TEST_TMPDIR/pod.json"
  echo "bob: kubectl create -f pod.json (annotation: alice's value) -> exit $status"
  echo "  stdout: $output"
  echo "  stderr: $stderr"
  echo "annotation: $(value t-forge pod/bob-pod)"
  [ "$status" -eq 0 ]
  [[ "$stderr" == "Warning: $ANNOTATION in metadata replaced by your identity: do not set it"* ]]
  [ "$(value t-forge pod/bob-pod)" = "$BOB_VALUE" ]
}

@test "bob creates a Pod carrying alice's value: refused with the reason (onUntrustedAnnotation: reject)" {
  use_settings '{"onUntrustedAnnotation":"reject"}'
  new_namespace t-forge-reject
  pod_json bob-pod "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/pod.json"
  run --separate-stderr kc bob -n t-forge-reject create -f "$BATS_TEST_TMPDIR/pod.json"
  echo "bob: kubectl create -f pod.json (annotation: alice's value) -> exit $status"
  echo "  stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *'admission webhook "yunikorn-user-info-e2e.kwhost.test" denied the request: user bob with groups [qa,system:authenticated] is not allowed to set the yunikorn.apache.org/user.info annotation'* ]]
  run kc admin -n t-forge-reject get pod bob-pod
  [ "$status" -ne 0 ]
  echo "checked: no pod was created"
}

@test "the annotation of an existing pod cannot be added, changed or removed, by anybody; a label change passes" {
  use_settings '{}'
  # A pod created before the webhook covered its namespace has no annotation: adding one is a change too.
  new_namespace t-annotate unlabelled
  kc alice -n t-annotate run old-pod --image="$IMAGE" --restart=Never > /dev/null
  kc admin label namespace t-annotate "$NS_LABEL" > /dev/null
  wait_webhook t-annotate
  kc alice -n t-annotate run alice-pod --image="$IMAGE" --restart=Never > /dev/null
  echo "old-pod (created before the webhook): $(value t-annotate pod/old-pod); alice-pod: $(value t-annotate pod/alice-pod)"

  run --separate-stderr kc alice -n t-annotate annotate pod old-pod "$ANNOTATION=$ALICE_VALUE"
  echo "alice: kubectl annotate pod old-pod (add) -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: the $ANNOTATION annotation cannot be changed once the pod exists"* ]]

  run --separate-stderr kc bob -n t-annotate annotate pod alice-pod "$ANNOTATION=$BOB_VALUE"
  echo "bob: kubectl annotate pod alice-pod (no --overwrite) -> exit $status; stderr: $stderr"
  echo "  (kubectl itself refuses to overwrite without --overwrite: the request never reaches the API server)"
  [ "$status" -ne 0 ]

  local who
  for who in bob alice admin; do
    run --separate-stderr kc "$who" -n t-annotate annotate --overwrite pod alice-pod "$ANNOTATION=$BOB_VALUE"
    echo "$who: kubectl annotate --overwrite pod alice-pod -> exit $status; stderr: $stderr"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"denied the request: the $ANNOTATION annotation cannot be changed once the pod exists"* ]]
  done

  run --separate-stderr kc alice -n t-annotate annotate pod alice-pod "$ANNOTATION-"
  echo "alice: kubectl annotate pod alice-pod $ANNOTATION- -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: the $ANNOTATION annotation cannot be changed once the pod exists"* ]]

  run --separate-stderr kc alice -n t-annotate label pod alice-pod team=blue
  echo "alice: kubectl label pod alice-pod team=blue -> exit $status; stdout: $output; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  [ "$(kc admin -n t-annotate get pod alice-pod -o jsonpath='{.metadata.labels.team}')" = blue ]
  echo "annotations now: old-pod $(value t-annotate pod/old-pod); alice-pod $(value t-annotate pod/alice-pod)"
  [ "$(value t-annotate pod/old-pod)" = "<none>" ]
  [ "$(value t-annotate pod/alice-pod)" = "$ALICE_VALUE" ]
}

@test "an update through pods/status cannot change the annotation (when metadata.yml registers pods/status)" {
  use_settings '{}'
  new_namespace t-status
  kc alice -n t-status run alice-pod --image="$IMAGE" --restart=Never > /dev/null
  local covered patch
  covered=$(jq '[.webhooks[0].rules[] | select(.apiGroups | index("")) | .resources[]] | any(. == "pods/status" or . == "pods/*" or . == "*/*" or . == "*")' "$RUN/webhook-configuration.json")
  patch=$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{metadata: {annotations: {($k): $v}}}')
  # Only the kubelet (node) and cluster admins may write pods/status; admin stands in for them.
  run --separate-stderr kc admin -n t-status patch pod alice-pod --subresource=status --type=merge -p "$patch"
  echo "admin: kubectl patch pod alice-pod --subresource=status (annotation := bob's value) -> exit $status; stderr: ${stderr:-<none>}"
  echo "annotation now: $(value t-status pod/alice-pod)"
  if [ "$covered" != true ]; then
    if [ "$(value t-status pod/alice-pod)" != "$ALICE_VALUE" ]; then
      skip "KNOWN GAP: metadata.yml's rules do not include pods/status, and the API server lets an update through pods/status change a pod's annotations: the annotation above was rewritten without the policy being asked. Add \"pods/status\" to the core rule's resources in metadata.yml."
    fi
    echo "pods/status is not registered, but this API server ignored the metadata change"
    return 0
  fi
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"cannot be changed once the pod exists"* ]]
  [ "$(value t-status pod/alice-pod)" = "$ALICE_VALUE" ]
}

@test "a Binding rewrites the annotation when pods/binding is not registered; registered, it cannot, and the scheduler's Bindings still pass (rule 10)" {
  use_settings '{}'
  local ns=t-binding
  new_namespace "$ns"
  ensure_node
  local p
  for p in probe hole fixed scheduled top-level; do kc alice -n "$ns" run "$p" --image="$IMAGE" --restart=Never > /dev/null; done
  echo "binder holds one right: $(kc admin get clusterrole e2e-binder -o jsonpath='{.rules}')"
  run kc binder -n "$ns" get pods
  [ "$status" -ne 0 ] # not even get
  echo "annotation of alice's pods: $(value "$ns" pod/hole)"

  use_webhook "$ns" probe without:pods/binding without:bindings
  run --separate-stderr bind binder "$ns" hole "$BOB_VALUE"
  echo "binder: create pods/hole/binding carrying bob's value -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  echo "pod hole: node $(kc admin -n "$ns" get pod hole -o jsonpath='{.spec.nodeName}'), annotation now: $(value "$ns" pod/hole)"
  echo "webhook requests for Bindings in $ns (not dry runs): $(jq -c --arg ns "$ns" 'select(.namespace == $ns and .kind == "Binding" and (.dryRun | not))' "$RUN/reviews.jsonl" | wc -l)"
  [ "$(value "$ns" pod/hole)" = "$BOB_VALUE" ]
  echo "HOLE SHOWN: without the pods/binding rule, a user who may only create pods/binding rewrote alice's pod to bob, and no webhook was asked"

  use_webhook "$ns" probe
  run --separate-stderr bind binder "$ns" fixed "$BOB_VALUE"
  echo "binder: create pods/fixed/binding carrying bob's value -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: a Binding cannot set the $ANNOTATION annotation"* ]]
  echo "pod fixed: node '$(kc admin -n "$ns" get pod fixed -o jsonpath='{.spec.nodeName}')', annotation $(value "$ns" pod/fixed)"
  [ "$(value "$ns" pod/fixed)" = "$ALICE_VALUE" ]
  [ -z "$(kc admin -n "$ns" get pod fixed -o jsonpath='{.spec.nodeName}')" ]

  # A scheduler's Binding carries no annotations: it binds, and never reaches the webhook (matchConditions).
  local before
  before=$(jq -c --arg ns "$ns" 'select(.namespace == $ns and .kind == "Binding")' "$RUN/reviews.jsonl" | wc -l)
  run --separate-stderr bind binder "$ns" scheduled
  echo "binder: create pods/scheduled/binding without annotations (a scheduler's) -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  echo "pod scheduled: node $(kc admin -n "$ns" get pod scheduled -o jsonpath='{.spec.nodeName}'), annotation $(value "$ns" pod/scheduled)"
  [ "$(kc admin -n "$ns" get pod scheduled -o jsonpath='{.spec.nodeName}')" = e2e-node ]
  [ "$(value "$ns" pod/scheduled)" = "$ALICE_VALUE" ]
  sleep 0.3
  [ "$(jq -c --arg ns "$ns" 'select(.namespace == $ns and .kind == "Binding")' "$RUN/reviews.jsonl" | wc -l)" -eq "$before" ]
  echo "checked: the scheduler-style Binding passed without a webhook call"

  # The older top-level bindings resource (kubectl create -f of a Binding posts there).
  binding_json top-level "$BOB_VALUE" > "$BATS_TEST_TMPDIR/top.json"
  run --separate-stderr kc admin -n "$ns" create -f "$BATS_TEST_TMPDIR/top.json"
  echo "admin: create bindings/top-level carrying bob's value -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: a Binding cannot set the $ANNOTATION annotation"* ]]
  binding_json top-level > "$BATS_TEST_TMPDIR/top.json"
  run --separate-stderr kc admin -n "$ns" create -f "$BATS_TEST_TMPDIR/top.json"
  echo "admin: create bindings/top-level without annotations -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  [ "$(value "$ns" pod/top-level)" = "$ALICE_VALUE" ]
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

@test "with the webhook down (failurePolicy Fail), matchConditions let kubelet status updates and scheduler Bindings through; an annotation change is still refused" {
  use_settings '{}'
  local ns=t-webhook-down
  new_namespace "$ns"
  ensure_node
  local p
  for p in probe kubelet scheduled; do kc alice -n "$ns" run "$p" --image="$IMAGE" --restart=Never > /dev/null; done

  use_webhook "$ns" probe no-conditions
  stop kwhost
  echo "kwhost stopped"
  run --separate-stderr kubelet_status "$ns" kubelet
  echo "without matchConditions: kubelet-style status update -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"failed calling webhook"* ]]
  start_kwhost '{}' > /dev/null

  use_webhook "$ns" probe
  stop kwhost
  echo "kwhost stopped"
  run --separate-stderr kubelet_status "$ns" kubelet
  echo "with matchConditions: kubelet-style status update -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  [ "$(kc admin -n "$ns" get pod kubelet -o jsonpath='{.status.phase}')" = Running ]
  run --separate-stderr bind binder "$ns" scheduled
  echo "with matchConditions: binder's Binding without annotations -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  [ "$(kc admin -n "$ns" get pod scheduled -o jsonpath='{.spec.nodeName}')" = e2e-node ]
  run --separate-stderr kc admin -n "$ns" annotate --overwrite pod kubelet "$ANNOTATION=$BOB_VALUE"
  echo "with matchConditions: admin annotates the pod -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"failed calling webhook"* ]]
  run --separate-stderr kc admin -n "$ns" patch pod kubelet --subresource=status --type=merge -p "$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{metadata: {annotations: {($k): $v}}}')"
  echo "with matchConditions: admin changes the annotation through pods/status -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"failed calling webhook"* ]]
  run --separate-stderr bind binder "$ns" probe "$BOB_VALUE"
  echo "with matchConditions: binder's Binding carrying bob's value -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"failed calling webhook"* ]]
  [ "$(value "$ns" pod/kubelet)" = "$ALICE_VALUE" ]
  [ "$(value "$ns" pod/probe)" = "$ALICE_VALUE" ]
  start_kwhost '{}' > /dev/null
  echo "kwhost started again"
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

# rollout NS NODE: alice creates a Deployment of 2 and changes its image; a scheduler binds every pod
# (pods/binding, no annotations) and a kubelet marks it Running and Ready (pods/status), until the rollout
# is complete. Prints the webhook calls it caused, by kind/subresource and operation.
rollout() {
  local ns=$1 node=$2
  new_namespace "$ns"
  kc admin apply -f - > /dev/null <<Y
apiVersion: v1
kind: Node
metadata: {name: $node}
Y
  kc alice -n "$ns" create deployment web --image="$IMAGE" --replicas=2 > /dev/null
  local started=0 deadline=$(($(date +%s) + 120)) p done=false
  while [ "$(date +%s)" -lt "$deadline" ]; do
    for p in $(kc admin -n "$ns" get pods -o json | jq -r '.items[] | select(.spec.nodeName == null and .metadata.deletionTimestamp == null) | .metadata.name'); do
      binding_json "$p" | jq --arg n "$node" '.target.name = $n' > "$BATS_TEST_TMPDIR/b.json"
      kc binder create --raw "/api/v1/namespaces/$ns/pods/$p/binding" -f "$BATS_TEST_TMPDIR/b.json" > /dev/null 2>&1 || true
    done
    for p in $(kc admin -n "$ns" get pods -o json | jq -r '.items[] | select(.spec.nodeName != null and .status.phase != "Running") | .metadata.name'); do
      kubelet_status "$ns" "$p" > /dev/null 2>&1 || true
    done
    if [ "$started" = 0 ]; then
      if kc admin -n "$ns" get deployment web -o json | jq -e '.status.availableReplicas == 2' > /dev/null; then
        kc alice -n "$ns" set image deployment/web "pause=registry.invalid/pause:2" > /dev/null
        started=1
      fi
    elif kc admin -n "$ns" get deployment web -o json |
      jq -e '.status.observedGeneration == .metadata.generation and .status.updatedReplicas == 2 and .status.availableReplicas == 2 and (.status.replicas == 2)' > /dev/null; then
      done=true
      break
    fi
    sleep 0.5
  done
  sleep 1
  echo "rollout in $ns complete: $done; pods: $(pod_count "$ns"), ReplicaSets: $(kc admin -n "$ns" get rs --no-headers | wc -l)"
  jq -r --arg ns "$ns" 'select(.namespace == $ns and (.dryRun | not)) | (.kind + (if (.subResource // "") != "" then "/" + .subResource else "" end)) + " " + .operation' \
    "$RUN/reviews.jsonl" | sort | uniq -c | sed 's/^/  /'
  [ "$done" = true ]
  kc admin delete namespace "$ns" --wait=false > /dev/null
  kc admin delete node "$node" --wait=false > /dev/null
}

calls_in() { jq -c --arg ns "$1" 'select(.namespace == $ns and (.dryRun | not))' "$RUN/reviews.jsonl" | wc -l; }

@test "webhook calls of a Deployment rollout, with and without the examples' matchConditions" {
  use_settings '{}'
  use_kcm sa
  new_namespace t-calls-probe
  kc alice -n t-calls-probe run probe --image="$IMAGE" --restart=Never > /dev/null

  use_webhook t-calls-probe probe no-conditions
  rollout t-calls-without e2e-calls-without
  local without with
  without=$(calls_in t-calls-without)

  use_webhook t-calls-probe probe
  rollout t-calls-with e2e-calls-with
  with=$(calls_in t-calls-with)
  echo "webhook calls for the same rollout: $without without matchConditions, $with with them"
  [ "$with" -lt "$without" ]
  # With them, neither the scheduler's Bindings nor the kubelet's status updates reach the policy.
  [ -z "$(jq -c 'select(.namespace == "t-calls-with" and ((.kind == "Binding") or (.subResource == "status")))' "$RUN/reviews.jsonl")" ]
  echo "$without $with" > "$RUN/rollout-calls"
  kc admin delete namespace t-calls-probe --wait=false > /dev/null
}

# raw_patch NS POD SUBRESOURCE TYPE BODY: PATCH pods/POD/SUBRESOURCE as admin (TYPE: merge-patch, ...);
# fails with the API server's message on an HTTP error
raw_patch() {
  local out code
  out=$(curl -s --max-time 20 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" -X PATCH \
    -H "Content-Type: application/$4+json" --data "$5" -w '\n%{http_code}' \
    "https://127.0.0.1:$API_PORT/api/v1/namespaces/$1/pods/$2/$3")
  code=${out##*$'\n'}
  if [ "$code" != 200 ]; then
    echo "HTTP $code: $(jq -r '.message // empty' <<< "${out%$'\n'*}" 2> /dev/null)" >&2
    return 1
  fi
}

# survey_pod NS POD PATH: tries to change POD's annotation to bob's value through PATH (a subresource of
# pods); prints "annotation-after|exit code: error"
survey_pod() {
  local ns=$1 pod=$2 path=$3 f md rc=0
  f=$(mktemp "$BATS_TEST_TMPDIR/survey.XXXXXX")
  md=$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{annotations: {($k): $v}}')
  case $path in
    update) kc admin -n "$ns" patch pod "$pod" --type=merge -p "{\"metadata\":$md}" > /dev/null 2> "$f.err" || rc=$? ;;
    status) kc admin -n "$ns" patch pod "$pod" --subresource=status --type=merge -p "{\"metadata\":$md}" > /dev/null 2> "$f.err" || rc=$? ;;
    # kubectl patches only status and scale (and resize from 1.32): the others are patched over HTTP.
    ephemeralcontainers)
      raw_patch "$ns" "$pod" ephemeralcontainers strategic-merge-patch \
        "{\"metadata\":$md,\"spec\":{\"ephemeralContainers\":[{\"name\":\"debug\",\"image\":\"$IMAGE\"}]}}" > /dev/null 2> "$f.err" || rc=$? ;;
    resize)
      raw_patch "$ns" "$pod" resize merge-patch \
        "{\"metadata\":$md,\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"200m\"},\"limits\":{\"cpu\":\"200m\"}}}]}}" > /dev/null 2> "$f.err" || rc=$? ;;
    binding)
      binding_json "$pod" "$BOB_VALUE" > "$f"
      kc admin create --raw "/api/v1/namespaces/$ns/pods/$pod/binding" -f "$f" > /dev/null 2> "$f.err" || rc=$? ;;
    eviction)
      jq -n --arg name "$pod" --argjson md "$md" '{apiVersion: "policy/v1", kind: "Eviction", metadata: ({name: $name} + $md)}' > "$f"
      kc admin create --raw "/api/v1/namespaces/$ns/pods/$pod/eviction" -f "$f" > /dev/null 2> "$f.err" || rc=$? ;;
  esac
  local after
  after=$(kc admin -n "$ns" get pod "$pod" -o json 2> /dev/null | jq -r --arg k "$ANNOTATION" '(.metadata.annotations // {})[$k] // "<none>"') || true
  if [ "$rc" -ne 0 ]; then rc="$rc: $(head -c 160 "$f.err" | tr '\n' ' ')"; fi
  echo "${after:-<pod gone>}|$rc"
}

# survey_workload NS RESOURCE NAME SUBRESOURCE TEMPLATE-PATH: tries to change the pod template's annotation
# through the subresource (status: the template in the object; scale: the Scale's own metadata)
survey_workload() {
  local ns=$1 res=$2 name=$3 sub=$4 tpl=$5 patch rc=0 md
  md=$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{annotations: {($k): $v}}')
  case $sub in
    status) patch=$(jq -cn --argjson md "$md" --arg tpl "$tpl" '{} | setpath($tpl | split(".") | .[1:]; $md) + {status: {}}') ;;
    scale) patch=$(jq -cn --argjson md "$md" '{metadata: $md, spec: {replicas: 0}}') ;;
  esac
  kc admin -n "$ns" patch "$res" "$name" --subresource="$sub" --type=merge -p "$patch" > /dev/null 2> "$BATS_TEST_TMPDIR/w.err" || rc=$?
  if [ "$rc" -ne 0 ]; then rc="$rc: $(head -c 160 "$BATS_TEST_TMPDIR/w.err" | tr '\n' ' ')"; fi
  echo "$(value "$ns" "$res/$name" "$tpl")|$rc"
}

# short_value VALUE: alice, bob (CHANGED) or the value as it is
short_value() {
  case $1 in
    "$ALICE_VALUE") echo alice ;;
    "$BOB_VALUE") echo "bob (CHANGED)" ;;
    *) echo "$1" ;;
  esac
}

# survey_workloads NS: one of each workload, replicas 0 / suspended, its template carrying alice's value
survey_workloads() {
  local ns=$1 who=$2 tmeta
  tmeta=$(jq -cn --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '{labels: {app: "s"}, annotations: {($k): $v}}')
  kc "$who" -n "$ns" apply -f - > /dev/null <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: s}
spec: {replicas: 0, selector: {matchLabels: {app: s}}, template: {metadata: $tmeta, spec: {containers: [{name: c, image: $IMAGE}]}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: s}
spec: {replicas: 0, selector: {matchLabels: {app: s}}, template: {metadata: $tmeta, spec: {containers: [{name: c, image: $IMAGE}]}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec: {replicas: 0, serviceName: s, selector: {matchLabels: {app: s}}, template: {metadata: $tmeta, spec: {containers: [{name: c, image: $IMAGE}]}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: s}
spec: {selector: {matchLabels: {app: s}}, template: {metadata: $tmeta, spec: {nodeSelector: {none: none}, containers: [{name: c, image: $IMAGE}]}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: s}
spec: {suspend: true, template: {metadata: $tmeta, spec: {restartPolicy: Never, containers: [{name: c, image: $IMAGE}]}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: s}
spec: {suspend: true, schedule: "0 0 1 1 *", jobTemplate: {spec: {template: {metadata: $tmeta, spec: {restartPolicy: Never, containers: [{name: c, image: $IMAGE}]}}}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: s}
spec: {replicas: 0, selector: {app: s}, template: {metadata: $tmeta, spec: {containers: [{name: c, image: $IMAGE}]}}}
Y
}

@test "survey: no pod or workload subresource can change the annotation (every path the API server serves)" {
  use_settings '{}'
  local bare=t-survey-bare covered=t-survey
  new_namespace "$bare" unlabelled # no webhook: what the API server itself lets through
  new_namespace "$covered"         # the shipped webhook configuration
  ensure_node
  local served
  served=$(kc admin get --raw /api/v1 | jq -r '[.resources[].name | select(startswith("pods/"))] | join(" ")')
  echo "Kubernetes $(kc admin version -o json | jq -r .serverVersion.gitVersion); pod subresources served: $served"
  local path ns pod result bare_result rows=() failures=()
  for path in update status ephemeralcontainers binding eviction resize; do
    if [ "$path" != update ] && [[ " $served " != *" pods/$path "* ]]; then
      rows+=("pods/$path|not served|not served|-|-")
      continue
    fi
    pod=s-$path
    pod_json "$pod" "$ALICE_VALUE" | jq '.spec.containers[0].resources = {requests: {cpu: "100m"}, limits: {cpu: "100m"}}' > "$BATS_TEST_TMPDIR/p.json"
    kc admin -n "$bare" create -f "$BATS_TEST_TMPDIR/p.json" > /dev/null
    kc alice -n "$covered" create -f "$BATS_TEST_TMPDIR/p.json" > /dev/null 2>&1 || true
    if [ "$path" = resize ] || [ "$path" = ephemeralcontainers ]; then
      # resize (and a kubelet's view of ephemeral containers) concern a running pod: bind it first
      bind admin "$bare" "$pod" > /dev/null
      bind admin "$covered" "$pod" > /dev/null
    fi
    bare_result=$(survey_pod "$bare" "$pod" "$path")
    result=$(survey_pod "$covered" "$pod" "$path")
    rows+=("pods/$path|${bare_result%%|*}|${result%%|*}|${bare_result#*|}|${result#*|}")
    case ${result%%|*} in
      "$ALICE_VALUE" | "<pod gone>") ;;
      *) failures+=("pods/$path") ;;
    esac
  done
  survey_workloads "$bare" admin
  survey_workloads "$covered" alice
  local w res sub tpl
  for w in deployments:status deployments:scale replicasets:status replicasets:scale statefulsets:status statefulsets:scale \
    daemonsets:status jobs:status cronjobs:status replicationcontrollers:status replicationcontrollers:scale; do
    res=${w%%:*} sub=${w#*:} tpl=.spec.template.metadata
    [ "$res" = cronjobs ] && tpl=.spec.jobTemplate.spec.template.metadata
    bare_result=$(survey_workload "$bare" "$res" s "$sub" "$tpl")
    result=$(survey_workload "$covered" "$res" s "$sub" "$tpl")
    rows+=("$res/$sub|${bare_result%%|*}|${result%%|*}|${bare_result#*|}|${result#*|}")
    [ "${result%%|*}" = "$ALICE_VALUE" ] || failures+=("$res/$sub")
  done
  echo "path | annotation after the attempt: without a webhook | with the shipped webhook || exit codes: without | with"
  local row bare_rc rc
  for row in "${rows[@]}"; do
    IFS='|' read -r path bare_result result bare_rc rc <<< "$row"
    echo "  $path | $(short_value "$bare_result") | $(short_value "$result") || $bare_rc | $rc"
  done
  echo "paths where the annotation changed despite the webhook: ${failures[*]:-none}"
  [ "${#failures[@]}" -eq 0 ]
  # pods/resize must have reached the annotation question: without a webhook the resize itself is applied.
  if [[ " $served " == *" pods/resize "* ]]; then
    printf '%s\n' "${rows[@]}" | grep -E '^pods/resize\|[^|]*\|[^|]*\|0\|'
    [ "$(kc admin -n "$bare" get pod s-resize -o jsonpath='{.spec.containers[0].resources.requests.cpu}')" = 200m ]
  fi
  # Without a webhook, pods/status and pods/binding do change it: that is why both are registered.
  printf '%s\n' "${rows[@]}" | grep -qF "pods/status|$BOB_VALUE|"
  printf '%s\n' "${rows[@]}" | grep -qF "pods/binding|$BOB_VALUE|"
  kc admin delete namespace "$bare" "$covered" --wait=false > /dev/null
}

@test "every Pod the controllers make from alice's workloads carries her identity; their templates are not mutated (controllers as service accounts)" {
  workloads sa
  local sa=system:serviceaccount:kube-system
  expect_creators t-workloads-sa ReplicaSet $sa:deployment-controller
  expect_creators t-workloads-sa Job alice $sa:cronjob-controller
  expect_creators t-workloads-sa Pod $sa:replicaset-controller $sa:statefulset-controller $sa:daemon-set-controller \
    $sa:job-controller $sa:replication-controller
}

@test "bob's edit of alice's Deployment template annotation is undone with a warning; set image makes exactly 2 ReplicaSets (controllers as service accounts)" {
  deployment_rollout sa
}

@test "bob's edit of alice's Deployment template annotation is refused, naming him (onUntrustedAnnotation: reject)" {
  use_settings '{"onUntrustedAnnotation":"reject"}'
  use_kcm sa
  new_namespace t-rollout-reject
  kc alice -n t-rollout-reject create deployment web --image="$IMAGE" --replicas=1 > /dev/null
  local patch
  patch=$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{spec: {template: {metadata: {annotations: {($k): $v}}}}}')
  run --separate-stderr kc bob -n t-rollout-reject patch deployment web --type=merge -p "$patch"
  echo "bob: kubectl patch deployment web (template annotation := his value) -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: user bob with groups [qa,system:authenticated] is not allowed to change the $ANNOTATION annotation in spec.template.metadata of this Deployment"* ]]
  echo "template annotation: $(value t-rollout-reject deployment/web .spec.template.metadata)"
  [ "$(value t-rollout-reject deployment/web .spec.template.metadata)" = "$ALICE_VALUE" ]
  kc admin delete namespace t-rollout-reject --wait=false > /dev/null
}

@test "kubectl create job --from=cronjob: the CronJob's owner may, even in reject mode; bob's copy runs as bob (replace) or is refused (reject)" {
  use_settings '{"onUntrustedAnnotation":"reject"}'
  local ns=t-cron-copy
  new_namespace "$ns"
  kc alice -n "$ns" create cronjob cron --image="$IMAGE" --schedule="0 0 1 1 *" > /dev/null
  echo "CronJob job template: $(value "$ns" cronjob/cron .spec.jobTemplate.spec.template.metadata)"
  # The copied template carries alice's stamp: she supplies a value, but it is exactly her own.
  run --separate-stderr kc alice -n "$ns" create job by-alice --from=cronjob/cron
  echo "alice: kubectl create job by-alice --from=cronjob/cron -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  echo "  Job template: $(value "$ns" job/by-alice .spec.template.metadata)"
  [ "$(value "$ns" job/by-alice .spec.template.metadata)" = "$ALICE_VALUE" ]

  run --separate-stderr kc bob -n "$ns" create job by-bob --from=cronjob/cron
  echo "bob: kubectl create job by-bob --from=cronjob/cron -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: user bob with groups [qa,system:authenticated] is not allowed to set the $ANNOTATION annotation"* ]]

  use_settings '{}'
  run --separate-stderr kc bob -n "$ns" create job by-bob --from=cronjob/cron
  echo "bob: kubectl create job by-bob --from=cronjob/cron -> exit $status; stderr: $stderr"
  [ "$status" -eq 0 ]
  [[ "$stderr" == "Warning: $ANNOTATION in spec.template.metadata replaced by your identity: do not set it"* ]]
  echo "  Job template: $(value "$ns" job/by-bob .spec.template.metadata)"
  [ "$(value "$ns" job/by-bob .spec.template.metadata)" = "$BOB_VALUE" ]
  wait_until 60 "the pods of both jobs" pods_at_least "$ns" 2
  echo "pods (name, owner, annotation):"
  pods "$ns" | sed 's/^/  /'
  [ "$(kc admin -n "$ns" get pods -l batch.kubernetes.io/job-name=by-bob -o json | jq -r --arg k "$ANNOTATION" '.items[0].metadata.annotations[$k]')" = "$BOB_VALUE" ]
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

@test "bypassControllers: false with replace: pods the controllers create carry the controller's identity (controllers as service accounts)" {
  no_bypass_replace sa '{"user":"system:serviceaccount:kube-system:replicaset-controller","groups":["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]}'
}

@test "bypassControllers: false with reject: the controllers create no pods from alice's Deployment" {
  use_settings '{"bypassControllers":false,"onUntrustedAnnotation":"reject"}'
  use_kcm sa
  local ns=t-nobypass-reject
  new_namespace "$ns"
  kc alice -n "$ns" create deployment web --image="$IMAGE" --replicas=2 > /dev/null
  wait_until 60 "the ReplicaSet to report its failure" bash -c \
    "kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get rs -o json | jq -e '.items[0].status.conditions[]? | select(.type == \"ReplicaFailure\")'"
  local rs
  rs=$(kc admin -n "$ns" get rs -o name)
  echo "ReplicaSet $rs (created: rule 4 never rejects a controller's workload); template: $(value "$ns" "$rs" .spec.template.metadata)"
  echo "its ReplicaFailure condition: $(kc admin -n "$ns" get "$rs" -o json | jq -r '.status.conditions[] | select(.type == "ReplicaFailure") | .message')"
  echo "pods: $(pod_count "$ns")"
  [ "$(pod_count "$ns")" -eq 0 ]
  kc admin -n "$ns" get "$rs" -o json |
    jq -e '.status.conditions[] | select(.type == "ReplicaFailure") | .message | contains("is not allowed to set the yunikorn.apache.org/user.info annotation")' > /dev/null
  echo "checked: with bypassControllers false and reject, the replicaset controller (untrusted, copying alice's"
  echo "value) is refused, so no pod exists: rule 1 taken literally; the README should say so"
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

@test "an allow-listed external submitter keeps the value it supplies; others still cannot (bypassAuth)" {
  use_settings '{"bypassAuth":true,"externalUsers":["^airflow$"]}'
  new_namespace t-external
  pod_json for-alice "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/for-alice.json"
  run --separate-stderr kc airflow -n t-external create -f "$BATS_TEST_TMPDIR/for-alice.json"
  echo "airflow: create Pod for-alice carrying alice's value -> exit $status; stderr: ${stderr:-<none>}"
  echo "  annotation: $(value t-external pod/for-alice)"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [ "$(value t-external pod/for-alice)" = "$ALICE_VALUE" ]

  kc airflow -n t-external run own --image="$IMAGE" --restart=Never > /dev/null
  echo "airflow: create Pod own without a value -> $(value t-external pod/own)"
  [ "$(value t-external pod/own)" = '{"user":"airflow","groups":["workflow-engines","system:authenticated"]}' ]

  pod_json bad '{"user":""}' > "$BATS_TEST_TMPDIR/bad.json"
  run --separate-stderr kc airflow -n t-external create -f "$BATS_TEST_TMPDIR/bad.json"
  echo "airflow: create Pod carrying {\"user\":\"\"} -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: the $ANNOTATION annotation in metadata is not valid"* ]]

  pod_json bob-pod "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/bob.json"
  run --separate-stderr kc bob -n t-external create -f "$BATS_TEST_TMPDIR/bob.json"
  echo "bob: create Pod carrying alice's value -> exit $status; stderr: $stderr; annotation: $(value t-external pod/bob-pod)"
  [ "$status" -eq 0 ]
  [ "$(value t-external pod/bob-pod)" = "$BOB_VALUE" ]
}

@test "every Pod the controllers make from alice's workloads carries her identity; their templates are not mutated (one controller-manager identity)" {
  workloads single
  expect_creators t-workloads-single ReplicaSet system:kube-controller-manager
  expect_creators t-workloads-single Job alice system:kube-controller-manager
  expect_creators t-workloads-single Pod system:kube-controller-manager
}

@test "bob's edit of alice's Deployment template annotation is undone with a warning; set image makes exactly 2 ReplicaSets (one controller-manager identity)" {
  deployment_rollout single
}

@test "bypassControllers: false with replace: pods the controllers create carry the controller's identity (one controller-manager identity)" {
  no_bypass_replace single '{"user":"system:kube-controller-manager","groups":["system:authenticated"]}'
}

@test "the userInfo the webhook received for controller-created objects, in both controller-manager modes" {
  local mode
  for mode in sa single; do
    echo "controller-manager mode $mode (kind, operation, userInfo as received):"
    jq -r --arg ns "t-workloads-$mode" 'select(.namespace == $ns and (.userInfo.username | startswith("system:")) and (.dryRun | not))
      | [.kind + (if (.subResource // "") != "" then "/" + .subResource else "" end), .operation, (.userInfo | tojson)] | @tsv' \
      "$RUN/reviews.jsonl" | sort | uniq -c | sed 's/^/  /'
  done
  [ "$(received t-workloads-single Pod CREATE | jq -c 'select(.username != "alice") | {username, groups}' | sort -u)" = \
    '{"username":"system:kube-controller-manager","groups":["system:authenticated"]}' ]
  received t-workloads-sa Pod CREATE | jq -c 'select(.username == "system:serviceaccount:kube-system:replicaset-controller") | .groups' | sort -u | grep -qx \
    '\["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"\]'
}

# ---------------------------------------------------------------- operators' custom resources (rules 11-13)
# The CRDs are the Spark operator's (v2.4.0) and KubeRay's (v1.5.0) own ($CRDS: run.sh fetches them; the
# hand-written test/cluster/crds.yaml stands in when the module proxy refuses them); the webhook gets the examples' custom-resource rules (register_webhook custom-resources) and the policy the
# examples' settings (testdata/settings/spark-operator.json and kuberay.json, merged).

# custom_settings [EXTRA-JSON]: the Spark and KubeRay examples' settings in one object, plus EXTRA
custom_settings() {
  jq -cs --argjson extra "${1:-{\}}" '{systemUsers: ([.[].systemUsers[]] | unique), customWorkloads: [.[].customWorkloads[]]} + $extra' \
    "$BATS_TEST_DIRNAME/../../testdata/settings/spark-operator.json" "$BATS_TEST_DIRNAME/../../testdata/settings/kuberay.json"
}

# spark_app NAME [DRIVER-VALUE] [SPARKCONF-KEY]: a SparkApplication manifest
spark_app() {
  jq -n --arg name "$1" --arg v "${2:-}" --arg conf "${3:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" '{
    apiVersion: "sparkoperator.k8s.io/v1beta2", kind: "SparkApplication", metadata: {name: $name},
    spec: {type: "Scala", mode: "cluster", image: $img, sparkVersion: "3.5.0", mainApplicationFile: "local:///opt/spark/examples.jar",
      sparkConf: ({"spark.ui.enabled": "false"} + (if $conf == "" then {} else {($conf): "{\"user\":\"carol\"}"} end)),
      driver: ({cores: 1, serviceAccount: "spark-driver"} + (if $v == "" then {} else {annotations: {($k): $v}} end)),
      executor: {instances: 1, cores: 1}}}'
}

# ray_cluster_spec [VALUE]: a RayCluster spec with a head and one worker group, VALUE in every template
ray_cluster_spec() {
  jq -n --arg v "${1:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" '
    (if $v == "" then {} else {metadata: {annotations: {($k): $v}}} end) as $md |
    {rayVersion: "2.9.0",
     headGroupSpec: {rayStartParams: {}, template: ($md + {spec: {containers: [{name: "head", image: $img}]}})},
     workerGroupSpecs: [{groupName: "cpu", replicas: 1, rayStartParams: {}, template: ($md + {spec: {containers: [{name: "worker", image: $img}]}})}]}'
}

# install_crds_and_webhook NS: the CRDs, the custom-resource rules and a namespace, waiting until alice's
# dry-run SparkApplication comes back stamped
install_crds_and_webhook() {
  local crds=() c
  IFS=, read -ra crds <<< "$CRDS"
  for c in "${crds[@]}"; do kc admin apply --server-side --force-conflicts -f "$c" > /dev/null; done
  kc admin wait --for=condition=Established --timeout=60s crd/sparkapplications.sparkoperator.k8s.io crd/rayclusters.ray.io crd/rayjobs.ray.io > /dev/null
  register_webhook custom-resources
  new_namespace "$1"
  spark_app e2e-probe > "$BATS_TEST_TMPDIR/probe.json"
  wait_until 60 "the webhook to stamp dry-run SparkApplications in $1" spark_probe "$1"
  echo "webhook configuration: metadata.yml rules + $(jq -c '[.webhooks[0].rules[] | select(.apiGroups[0] | test("\\.")) | .resources[]]' "$RUN/webhook-configuration.json")"
}
spark_probe() {
  [ "$(kc alice -n "$1" create --dry-run=server -o json -f "$BATS_TEST_TMPDIR/probe.json" 2> /dev/null |
    jq -r --arg k "$ANNOTATION" '.spec.driver.annotations[$k] // empty')" = "$ALICE_VALUE" ]
}

# cr_value NS RESOURCE JQ-PATH-OF-MAP: the annotation in that map of a custom resource (or <none>)
cr_value() {
  kc admin -n "$1" get "$2" -o json | jq -r --arg k "$ANNOTATION" "(${3} // {})[\$k] // \"<none>\""
}

@test "operators' custom resources: alice's SparkApplication and RayJob are stamped, bob's forged value is replaced, his edit of alice's is restored, a sparkConf entry naming the annotation is refused" {
  use_settings "$(custom_settings)"
  install_crds_and_webhook t-custom
  local ns=t-custom

  spark_app pi > "$BATS_TEST_TMPDIR/pi.json"
  run --separate-stderr kc alice -n $ns create -f "$BATS_TEST_TMPDIR/pi.json"
  echo "alice: create SparkApplication pi -> exit $status; stderr: ${stderr:-<none>}"
  echo "  driver: $(cr_value $ns sparkapplication/pi .spec.driver.annotations); executor: $(cr_value $ns sparkapplication/pi .spec.executor.annotations)"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [ "$(cr_value $ns sparkapplication/pi .spec.driver.annotations)" = "$ALICE_VALUE" ]
  [ "$(cr_value $ns sparkapplication/pi .spec.executor.annotations)" = "$ALICE_VALUE" ]

  jq -n --argjson spec "$(ray_cluster_spec)" --arg img "$IMAGE" '{apiVersion: "ray.io/v1", kind: "RayJob", metadata: {name: "pi-job"},
    spec: {entrypoint: "python pi.py", rayClusterSpec: $spec,
      submitterPodTemplate: {spec: {restartPolicy: "Never", containers: [{name: "submitter", image: $img}]}}}}' > "$BATS_TEST_TMPDIR/job.json"
  run --separate-stderr kc alice -n $ns create -f "$BATS_TEST_TMPDIR/job.json"
  echo "alice: create RayJob pi-job -> exit $status; stderr: ${stderr:-<none>}"
  local m
  for m in .spec.rayClusterSpec.headGroupSpec.template.metadata.annotations .spec.rayClusterSpec.workerGroupSpecs[0].template.metadata.annotations \
    .spec.submitterPodTemplate.metadata.annotations; do
    echo "  $m: $(cr_value $ns rayjob/pi-job "$m")"
    [ "$(cr_value $ns rayjob/pi-job "$m")" = "$ALICE_VALUE" ]
  done
  [ "$status" -eq 0 ]

  spark_app forged '{"user":"carol","groups":["admins"]}' > "$BATS_TEST_TMPDIR/forged.json"
  run --separate-stderr kc bob -n $ns create -f "$BATS_TEST_TMPDIR/forged.json"
  echo "bob: create SparkApplication carrying carol's value -> exit $status; stderr: ${stderr:-<none>}"
  echo "  driver: $(cr_value $ns sparkapplication/forged .spec.driver.annotations)"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"Warning: $ANNOTATION was replaced with the requester's identity in 1 map"* ]]
  [ "$(cr_value $ns sparkapplication/forged .spec.driver.annotations)" = "$BOB_VALUE" ]

  run --separate-stderr kc bob -n $ns patch sparkapplication pi --type=merge \
    -p "$(jq -cn --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{spec: {driver: {annotations: {($k): $v}}, executor: {instances: 3}}}')"
  echo "bob: patch alice's SparkApplication driver annotation to his own -> exit $status; stderr: ${stderr:-<none>}"
  echo "  driver: $(cr_value $ns sparkapplication/pi .spec.driver.annotations); executor instances: $(kc admin -n $ns get sparkapplication pi -o jsonpath='{.spec.executor.instances}')"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"Warning: $ANNOTATION was restored to its previous value in 1 map"* ]]
  [ "$(cr_value $ns sparkapplication/pi .spec.driver.annotations)" = "$ALICE_VALUE" ]
  [ "$(kc admin -n $ns get sparkapplication pi -o jsonpath='{.spec.executor.instances}')" = 3 ]

  run --separate-stderr kc bob -n $ns patch rayjob pi-job --type=json \
    -p "$(jq -cn --argjson g "$(ray_cluster_spec | jq '.workerGroupSpecs[0] | .groupName = "bob-gpu"')" '[{op: "add", path: "/spec/rayClusterSpec/workerGroupSpecs/-", value: $g}]')"
  echo "bob: add a worker group to alice's RayJob -> exit $status; stderr: ${stderr:-<none>}"
  echo "  group 0: $(cr_value $ns rayjob/pi-job .spec.rayClusterSpec.workerGroupSpecs[0].template.metadata.annotations)"
  echo "  group 1: $(cr_value $ns rayjob/pi-job .spec.rayClusterSpec.workerGroupSpecs[1].template.metadata.annotations)"
  [ "$status" -eq 0 ]
  [ "$(cr_value $ns rayjob/pi-job .spec.rayClusterSpec.workerGroupSpecs[0].template.metadata.annotations)" = "$ALICE_VALUE" ]
  [ "$(cr_value $ns rayjob/pi-job .spec.rayClusterSpec.workerGroupSpecs[1].template.metadata.annotations)" = "$BOB_VALUE" ]

  spark_app conf "" "spark.kubernetes.driver.annotation.$ANNOTATION" > "$BATS_TEST_TMPDIR/conf.json"
  run --separate-stderr kc bob -n $ns create -f "$BATS_TEST_TMPDIR/conf.json"
  echo "bob: create SparkApplication whose sparkConf sets the annotation -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"denied the request: the spec.sparkConf entry spark.kubernetes.driver.annotation.$ANNOTATION sets the $ANNOTATION annotation"* ]]
  ! kc admin -n $ns get sparkapplication conf 2> /dev/null
}

@test "operators' custom resources: the RayCluster the Ray operator's account creates from alice's RayJob is left alone; bob's copy of it is not (rule 4)" {
  use_settings "$(custom_settings)"
  install_crds_and_webhook t-custom-operator
  local ns=t-custom-operator operator=system:serviceaccount:kube-system:kuberay-operator
  jq -n --argjson spec "$(ray_cluster_spec "$ALICE_VALUE")" '{apiVersion: "ray.io/v1", kind: "RayCluster", metadata: {name: "pi-job-raycluster-x7k2p"}, spec: $spec}' \
    > "$BATS_TEST_TMPDIR/cluster.json"
  run --separate-stderr kc admin -n $ns create -f "$BATS_TEST_TMPDIR/cluster.json" --as="$operator" --as-group=system:serviceaccounts --as-group=system:serviceaccounts:kube-system
  echo "$operator (impersonated): create RayCluster carrying alice's value -> exit $status; stderr: ${stderr:-<none>}"
  echo "  head: $(cr_value $ns raycluster/pi-job-raycluster-x7k2p .spec.headGroupSpec.template.metadata.annotations)"
  echo "  what the webhook saw: $(identities $ns | grep RayCluster)"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [ "$(cr_value $ns raycluster/pi-job-raycluster-x7k2p .spec.headGroupSpec.template.metadata.annotations)" = "$ALICE_VALUE" ]
  [ "$(cr_value $ns raycluster/pi-job-raycluster-x7k2p .spec.workerGroupSpecs[0].template.metadata.annotations)" = "$ALICE_VALUE" ]
  identities $ns | grep -q "^RayCluster	pi-job-raycluster-x7k2p	.*$operator.*	unchanged$"

  jq '.metadata.name = "bobs-copy"' "$BATS_TEST_TMPDIR/cluster.json" > "$BATS_TEST_TMPDIR/copy.json"
  run --separate-stderr kc bob -n $ns create -f "$BATS_TEST_TMPDIR/copy.json"
  echo "bob: create the same RayCluster -> exit $status; stderr: ${stderr:-<none>}; head: $(cr_value $ns raycluster/bobs-copy .spec.headGroupSpec.template.metadata.annotations)"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"replaced with the requester's identity in 2 maps"* ]]
  [ "$(cr_value $ns raycluster/bobs-copy .spec.headGroupSpec.template.metadata.annotations)" = "$BOB_VALUE" ]
}

@test "operators' custom resources with reject: bob's forged SparkApplication is refused, alice's is stamped" {
  use_settings "$(custom_settings '{"onUntrustedAnnotation":"reject"}')"
  install_crds_and_webhook t-custom-reject
  local ns=t-custom-reject
  spark_app forged '{"user":"carol","groups":["admins"]}' > "$BATS_TEST_TMPDIR/forged.json"
  run --separate-stderr kc bob -n $ns create -f "$BATS_TEST_TMPDIR/forged.json"
  echo "bob: create SparkApplication carrying carol's value -> exit $status; stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"user bob with groups [qa,system:authenticated] is not allowed to set the $ANNOTATION annotation (in spec.driver.annotations)"* ]]
  spark_app mine > "$BATS_TEST_TMPDIR/mine.json"
  kc alice -n $ns create -f "$BATS_TEST_TMPDIR/mine.json" > /dev/null
  echo "alice: create SparkApplication -> driver $(cr_value $ns sparkapplication/mine .spec.driver.annotations)"
  [ "$(cr_value $ns sparkapplication/mine .spec.driver.annotations)" = "$ALICE_VALUE" ]
}
