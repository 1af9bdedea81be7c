# yunikorn.bash: helpers of yunikorn.bats, the YuniKorn stage: Apache YuniKorn's scheduler against the cluster
# suite's control plane. Loaded after lib.bash. YuniKorn runs as the ServiceAccount yunikorn/yunikorn-admin
# (a token kubeconfig), with the queues below, on two fake Nodes; its REST API is on 127.0.0.1:9080 of the
# suite's private network namespace (yunikorn.sh). Its admission controller (scenarios 13-15, make
# bench-yunikorn) runs as yunikorn/yunikorn-admission-controller, helpers at the end.
#
# Expects (yunikorn.sh and run.sh export them): YUNIKORN_VERSION, YUNIKORN_BIN, YUNIKORN_TABLE and lib.bash's.

# shellcheck disable=SC2034 # constants for yunikorn.bats
{
  YK_NS=yunikorn
  YK_USER=system:serviceaccount:yunikorn:yunikorn-admin
  YK_REST=http://127.0.0.1:9080/ws/v1
  # The namespaces of the scenarios: two the webhook covers, one it does not (the control run).
  NS_A=yk-a NS_B=yk-b NS_OFF=yk-off
  YK_TASK_GROUPS=yunikorn.apache.org/task-groups
  YK_TASK_GROUP_NAME=yunikorn.apache.org/task-group-name
  YK_READY='nodes recovery is successful|scheduler state initialized'
}

# The queues: root admits nobody but admin, so that a queue's ACL decides (a child queue is allowed when its
# parent allows). root.alice: alice alone; root.bobs: bob, one application at a time; root.sandbox: anyone.
# One placement rule, provided without create: an application goes to the queue its pod names or is rejected
# (later versions otherwise fall through to a default rule and a queue the ACL would not have picked).
yk_queues() {
  cat <<'Q'
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: admin
        queues:
          - name: alice
            submitacl: alice
          - name: bobs
            submitacl: bob
            limits:
              - limit: bob runs one application at a time
                users: [bob]
                maxapplications: 1
          - name: sandbox
            submitacl: "*"
Q
}

# What YuniKorn's scheduler and its admission controller both read: its configuration and priority classes.
YK_CONFIG_RULES='- apiGroups: [""]
  resources: [configmaps, namespaces]
  verbs: [get, watch, list]
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [get, watch, list]'

# yk_install: the namespace, account, RBAC, ConfigMaps and Nodes YuniKorn needs, and its kubeconfig.
yk_install() {
  kc admin create namespace "$YK_NS" > /dev/null
  kc admin -n "$YK_NS" create serviceaccount yunikorn-admin > /dev/null
  # k8shim's deployments/scheduler/yunikorn-rbac.yaml, plus volumeattachments (v1.8.0 waits for that informer
  # forever without it) and the cluster roles of kube-scheduler and volume-scheduler.
  kc admin apply -f - > /dev/null <<Y
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-yunikorn}
rules:
$YK_CONFIG_RULES
- apiGroups: [""]
  resources: [pods]
  verbs: [get, watch, list, create, patch, update, delete]
- apiGroups: [storage.k8s.io]
  resources: [volumeattachments]
  verbs: [get, watch, list]
- apiGroups: [yunikorn.apache.org, sparkoperator.k8s.io]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-yunikorn, namespace: $YK_NS}
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, watch, list, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-yunikorn, namespace: $YK_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-yunikorn}
subjects:
- {kind: ServiceAccount, name: yunikorn-admin, namespace: $YK_NS}
Y
  local role
  for role in e2e-yunikorn system:kube-scheduler system:volume-scheduler; do
    kc admin create clusterrolebinding "e2e-yunikorn-${role##*:}" --clusterrole="$role" \
      --serviceaccount="$YK_NS:yunikorn-admin" > /dev/null
  done
  # The stand-in operator of the custom-resource scenario creates pods from a RayCluster, as KubeRay would.
  kc admin create clusterrolebinding e2e-yunikorn-operator-pods --clusterrole=e2e-workloads \
    --serviceaccount=kube-system:kuberay-operator > /dev/null
  kc admin -n "$YK_NS" create configmap yunikorn-defaults > /dev/null
  kc admin -n "$YK_NS" create configmap yunikorn-configs --from-file=queues.yaml=<(yk_queues) > /dev/null

  local token
  token=$(kc admin -n "$YK_NS" create token yunikorn-admin --duration=24h)
  cat > "$RUN/yunikorn.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: yunikorn
  user: {token: "$token"}
