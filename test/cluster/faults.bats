#!/usr/bin/env bats
# faults.bats: what holds when the webhook dies, is too slow, or the control plane restarts in the middle
# of rollouts (make e2e-load). The webhook is registered with failurePolicy Fail, as every example in
# examples/ ships it. Each test ends with audit_pods: every pod in every covered namespace carries exactly
# its owner's stamp, none missing, none wrong.
bats_require_minimum_version 1.5.0

setup() {
  load lib
  SLOW_PORT=${SLOW_PORT:-$((WEBHOOK_PORT + 1))}
}

# A failed test must not leave the next one with a slow or dead webhook.
teardown() {
  if [ -f "$RUN/pids/slowproxy.pid" ]; then
    register_webhook
    stop slowproxy
  fi
  if ! curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$WEBHOOK_PORT/healthz" > /dev/null; then
    start_kwhost "$(cat "$RUN/kwhost.settings")"
  fi
}

rs_count() { kc admin -n "$1" get rs -l "app=$2" --no-headers 2> /dev/null | wc -l; }

# one_rollout NS PODS SECONDS: within SECONDS, NS holds exactly PODS pods, all of one ReplicaSet of web
one_rollout() {
  wait_until "$3" "all $2 pods" pods_reach "$1" "$2"
  echo "pods: $(pod_total "$1"), ReplicaSets: $(rs_count "$1" web)"
  [ "$(pod_total "$1")" -eq "$2" ]
  [ "$(rs_count "$1" web)" -eq 1 ]
}

# kill_webhook: SIGKILL, as an OOM kill or a node failure would stop it (no graceful shutdown)
kill_webhook() {
  local pid
  pid=$(cat "$RUN/pids/kwhost.pid")
  ours "$pid" kwhost
  kill -9 "$pid"
  wait_until 10 "kwhost to die" bash -c "! kill -0 $pid"
}

# bare_pod_refused USER NS NAME WHAT: a direct creation fails, naming WHAT (printed), and creates nothing
bare_pod_refused() {
  local t0 secs
  t0=$(date +%s.%N)
  run --separate-stderr kc "$1" -n "$2" run "$3" --image="$IMAGE" --restart=Never --labels="e2e-owner=$1"
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  echo "$1: kubectl run $3 -> exit $status after ${secs}s; stderr: ${stderr:-}"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"$4"* ]]
  [ -z "$(kc admin -n "$2" get pod "$3" --ignore-not-found -o name)" ]
  REFUSED_SECS=$secs
}

@test "faults: the webhook killed mid-rollout: creations fail visibly, nothing is admitted unstamped, the rollout resumes after a restart" {
  # 1,000 replicas: the kill must land mid-rollout, and a fast webhook lets the controller create a few
  # hundred pods between two polls of wait_until (200 were all created once before the kill).
  local ns=f-kill n1 n2 replicas=1000
  new_namespace "$ns"
  deployment alice "$ns" web "$replicas"
  wait_until 60 "30 pods" pods_reach "$ns" 30
  kill_webhook
  echo "kwhost killed (SIGKILL) with $(pod_total "$ns") of $replicas pods created"
  bare_pod_refused bob "$ns" bob-while-down 'failed calling webhook'
  sleep 2
  n1=$(pod_total "$ns")
  sleep 5
  n2=$(pod_total "$ns")
  echo "pods while the webhook is down: $n1, 5 s later $n2"
  [ "$n1" -eq "$n2" ]
  local failure
  failure=$(kc admin -n "$ns" get rs -l app=web -o json |
    jq -r '.items[].status.conditions // [] | .[] | select(.type == "ReplicaFailure") | .message')
  echo "the ReplicaSet's ReplicaFailure condition: ${failure:0:240}"
  [[ "$failure" == *"failed calling webhook"* ]]

  start_kwhost "$(cat "$RUN/kwhost.settings")"
  echo "kwhost restarted"
  wait_until 120 "all $replicas pods after the restart" pods_reach "$ns" "$replicas"
  echo "pods after the restart: $(pod_total "$ns")"
  [ "$(pod_total "$ns")" -eq "$replicas" ]
  audit_pods
}

