#!/usr/bin/env bats
# adoption.bats: the policy switched on in a namespace that already runs workloads (make e2e-load).
# alice's objects are created while the webhook does not cover the namespace (it is not labelled yet):
# no annotation, YuniKorn-style values the strict validator refuses, a value naming another user. Then
# yunikorn-user-info-preflight predicts each object's next rollout, the namespace is labelled (the policy is on),
# the rollouts happen, and each prediction is checked against what the cluster did.
bats_require_minimum_version 1.5.0

setup() {
  load lib
  NS=adopt
}

YK_NULL='{"user":"alice","groups":null}'
YK_QUEUE='{"user":"alice","groups":["devops"],"queue":"root.a"}'

# workload KIND NAME VALUE: alice's KIND with one pod, VALUE ("" for none) in the template
workload() {
  local kind=$1 name=$2 value=$3 annotations="" restart="" api=apps/v1 spec
  if [ -n "$value" ]; then annotations="annotations: {$ANNOTATION: '$value'}"; fi
  if [ "$kind" = Job ]; then restart="restartPolicy: Never, "; fi
  local selector="selector: {matchLabels: {app: $name}}" template="template:
    metadata:
      labels: {app: $name}
      $annotations
    spec: {${restart}containers: [{name: c, image: $IMAGE}]}"
  case $kind in
    Deployment) spec="replicas: 1
  $selector" ;;
    StatefulSet) spec="replicas: 1
  serviceName: $name
  podManagementPolicy: Parallel
  $selector" ;;
    ReplicationController) api=v1 spec="replicas: 1
  selector: {app: $name}" ;;
    DaemonSet) spec=$selector ;;
    Job) api=batch/v1 spec="parallelism: 1
  completions: 2" ;;
    CronJob) api=batch/v1 spec='schedule: "0 0 1 1 *"
  suspend: true
  jobTemplate:
    spec:' template="    template:
        metadata:
          labels: {app: $name}
          $annotations
        spec: {restartPolicy: Never, containers: [{name: c, image: $IMAGE}]}" ;;
    *) echo "workload: no kind $kind" >&2; return 2 ;;
  esac
  kc alice -n "$NS" apply -f - > /dev/null <<Y
apiVersion: $api
kind: $kind
metadata: {name: $name}
spec:
  $spec
  $template
Y
}

app_pods() { kc admin -n "$NS" get pods -l "app=$1" -o json | jq -r '.items[].metadata.name' | sort; }
# new_pod_values APP BEFORE: the annotations of the pods of APP not in BEFORE (names, one a line)
new_pod_values() {
  kc admin -n "$NS" get pods -l "app=$1" -o json | jq -r --arg k "$ANNOTATION" --arg before "$2" \
    '.items[] | select(.metadata.name as $n | ($before | split("\n") | index($n)) | not) | (.metadata.annotations // {})[$k] // "<none>"'
}
has_new_pod() { [ -n "$(new_pod_values "$1" "$2")" ]; }

# trigger KIND NAME: the next rollout or pod creation, as alice (or an operator) would cause it
trigger() {
  case $1 in
    Deployment) kc alice -n "$NS" set image "deployment/$2" c=registry.invalid/pause:2 ;;
    StatefulSet | ReplicationController) kc alice -n "$NS" patch "$(tr '[:upper:]' '[:lower:]' <<< "$1")/$2" --type=merge -p '{"spec":{"replicas":2}}' ;;
    Job) kc alice -n "$NS" patch "job/$2" --type=merge -p '{"spec":{"parallelism":2}}' ;;
  esac
}

# refusal_seen KIND NAME: the controller reports the policy's refusal (a condition or an event)
refusal_seen() {
  {
    kc admin -n "$NS" get "$(tr '[:upper:]' '[:lower:]' <<< "$1")/$2" -o json | jq -r '.status.conditions // [] | .[].message'
    kc admin -n "$NS" get events --field-selector "involvedObject.name=$2" -o json | jq -r '.items[].message'
  } | grep -q "is not valid"
}