contexts:
- name: e2e
  context: {cluster: e2e, user: yunikorn}
current-context: e2e
KC

  # Nodes without a kubelet: allocatable and a Ready condition are all YuniKorn reads. The API server taints
  # them not-ready and the node lifecycle controller unreachable: the scenarios' pods tolerate everything.
  local node
  for node in yk-node-1 yk-node-2; do
    kc admin create -f - > /dev/null <<Y
apiVersion: v1
kind: Node
metadata:
  name: $node
  labels: {kubernetes.io/hostname: $node, kubernetes.io/os: linux}
Y
    kc admin patch node "$node" --subresource=status --type=merge -p '{"status": {
      "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
      "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
      "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "e2e",
        "lastHeartbeatTime": "'"$(date -u +%FT%TZ)"'", "lastTransitionTime": "'"$(date -u +%FT%TZ)"'"}]}}' > /dev/null
  done
}

yk_rest() { curl -sf --max-time 5 "$YK_REST$1"; }

yk_nodes_ready() { [ "$(yk_rest /partition/default/nodes | jq 'length')" -ge 2 ]; }

# yk_start: the scheduler, no flags; its configuration comes from the environment (an in-cluster
# configuration wins when KUBERNETES_SERVICE_HOST is set: make sure it is not) and the ConfigMaps. Ready when
# it logs that it recovered its state (v1.4.0: "nodes recovery is successful"; v1.8.0 "scheduler state
# initialized") and its REST API lists the nodes, within TIMEOUT seconds (default 90).
yk_start() {
  local timeout=${1:-90}
  local log=$RUN/logs/yunikorn.log before
  before=$(grep -cE "$YK_READY" "$log" 2> /dev/null || true)
  before=${before:-0}
  echo "--- start $(date -u +%T)" >> "$log"
  (
    unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
    # shellcheck disable=SC2030 # the subshell is the point: the environment is the scheduler's alone
    export KUBECONFIG=$RUN/yunikorn.kubeconfig NAMESPACE=$YK_NS
    start yunikorn "$YUNIKORN_BIN/yunikorn-scheduler"
  )
  local t0=$SECONDS
  if ! wait_until "$timeout" "YuniKorn to recover its nodes" yk_recovered "$before"; then
    yk_log_tail
    return 1
  fi
  echo "YuniKorn v$YUNIKORN_VERSION up in $((SECONDS - t0)) s"
}
yk_recovered() {
  local n
  n=$(grep -cE "$YK_READY" "$RUN/logs/yunikorn.log" 2> /dev/null || true)
  [ "${n:-0}" -gt "$1" ] && yk_nodes_ready
}

yk_stop() { stop yunikorn; }

# yk_log_tail: the scheduler's last log lines, without its stack traces and the lines it repeats every second
yk_log_tail() {
  echo "last lines of $RUN/logs/yunikorn.log (stack traces and repeated task events left out):" >&2
  grep -vE '^(\s|github\.com/)|task event is not published|Scheduler is not healthy' "$RUN/logs/yunikorn.log" 2> /dev/null |
    tail -n 25 | cut -c1-400 >&2 || true
}

# yk_pod NAME APP QUEUE [VALUE] [JQ-FILTER]: a Pod for YuniKorn (its application ID and queue as labels), with
# VALUE as its annotation when given, then JQ-FILTER applied
yk_pod() {
  jq -n --arg name "$1" --arg app "$2" --arg q "$3" --arg v "${4:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" '{
    apiVersion: "v1", kind: "Pod",
    metadata: ({name: $name, labels: {applicationId: $app, queue: $q}} + (if $v == "" then {} else {annotations: {($k): $v}} end)),
    spec: {schedulerName: "yunikorn", tolerations: [{operator: "Exists"}],
      containers: [{name: "c", image: $img, resources: {requests: {cpu: "100m", memory: "64Mi"}}}]}}' | jq "${5:-.}"
}

