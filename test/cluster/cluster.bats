#!/usr/bin/env bats
# cluster.bats: the policy, served by `kwhost serve`, against a real kube-apiserver and
# kube-controller-manager (v1.31.4). run.sh starts them (see README.md beside this file); each test
# sets the policy settings and the controller manager's identity mode it needs, works in a namespace of
# its own, prints what it saw and then asserts it. Pods stay Pending: there is no scheduler or kubelet.
bats_require_minimum_version 1.5.0

setup() {
  load lib
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

# pod_json NAME [VALUE]: a Pod manifest, with VALUE as its annotation when given
pod_json() {
  jq -n --arg name "$1" --arg v "${2:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" \
    '{apiVersion: "v1", kind: "Pod", metadata: ({name: $name} + (if $v == "" then {} else {annotations: {($k): $v}} end)),
      spec: {containers: [{name: "c", image: $img}]}}'
}

# value NS RESOURCE [JQ-PATH-OF-METADATA]: the annotation (or <none>) in the object's metadata or template
value() {
  kc admin -n "$1" get "$2" -o json | jq -r --arg k "$ANNOTATION" "(${3:-.metadata}.annotations // {})[\$k] // \"<none>\""
}

# pods NS: one line per pod: name, owner kind, annotation
pods() {
  kc admin -n "$1" get pods -o json | jq -r --arg k "$ANNOTATION" \
    '.items[] | [.metadata.name, (.metadata.ownerReferences[0].kind // "-"), ((.metadata.annotations // {})[$k] // "<none>")] | @tsv'
}

pod_count() { kc admin -n "$1" get pods --no-headers ${2:+-l "$2"} 2> /dev/null | wc -l; }
pods_at_least() { [ "$(pod_count "$1" "${3:-}")" -ge "$2" ]; }

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

ensure_node() {
  kc admin get node e2e-node > /dev/null 2>&1 || kc admin apply -f - > /dev/null <<'Y'
apiVersion: v1
kind: Node
metadata:
  name: e2e-node
  labels: {kubernetes.io/hostname: e2e-node, kubernetes.io/os: linux}
Y
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
  wait_until 60 "the deployment controller to catch up" bash -c \
    "kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get deployment web -o json | jq -e '.status.observedGeneration == .metadata.generation'"
  # A controller loop (YUNIKORN-1627) would show as more ReplicaSets appearing over the next seconds.
  sleep 8
  echo "ReplicaSets 8 s after the rollout (name, template annotation):"
  kc admin -n "$ns" get rs -o json | jq -r --arg k "$ANNOTATION" '.items[] | "  \(.metadata.name)\t\(.spec.template.metadata.annotations[$k])"'
  [ "$(kc admin -n "$ns" get rs --no-headers | wc -l)" -eq 2 ]
  [ -z "$(kc admin -n "$ns" get rs -o json | jq -r --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '.items[] | select(.spec.template.metadata.annotations[$k] != $v) | .metadata.name')" ]
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