@test "adoption: yunikorn-user-info-preflight predicts what the policy does to workloads that predate it, and the cluster does exactly that" {
  new_namespace "$NS" unlabelled
  workload Deployment plain ""
  workload Deployment yk-null "$YK_NULL"
  workload StatefulSet yk-queue "$YK_QUEUE"
  workload Deployment bobs-value "$BOB_VALUE"
  workload ReplicationController rc-alice "$ALICE_VALUE"
  workload Job job-plain ""
  # Reported, not rolled out here: a DaemonSet needs nodes, a CronJob its schedule (the unit tests check
  # these findings on the objects recorded here).
  workload DaemonSet ds-alice "$ALICE_VALUE"
  workload CronJob cron-plain ""
  kc alice -n "$NS" run lonely --image="$IMAGE" --restart=Never --labels=app=lonely > /dev/null
  wait_until 60 "the 7 pods the workloads and alice created before the policy" bash -c \
    "[ \$(kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$NS' get pods --no-headers | wc -l) -ge 7 ]"

  kc admin -n "$NS" get pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,replicationcontrollers -o json > "$RUN/adoption-objects.json"
  "$PREFLIGHT" --policy "$POLICY" --settings-json "$(cat "$RUN/kwhost.settings")" < "$RUN/adoption-objects.json" | tee "$RUN/preflight.txt"
  "$PREFLIGHT" --policy "$POLICY" --settings-json "$(cat "$RUN/kwhost.settings")" -o json < "$RUN/adoption-objects.json" > "$RUN/preflight.json"
  outcome() { jq -r --arg k "$1" --arg n "$2" '.[] | select(.kind == $k and .name == $n) | .outcome' "$RUN/preflight.json"; }
  carry() { jq -r --arg k "$1" --arg n "$2" '.[] | select(.kind == $k and .name == $n) | .podsWillCarry' "$RUN/preflight.json"; }
  # What the report must say, before the cluster is asked.
  [ "$(outcome Deployment plain)" = stamp ]
  [ "$(outcome Deployment yk-null)" = refuse ]
  [ "$(outcome StatefulSet yk-queue)" = refuse ]
  [ "$(outcome Deployment bobs-value)" = keep ]
  [ "$(outcome ReplicationController rc-alice)" = keep ]
  [ "$(outcome Job job-plain)" = stamp ]
  [ "$(outcome Pod lonely)" = leave-alone ]
  [ "$(outcome DaemonSet ds-alice)" = keep ]
  [ "$(outcome CronJob cron-plain)" = stamp ]

  kc admin label namespace "$NS" "$NS_LABEL" > /dev/null
  wait_webhook "$NS"
  echo "the policy now covers $NS; each object's next rollout:"
  local kind name before got
  while IFS=$'\t' read -r kind name; do
    before=$(app_pods "$name")
    trigger "$kind" "$name" > /dev/null
    case $(outcome "$kind" "$name") in
      stamp | keep)
        wait_until 60 "a new pod of $kind/$name" has_new_pod "$name" "$before"
        got=$(new_pod_values "$name" "$before" | sort -u)
        echo "  $kind/$name: predicted $(outcome "$kind" "$name") $(carry "$kind" "$name"); new pods carry $got"
        [ "$got" = "$(carry "$kind" "$name")" ]
        ;;
      refuse)
        wait_until 60 "$kind/$name to report the policy's refusal" refusal_seen "$kind" "$name"
        sleep 2
        echo "  $kind/$name: predicted refuse; the controller reports the policy's refusal; new pods: $(new_pod_values "$name" "$before" | wc -l)"
        [ -z "$(new_pod_values "$name" "$before")" ]
        ;;
    esac
  done <<< $'Deployment\tplain\nDeployment\tyk-null\nStatefulSet\tyk-queue\nDeployment\tbobs-value\nReplicationController\trc-alice\nJob\tjob-plain'

  # leave-alone: the bare pod keeps no annotation, and nobody can add one now (rule 5).
  run --separate-stderr kc alice -n "$NS" annotate pod lonely "$ANNOTATION=$ALICE_VALUE"
  echo "  Pod/lonely: predicted leave-alone; alice's annotate -> exit $status; annotation now: $(kc admin -n "$NS" get pod lonely -o json | jq -r --arg k "$ANNOTATION" '(.metadata.annotations // {})[$k] // "<none>"')"
  [ "$status" -ne 0 ]
  [ "$(kc admin -n "$NS" get pod lonely -o json | jq -r --arg k "$ANNOTATION" '(.metadata.annotations // {})[$k] // "<none>"')" = "<none>" ]
}