# submit USER NS FILE: USER creates the object in FILE; sets status, stderr (bats run)
# shellcheck disable=SC2154 # status and stderr are set by bats' run
submit() {
  run --separate-stderr kc "$1" -n "$2" create -f "$3"
  echo "$1: create $(jq -r '.kind + " " + .metadata.name' "$3") in $2 -> exit $status; stderr: ${stderr:-<none>}"
}

pod_json_of() { kc admin -n "$1" get pod "$2" -o json; }
node_of() { kc admin -n "$1" get pod "$2" -o jsonpath='{.spec.nodeName}' 2> /dev/null; }
is_bound() { [ -n "$(node_of "$1" "$2")" ]; }
is_failed() { [ "$(kc admin -n "$1" get pod "$2" -o jsonpath='{.status.phase}' 2> /dev/null)" = Failed ]; }
wait_bound() { wait_until "${3:-60}" "pod $1/$2 to be bound" is_bound "$1" "$2"; }
wait_failed() { wait_until "${3:-60}" "pod $1/$2 to fail" is_failed "$1" "$2"; }

# stamp_user NS POD: the user in the pod's annotation (<none> without one)
stamp_user() {
  kc admin -n "$1" get pod "$2" -o json | jq -r --arg k "$ANNOTATION" '(.metadata.annotations // {})[$k] // "" |
    if . == "" then "<none>" else (try (fromjson | .user) catch "<invalid>") end'
}

# events NS POD: the reasons of the events about this pod (selected by uid: names repeat), sorted, unique
events() {
  local uid
  uid=$(kc admin -n "$1" get pod "$2" -o jsonpath='{.metadata.uid}')
  kc admin -n "$1" get events -o json | jq -r --arg uid "$uid" '[.items[] | select(.involvedObject.uid == $uid) | .reason] | unique | join(",")'
}