@test "faults: a webhook slower than its timeoutSeconds: every creation fails within the timeout, none unstamped, and creations resume once it answers in time" {
  local ns=f-slow
  new_namespace "$ns"
  # The Deployment exists before the webhook slows down (its own CREATE goes through the webhook too);
  # scaling it up then needs a ReplicaSet update and pod creations, each through the webhook.
  deployment alice "$ns" web 0
  wait_until 30 "the ReplicaSet" bash -c "[ \$(kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get rs --no-headers | wc -l) -eq 1 ]"
  stop slowproxy
  start slowproxy "$LOADGEN" slowproxy -listen "127.0.0.1:$SLOW_PORT" -target "https://127.0.0.1:$WEBHOOK_PORT" -delay 2s \
    -cert-file "$PKI/webhook.crt" -key-file "$PKI/webhook.key" -ca-file "$PKI/ca.crt"
  "$WEBHOOKCONFIG" -metadata "$METADATA" -url "https://127.0.0.1:$SLOW_PORT/validate/yunikorn-user-info" \
    -ca-file "$PKI/ca.crt" -namespace-label "$NS_LABEL" -timeout-seconds 1 | kc admin apply -f - > /dev/null
  echo "webhook now behind a proxy that holds every request 2 s; timeoutSeconds: 1"
  wait_until 60 "the slow webhook to be in effect" bash -c "! kubectl --kubeconfig='$RUN/alice.kubeconfig' -n '$ns' run probe --image='$IMAGE' --dry-run=server -o name"

  kc admin -n "$ns" scale deployment web --replicas=20 > /dev/null # deployments/scale: no webhook rule
  bare_pod_refused bob "$ns" bob-while-slow 'failed calling webhook'
  # The API server gives up after timeoutSeconds: a slow webhook costs each request 1 s, not a hang.
  awk -v s="$REFUSED_SECS" 'BEGIN {exit !(s < 5)}'
  sleep 4
  echo "pods while the webhook is too slow: $(pod_total "$ns"); ReplicaSets: $(rs_count "$ns" web)"
  [ "$(pod_total "$ns")" -eq 0 ]

  register_webhook
  stop slowproxy
  wait_webhook "$ns"
  echo "webhook direct again (timeoutSeconds 10)"
  one_rollout "$ns" 20 120
  audit_pods
}

@test "faults: the controller manager restarted during rollouts: no ReplicaSet loop (YUNIKORN-1627), no pod without its owner's stamp" {
  local ns=f-kcm
  new_namespace "$ns"
  deployment alice "$ns" web 100 Recreate
  statefulset bob "$ns" db 40
  job carol "$ns" batch 60
  wait_until 60 "20 pods" pods_reach "$ns" 20
  kc alice -n "$ns" set image deployment/web c=registry.invalid/pause:2 > /dev/null
  echo "alice set the image mid-rollout ($(pod_total "$ns") pods so far); restarting kube-controller-manager"
  start_kcm "$(kcm_mode)"
  echo "kube-controller-manager restarted"
  wait_until 120 "the second ReplicaSet to have its 100 pods, the StatefulSet 40 and the Job 60" bash -c \
    "kubectl --kubeconfig='$RUN/admin.kubeconfig' -n '$ns' get pods -o json | jq -e '
      ([.items[] | select(.spec.containers[0].image == \"registry.invalid/pause:2\")] | length) == 100 and
      ([.items[] | select(.metadata.labels.app == \"db\")] | length) == 40 and
      ([.items[] | select(.metadata.labels.app == \"batch\")] | length) == 60'"
  no_replicaset_loop "$ns" 10
  [ "$(pod_total "$ns")" -eq 200 ]
  audit_pods
}

@test "faults: the API server restarted during rollouts: the webhook is called again and every pod is stamped" {
  local ns=f-apiserver n
  new_namespace "$ns"
  # The controllers at their default pace (20 requests/s each), so that the restart surely lands in the
  # middle of the rollouts.
  KCM_EXTRA_ARGS="" start_kcm "$(kcm_mode)"
  deployment alice "$ns" web 300
  job bob "$ns" batch 100
  wait_until 60 "the first pod" pods_reach "$ns" 1
  n=$(pod_total "$ns")
  echo "restarting kube-apiserver with $n of 400 pods created"
  [ "$n" -lt 400 ]
  stop kube-apiserver
  start_apiserver
  echo "kube-apiserver ready again"
  wait_webhook "$ns"
  one_rollout "$ns" 400 180
  audit_pods
  start_kcm "$(kcm_mode)" # back to the run's KCM_EXTRA_ARGS
}