# outcome NS POD: one word for what YuniKorn did with the pod: bound, rejected (Failed, ApplicationRejected),
# failed:REASON or pending
outcome() {
  kc admin -n "$1" get pod "$2" -o json | jq -r 'if (.spec.nodeName // "") != "" then "bound"
    elif .status.phase == "Failed" then (if .status.reason == "ApplicationRejected" then "rejected" else "failed:" + (.status.reason // "?") end)
    else "pending" end'
}

# app_user QUEUE APP: the user of the application, from YuniKorn's REST API (<none> when it has no such app)
app_field() {
  local out
  out=$(yk_rest "/partition/default/queue/$1/application/$2") || { echo "<none>"; return 0; }
  jq -r --arg f "$3" '.[$f] // "<none>"' <<< "$out" 2> /dev/null || echo "<none>"
}
app_user() { app_field "$1" "$2" user; }
app_state() { app_field "$1" "$2" applicationState; }
# app_pods QUEUE APP: the pods of the application's allocations (allocation keys are pod UIDs), comma-separated
app_pods() {
  local uids
  uids=$({ yk_rest "/partition/default/queue/$1/application/$2" || echo '{}'; } | jq -c '[.. | objects | .allocationKey? // empty]')
  kc admin get pods -A -o json | jq -r --argjson uids "$uids" '[.items[] | select(.metadata.uid as $u | $uids | index($u)) | .metadata.name] | sort | join(",")'
}
app_known() { [ "$(app_user "$1" "$2")" != "<none>" ]; }

# usage_apps USER: the applications YuniKorn charges to USER (its user-usage tracker), comma-separated
usage_apps() {
  { yk_rest "/partition/default/usage/user/$1" || echo '{}'; } |
    jq -r '[.. | objects | .runningApplications? // empty | .[]] | unique | join(",")'
}

# record SCENARIO EXPECTED OBSERVED: a row of the stage's table (yunikorn.sh prints it at the end)
record() {
  printf 'v%s\t%s\t%s\t%s\n' "$YUNIKORN_VERSION" "$1" "$2" "$3" >> "$YUNIKORN_TABLE"
  echo "table: $1 | expected: $2 | observed: $3"
}

# note_stamp NS POD: remembers the pod's annotation as created, for the final check that nothing changed it
note_stamp() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$(kc admin -n "$1" get pod "$2" -o json | jq -c --arg k "$ANNOTATION" '(.metadata.annotations // {})[$k]')" \
    >> "$RUN/yk-stamps.tsv"
}

# --- YuniKorn's own admission controller beside the policy (the coexistence scenarios) ---
# It registers its webhooks by Service reference (yunikorn/yunikorn-admission-controller-service, port 443 unless
# told otherwise) and listens on :9089. There is no kube-proxy here: the Service gets a fixed ClusterIP, which
# the suite adds to lo of its private network namespace, and port 9089, and its webhooks are patched to that
# port. The API server (without --enable-aggregator-routing) dials a webhook Service at its ClusterIP and port.
# shellcheck disable=SC2034
{
  YK_AC_SVC=yunikorn-admission-controller-service
  YK_AC_IP=10.0.0.89 # inside --service-cluster-ip-range 10.0.0.0/24
  YK_AC_PORT=9089
  YK_AC_SA=yunikorn-admission-controller
  YK_AC_MUTATING=yunikorn-admission-controller-mutations
  YK_AC_VALIDATING=yunikorn-admission-controller-validations
  YK_AC_HOOK=admission-webhook.yunikorn.mutate-pods
  # the name Kubewarden gives a ClusterAdmissionPolicy's webhook configuration (clusterwide-<name>; newer
  # controllers kw.<kind>.<name>): it sorts before YuniKorn's, so the API server calls the policy first
  POLICY_FIRST_NAME=clusterwide-yunikorn-user-info
  NS_CO=yk-co
}

# yk_ac_install: its account (webhook configurations, its Secret, the ConfigMaps), the empty Secret it keeps
# its CA in, the Service and the ClusterIP on lo. Fails when lo cannot take the address (no CAP_NET_ADMIN).
yk_ac_install() {
  ip addr show dev lo | grep -q "inet $YK_AC_IP/" || ip addr add "$YK_AC_IP/32" dev lo || return 1
  kc admin -n "$YK_NS" create serviceaccount "$YK_AC_SA" > /dev/null
  kc admin -n "$YK_NS" create secret generic admission-controller-secrets > /dev/null
  cluster_role e2e-yunikorn-admission "$YK_CONFIG_RULES
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingwebhookconfigurations, validatingwebhookconfigurations]
  verbs: [get, watch, list, create, update, patch]" "- {kind: ServiceAccount, name: $YK_AC_SA, namespace: $YK_NS}"
  kc admin apply -f - > /dev/null <<Y
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-yunikorn-admission, namespace: $YK_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-yunikorn}
subjects:
- {kind: ServiceAccount, name: $YK_AC_SA, namespace: $YK_NS}
---
apiVersion: v1
kind: Service
metadata: {name: $YK_AC_SVC, namespace: $YK_NS}
spec:
  clusterIP: $YK_AC_IP
  ports: [{name: https, port: $YK_AC_PORT, targetPort: $YK_AC_PORT}]
  selector: {app: yunikorn-admission-controller}
Y
  local token
  token=$(kc admin -n "$YK_NS" create token "$YK_AC_SA" --duration=24h)
  sed "s|token: \".*\"|token: \"$token\"|" "$RUN/yunikorn.kubeconfig" > "$RUN/yunikorn-admission.kubeconfig"
}

# yk_ac_config KEY=VALUE...: sets admissionController.* keys of the yunikorn-configs ConfigMap (the admission
# controller hot-reloads it) and waits until it has logged the reloaded configuration
yk_ac_config() {
  local patch='{}' kv before
  for kv in "$@"; do patch=$(jq -c --arg k "${kv%%=*}" --arg v "${kv#*=}" '.[$k] = $v' <<< "$patch"); done
  before=$(grep -c 'Loaded admission controller configuration' "$RUN/logs/yunikorn-admission.log" 2> /dev/null || true)
  kc admin -n "$YK_NS" patch configmap yunikorn-configs --type=merge -p "{\"data\": $patch}" > /dev/null
  wait_until 30 "the admission controller to reload its configuration" \
    bash -c "[ \$(grep -c 'Loaded admission controller configuration' '$RUN/logs/yunikorn-admission.log') -gt ${before:-0} ]"
  echo "YuniKorn admission controller: $patch"
}

# yk_ac_patch_port: YuniKorn's two webhooks to the Service's port (it checks name, namespace and path of its
# Service reference when it starts, never the port: the patch survives its restarts)
yk_ac_patch_port() {
  local c
  for c in "mutatingwebhookconfiguration $YK_AC_MUTATING" "validatingwebhookconfiguration $YK_AC_VALIDATING"; do
    # shellcheck disable=SC2086
    kc admin patch $c --type=json -p "[{\"op\": \"add\", \"path\": \"/webhooks/0/clientConfig/service/port\", \"value\": $YK_AC_PORT}]" > /dev/null
  done
}

# yk_ac_live: a dry-run pod of alice's without a schedulerName comes back with YuniKorn's (its webhook answered)
yk_ac_live() {
  [ "$(kc alice -n "$NS_CO" run e2e-ac-probe --image="$IMAGE" --restart=Never --dry-run=server -o jsonpath='{.spec.schedulerName}' 2> /dev/null)" = yunikorn ]
}

# yk_ac_start: YuniKorn's admission controller (no flags: KUBECONFIG and NAMESPACE, like the scheduler), ready
# when its webhooks are registered, patched to the Service's port, and answering the API server
yk_ac_start() {
  (
    unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
    # shellcheck disable=SC2031 # the subshell is the point: the environment is the controller's alone
    export KUBECONFIG=$RUN/yunikorn-admission.kubeconfig NAMESPACE=$YK_NS
    start yunikorn-admission "$YUNIKORN_BIN/yunikorn-admission-controller"
  )
  local t0=$SECONDS
  wait_until 60 "the admission controller to start" grep -q 'the admission controller started' "$RUN/logs/yunikorn-admission.log" ||
    die_with_log yunikorn-admission "YuniKorn's admission controller did not start" || return 1
  yk_ac_patch_port
  wait_until 30 "YuniKorn's webhook to answer" yk_ac_live || die_with_log yunikorn-admission "YuniKorn's webhook does not answer" || return 1
  echo "YuniKorn's admission controller v$YUNIKORN_VERSION up in $((SECONDS - t0)) s"
}

# yk_ac_stop: the admission controller and its webhook configurations (they cover every namespace)
yk_ac_stop() {
  stop yunikorn-admission
  kc admin delete mutatingwebhookconfiguration "$YK_AC_MUTATING" --ignore-not-found > /dev/null
  kc admin delete validatingwebhookconfiguration "$YK_AC_VALIDATING" --ignore-not-found > /dev/null
}

# policy_order ORDER [REINVOCATION]: the policy's webhook configuration (the one register_webhook made) named so
# that the API server calls it after YuniKorn's (ORDER last: yunikorn-user-info-e2e sorts after
# yunikorn-admission-controller-mutations) or before it (first: $POLICY_FIRST_NAME), with reinvocationPolicy
# REINVOCATION (default Never). The new one is applied before the old one is deleted: the policy never leaves.
policy_order() {
  local name=yunikorn-user-info-e2e other=$POLICY_FIRST_NAME
  if [ "$1" = first ]; then name=$POLICY_FIRST_NAME other=yunikorn-user-info-e2e; fi
  jq --arg n "$name" --arg r "${2:-Never}" '.metadata.name = $n | .webhooks[0].reinvocationPolicy = $r' \
    "$RUN/webhook-configuration.json" | kc admin apply -f - > /dev/null
  kc admin delete mutatingwebhookconfiguration "$other" --ignore-not-found > /dev/null
  if [ "$1" = last ] && [ "${2:-Never}" = Never ]; then echo default; else echo "order:$1:${2:-Never}"; fi > "$RUN/webhook.variant"
}

# policy_calls NAME: how many times the policy was called for the pod NAME in $NS_CO (reinvocations count)
policy_calls() {
  jq -c --arg ns "$NS_CO" --arg n "$1" 'select(.namespace == $ns and .name == $n and .kind == "Pod")' "$RUN/reviews.jsonl" | wc -l
}
# policy_stamped NAME: the policy's (last) answer for the pod NAME patched the annotation: yes or no
policy_stamped() {
  jq -r --arg ns "$NS_CO" --arg n "$1" --arg k "${ANNOTATION//\//~1}" 'select(.namespace == $ns and .name == $n and .kind == "Pod") |
    if any(.patch[]?; .path | contains($k)) or any(.patch[]?; .path == "/metadata/annotations") then "yes" else "no" end' "$RUN/reviews.jsonl" | head -n 1
}
