# lib.bash: the cluster suite's lifecycle and kubectl helpers, sourced by run.sh and loaded by
# cluster.bats. Every process it starts is recorded in $RUN/pids/NAME.pid and stopped by that PID only.
#
# Expects (run.sh exports them): RUN, KUBE_BIN, ETCD, KWHOST, POLICY, WEBHOOKCONFIG, METADATA,
# API_PORT, ETCD_PORT, ETCD_PEER_PORT, KCM_PORT, WEBHOOK_PORT. Optional: POLICY_SERVER (the real
# policy-server decides in kwhost serve's place), POLICY_SERVER_POLICY, POLICY_SERVER_FLAGS (see ps_start).

# shellcheck disable=SC2034 # constants for cluster.bats
{
  PKI=$RUN/pki
  NS_LABEL=yunikorn-user-info-e2e=enabled
  ANNOTATION=yunikorn.apache.org/user.info
  ALICE_VALUE='{"user":"alice","groups":["devops","system:authenticated"]}'
  BOB_VALUE='{"user":"bob","groups":["qa","system:authenticated"]}'
  # Every test user's stamp, for the audits (load.bats, faults.bats, adoption.bats).
  STAMPS='{"alice":"{\"user\":\"alice\",\"groups\":[\"devops\",\"system:authenticated\"]}",
    "bob":"{\"user\":\"bob\",\"groups\":[\"qa\",\"system:authenticated\"]}",
    "carol":"{\"user\":\"carol\",\"groups\":[\"devops\",\"data\",\"system:authenticated\"]}",
    "airflow":"{\"user\":\"airflow\",\"groups\":[\"workflow-engines\",\"system:authenticated\"]}"}'
  IMAGE=registry.invalid/pause:1 # never pulled: there is no kubelet
  POLICY_SERVER_POLICY=${POLICY_SERVER_POLICY:-$(dirname "${POLICY:-policy.wasm}")/annotated-policy.wasm}
}

# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.25 s
wait_until() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$(($(date +%s) + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "timed out after ${timeout}s waiting for $what" >&2
      return 1
    fi
    sleep 0.25
  done
}

# start NAME COMMAND...: in its own session, output to $RUN/logs/NAME.log, no inherited descriptors
# (bats waits for whoever holds its fd 3, and, for a process started in setup_file, its fd 4: a scheduler
# started there and never restarted kept a filtered run waiting at its end).
start() {
  local name=$1
  shift
  mkdir -p "$RUN/logs" "$RUN/pids"
  setsid "$@" >> "$RUN/logs/$name.log" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$RUN/pids/$name.pid"
  readlink -f "$(command -v "$1")" > "$RUN/pids/$name.exe"
}

# ours PID NAME: the process is still the one start recorded (a stale PID file from a killed run must
# not make us signal whatever reuses that PID)
ours() {
  local exe
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)} # rebuilt since it started
  [ "$exe" = "$(cat "$RUN/pids/$2.exe" 2>/dev/null)" ] || [ "$exe" = "$(readlink -f "$(command -v setsid)")" ]
}

pod_total() { kc admin -n "$1" get pods --no-headers 2> /dev/null | wc -l; }
pods_reach() { [ "$(pod_total "$1")" -ge "$2" ]; }

# caught_up NS DEPLOYMENT: the deployment controller has acted on the Deployment's last change
caught_up() { kc admin -n "$1" get deployment "$2" -o json | jq -e '.status.observedGeneration == .metadata.generation' > /dev/null; }

# replicasets_not_carrying NS VALUE: the names of NS's ReplicaSets whose template annotation is not VALUE
replicasets_not_carrying() {
  kc admin -n "$1" get rs -o json | jq -r --arg k "$ANNOTATION" --arg v "$2" '.items[] | select(.spec.template.metadata.annotations[$k] != $v) | .metadata.name'
}

# no_replicaset_loop NS SECONDS: once the deployment controller has caught up with web, SECONDS later NS still
# holds exactly two ReplicaSets, both carrying alice's stamp: a controller loop (YUNIKORN-1627) would show as
# more ReplicaSets appearing.
no_replicaset_loop() {
  wait_until 60 "the deployment controller to catch up" caught_up "$1" web
  sleep "$2"
  echo "ReplicaSets $2 s later (name, replicas, template annotation):"
  kc admin -n "$1" get rs -o json |
    jq -r --arg k "$ANNOTATION" '.items[] | "  \(.metadata.name)\t\(.spec.replicas)\t\(.spec.template.metadata.annotations[$k])"'
  [ "$(kc admin -n "$1" get rs --no-headers | wc -l)" -eq 2 ]
  [ -z "$(replicasets_not_carrying "$1" "$ALICE_VALUE")" ]
}

# owned USER NS APIVERSION KIND NAME SPEC [POD-SPEC]: USER applies the KIND NAME whose spec is SPEC (lines
# indented by two) and a pod template labelled app=NAME and e2e-owner=USER (POD-SPEC: fields before its
# containers, such as "restartPolicy: Never, ")
owned() {
  kc "$1" -n "$2" apply -f - > /dev/null <<Y
apiVersion: $3
kind: $4
metadata: {name: $5}
spec:
$6
  template:
    metadata: {labels: {app: $5, e2e-owner: $1}}
    spec: {${7:-}containers: [{name: c, image: $IMAGE}]}
Y
}

# deployment USER NS NAME REPLICAS [STRATEGY]: USER's Deployment
deployment() {
  owned "$1" "$2" apps/v1 Deployment "$3" "  replicas: $4
  strategy: {type: ${5:-RollingUpdate}}
  selector: {matchLabels: {app: $3}}"
}

# job USER NS NAME PODS: USER's Job of PODS pods at once
job() { owned "$1" "$2" batch/v1 Job "$3" "  parallelism: $4
  completions: $4" "restartPolicy: Never, "; }

# statefulset USER NS NAME REPLICAS: USER's StatefulSet, its pods created in parallel
statefulset() {
  owned "$1" "$2" apps/v1 StatefulSet "$3" "  replicas: $4
  serviceName: $3
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: $3}}"
}

# stop NAME [TENTHS]: TERM, up to TENTHS tenths of a second (default 100: 10 s), then KILL; only the
# recorded PID, and only while it runs what we started.
stop() {
  local f=$RUN/pids/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && ours "$pid" "$1"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 "${2:-100}"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$f" "$RUN/pids/$1.exe"
}

stop_all() {
  local c
  for c in cost-kwhost cost-ps native-reject native-kubeflow-training native-argo-workflows native-kuberay native-external-submitters nscopier guard guard-ps kw-kubelet kw-policy-server kw-policy-server-ps kw-controller kw-svcproxy operator argo yunikorn-admission yunikorn slowproxy kwhost kwhost-ps kube-controller-manager kube-apiserver etcd; do stop "$c"; done
}

# die_with_log NAME MESSAGE: the last lines of a component's log, for a start-up that failed
die_with_log() {
  echo "$2; last lines of $RUN/logs/$1.log:" >&2
  tail -n 30 "$RUN/logs/$1.log" >&2 || true
  return 1
}

# kubeconfig FILE USER CREDENTIALS [NAMESPACE]: a kubeconfig for the test API server as USER, whose user entry
# holds CREDENTIALS (YAML lines indented by four)
kubeconfig() {
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
$3
contexts:
- name: e2e
  context: {cluster: e2e, user: $2${4:+, namespace: $4}}
current-context: e2e
KC
}

write_kubeconfig() { # user
  kubeconfig "$RUN/$1.kubeconfig" "$1" "    client-certificate: $PKI/$1.crt
    client-key: $PKI/$1.key"
}

# kc USER ARGS...: kubectl as USER (admin, alice, bob, airflow, binder)
kc() {
  local user=$1
  shift
  kubectl --kubeconfig="$RUN/$user.kubeconfig" --request-timeout=20s "$@"
}

curl_admin() {
  curl -sf --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"
}

start_etcd() {
  start etcd "$ETCD" --name e2e --data-dir "$RUN/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT"
  wait_until 30 "etcd" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" || die_with_log etcd "etcd did not start"
}

start_apiserver() {
  # MutatingAdmissionWebhook is the point; NamespaceLifecycle and ServiceAccount are what a real
  # cluster runs around it (the latter is why pods wait for the namespace's default service account).
  start kube-apiserver "$KUBE_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --authorization-mode=RBAC \
    --enable-admission-plugins=NamespaceLifecycle,ServiceAccount,MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
    --cert-dir="$RUN/apiserver-certs" \
    --profiling=false \
    --endpoint-reconciler-type=none
  wait_until 120 "kube-apiserver /readyz" curl_admin "https://127.0.0.1:$API_PORT/readyz" ||
    die_with_log kube-apiserver "kube-apiserver did not become ready"
}

# start_kcm MODE: MODE "sa" runs each controller as its own service account
# (--use-service-account-credentials=true); "single" runs them all as system:kube-controller-manager,
# which then needs cluster-admin (its bootstrap role cannot create ReplicaSets or Pods).
start_kcm() {
  local mode=$1 sa_creds
  case $mode in
    sa) sa_creds=true ;;
    single)
      sa_creds=false
      kc admin apply -f - > /dev/null <<Y
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-kcm-single-identity}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-controller-manager}
Y
      ;;
    *) echo "start_kcm: mode sa or single" >&2; return 2 ;;
  esac
  stop kube-controller-manager
  # KCM_EXTRA_ARGS: more flags, e.g. the load run's --kube-api-qps (the default 20 requests/s per
  # controller would measure the controller's client, not the webhook).
  local extra=()
  read -ra extra <<< "${KCM_EXTRA_ARGS:-}"
  start kube-controller-manager "$KUBE_BIN/kube-controller-manager" "${extra[@]}" \
    --kubeconfig="$RUN/kcm.kubeconfig" \
    --authentication-kubeconfig="$RUN/kcm.kubeconfig" --authorization-kubeconfig="$RUN/kcm.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$RUN/kcm-certs" \
    --leader-elect=false \
    --use-service-account-credentials="$sa_creds" \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --controllers='*'
  echo "$mode" > "$RUN/kcm.mode"
  wait_until 60 "kube-controller-manager /healthz" curl -skf --max-time 2 "https://127.0.0.1:$KCM_PORT/healthz" ||
    die_with_log kube-controller-manager "kube-controller-manager did not become healthy"
}

kcm_mode() { cat "$RUN/kcm.mode"; }

# start_kwhost SETTINGS_JSON: (re)starts the webhook with these settings. Every request is appended to
# $RUN/reviews.jsonl with the userInfo exactly as the API server sent it. With POLICY_SERVER, the real
# policy-server decides (ps_start).
start_kwhost() {
  local settings=${1:-"{}"}
  stop kwhost
  echo "--- settings $settings" >> "$RUN/logs/kwhost.log"
  echo "$settings" > "$RUN/kwhost.settings"
  if [ -n "${POLICY_SERVER:-}" ]; then
    jq -n --argjson s "$settings" '{"yunikorn-user-info": {module: "", allowedToMutate: true, settings: $s}}' > "$RUN/kwhost.policies.yml"
    ps_start kwhost "$RUN/kwhost.policies.yml" "127.0.0.1:$WEBHOOK_PORT" "$PKI/webhook.crt" "$PKI/webhook.key" "$RUN/reviews.jsonl" ||
      die_with_log kwhost-ps "policy-server did not start"
    return
  fi
  start kwhost "$KWHOST" serve --policy "$POLICY" --allow-unannotated --settings-json "$settings" \
    --cert-file "$PKI/webhook.crt" --key-file "$PKI/webhook.key" \
    --listen "127.0.0.1:$WEBHOOK_PORT" --record "$RUN/reviews.jsonl"
  if ! wait_until 30 "kwhost serve /healthz" curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$WEBHOOK_PORT/healthz"; then
    die_with_log kwhost "kwhost serve did not start"
  fi
}

# ps_start NAME POLICIES LISTEN CERT KEY RECORD: the real policy-server ($POLICY_SERVER, built from Kubewarden's
# sources) with the policies of POLICIES (policies.yml as the controller writes it; every module becomes
# $POLICY_SERVER_POLICY, the module `kwctl annotate` wrote), on loopback over HTTP as NAME-ps, behind
# `kwhost front` as NAME, which holds the certificate the API server checks at LISTEN and records each review in
# RECORD as kwhost serve does: every decision is policy-server's. POLICY_SERVER_FLAGS adds flags
# (--sigstore-trust-config FILE, to start without network); PS_CA and PS_TLS_NAME, the CA and the name its
# readiness check verifies (default the suite's CA and 127.0.0.1). Fails when policy-server exits (it refused the
# policies: a pod of it would crash-loop) or does not answer within 60 s.
ps_start() {
  local name=$1 policies=$2 listen=$3 cert=$4 key=$5 record=$6 port ready extra=() i
  port=${PS_PORT:-$((WEBHOOK_PORT + 1000))}
  ready=${PS_READY_PORT:-$((WEBHOOK_PORT + 1001))}
  read -ra extra <<< "${POLICY_SERVER_FLAGS:-}"
  if [ ! -f "$POLICY_SERVER_POLICY" ] || [ "$POLICY_SERVER_POLICY" -ot "$POLICY" ]; then
    echo "$POLICY_SERVER_POLICY is missing or older than $POLICY: make annotated-policy.wasm (kwctl annotate)" >> "$RUN/logs/$name-ps.log"
    return 1
  fi
  stop "$name"
  stop "$name-ps"
  for i in "$port" "$ready"; do
    if (exec 3<> "/dev/tcp/127.0.0.1/$i") 2> /dev/null; then
      echo "127.0.0.1:$i is taken: policy-server could not listen there (set PS_PORT, PS_READY_PORT)" >> "$RUN/logs/$name-ps.log"
      return 1
    fi
  done
  jq --arg m "file://$POLICY_SERVER_POLICY" 'map_values(.module = $m)' "$policies" > "$RUN/$name.ps-policies.yml"
  mkdir -p "$RUN/$name-ps"
  start "$name-ps" "$POLICY_SERVER" --policies "$RUN/$name.ps-policies.yml" --addr 127.0.0.1 --port "$port" \
    --readiness-probe-port "$ready" --policies-download-dir "$RUN/$name-ps" --sigstore-cache-dir "$RUN/$name-ps/sigstore" \
    --ignore-kubernetes-connection-failure --workers 2 --log-fmt text "${extra[@]}"
  start "$name" "$KWHOST" front --upstream "http://127.0.0.1:$port" --ready "http://127.0.0.1:$ready/readiness" \
    --cert-file "$cert" --key-file "$key" --listen "$listen" --record "$record"
  for i in $(seq 1 240); do
    if curl -sf --max-time 2 --cacert "${PS_CA:-$PKI/ca.crt}" --resolve "${PS_TLS_NAME:-127.0.0.1}:${listen##*:}:${listen%:*}" \
      "https://${PS_TLS_NAME:-127.0.0.1}:${listen##*:}/readyz" > /dev/null 2>&1; then
      echo "policy-server answers after $i polls" >> "$RUN/logs/$name.log"
      return 0
    fi
    if ! kill -0 "$(cat "$RUN/pids/$name-ps.pid")" 2> /dev/null; then
      rm -f "$RUN/pids/$name-ps.pid" "$RUN/pids/$name-ps.exe"
      stop "$name"
      return 1
    fi
    sleep 0.25
  done
  stop "$name"
  stop "$name-ps"
  return 1
}

# register_webhook [no-conditions] [custom-resources] [without:RESOURCE]...: the MutatingWebhookConfiguration generated from
# metadata.yml, with the matchConditions of $MATCH_CONDITIONS (examples/default.yaml), for the namespaces
# labelled $NS_LABEL (the control plane's own namespaces stay out of it). "no-conditions" leaves the
# matchConditions out; "without:pods/binding" leaves a resource out of the rules, to show the hole its rule
# closes; "custom-resources" adds the rules of $OPERATOR_EXAMPLES for their custom resources (rules 11-13).
# $RUN/webhook-configuration.json is what is registered, $RUN/webhook.variant says which.
register_webhook() {
  local conditions=(-match-conditions "$MATCH_CONDITIONS") drop=() extra=() arg
  for arg in "$@"; do
    case $arg in
      no-conditions) conditions=() ;;
      custom-resources) extra=(-extra-rules "$OPERATOR_EXAMPLES") ;;
      without:*) drop+=("${arg#without:}") ;;
      *) echo "register_webhook: unknown argument $arg" >&2; return 2 ;;
    esac
  done
  "$WEBHOOKCONFIG" -metadata "$METADATA" -url "https://127.0.0.1:$WEBHOOK_PORT/validate/yunikorn-user-info" \
    -ca-file "$PKI/ca.crt" -namespace-label "$NS_LABEL" "${conditions[@]}" "${extra[@]}" |
    jq '.webhooks[0].rules |= (map(.resources -= $ARGS.positional) | map(select(.resources | length > 0)))' \
      --args "${drop[@]}" > "$RUN/webhook-configuration.json"
  kc admin apply -f "$RUN/webhook-configuration.json" > /dev/null
  echo "${*:-default}" > "$RUN/webhook.variant"
}

# The test users' groups (alice: devops, bob: qa, airflow: workflow-engines), as RBAC subjects.
TEST_USER_GROUPS='- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: devops}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: qa}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: workflow-engines}'

# cluster_role NAME RULES SUBJECTS: the ClusterRole NAME with RULES, bound to SUBJECTS (YAML list items)
cluster_role() {
  kc admin apply -f - > /dev/null <<Y
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: $1}
rules:
$2
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $1}
subjects:
$3
Y
}

# e2e RBAC: the users may do anything with the kinds the policy sees, in any namespace; nothing else.
setup_rbac() {
  cluster_role e2e-workloads '- apiGroups: [""]
  resources: [pods, replicationcontrollers]
  verbs: ["*"]
- apiGroups: [apps]
  resources: [deployments, replicasets, statefulsets, daemonsets]
  verbs: ["*"]
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: ["*"]
# the operators'"'"' custom resources of the custom-resource scenario (test/cluster/crds.yaml)
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications, scheduledsparkapplications]
  verbs: ["*"]
- apiGroups: [ray.io]
  resources: [rayclusters, rayjobs, rayservices]
  verbs: ["*"]
- apiGroups: [""]
  resources: [events]
  verbs: [get, list, watch]' "$TEST_USER_GROUPS"
  # The Ray operator's account (impersonated by the custom-resource scenario; no operator runs here) creates
  # the RayCluster of a RayJob.
  cluster_role e2e-kuberay-operator '- apiGroups: [ray.io]
  resources: [rayclusters]
  verbs: ["*"]' '- {kind: ServiceAccount, name: kuberay-operator, namespace: kube-system}'
  # binder may do one thing: create pods/binding, as a scheduler (or a tenant's own scheduler) may.
  cluster_role e2e-binder '- apiGroups: [""]
  resources: [pods/binding]
  verbs: [create]' '- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: binders}'
}

sa_exists() { kc admin -n "$1" get serviceaccount default; }

# new_namespace NAME [unlabelled]: a namespace the webhook covers (unless "unlabelled"), ready for pods
# (the ServiceAccount admission plugin refuses pods until the default service account exists).
new_namespace() {
  kc admin delete namespace "$1" --ignore-not-found --wait=false > /dev/null
  wait_until 60 "namespace $1 to be gone" bash -c "! kubectl --kubeconfig='$RUN/admin.kubeconfig' get namespace '$1'"
  kc admin create namespace "$1" > /dev/null
  if [ "${2:-}" != unlabelled ]; then kc admin label namespace "$1" "$NS_LABEL" > /dev/null; fi
  wait_until 60 "the default service account in $1" sa_exists "$1"
}

# probe_value USER NS: the annotation of a Pod USER would create in NS now (server-side dry run)
probe_value() {
  kc "$1" -n "$2" run e2e-probe --image="$IMAGE" --restart=Never --dry-run=server -o json 2>/dev/null |
    jq -r --arg k "$ANNOTATION" '.metadata.annotations[$k] // empty'
}

webhook_live() { [ "$(probe_value alice "$1")" = "$ALICE_VALUE" ]; }

# wait_webhook NS: webhook configurations take effect asynchronously; poll with a dry run until the
# policy's stamp appears.
wait_webhook() {
  wait_until 60 "the webhook to stamp dry-run pods in $1" webhook_live "$1"
}

# audit_pods: every pod in every namespace the webhook covers carries exactly the stamp of the user in
# its e2e-owner label (its creator, or the owner of the template it came from). Prints the counts and
# the first offenders; fails on a single pod that is missing its stamp, carries another, or has no owner.
audit_pods() {
  local namespaces report
  namespaces=$(kc admin get namespaces -l "$NS_LABEL" -o json | jq -c '[.items[].metadata.name]')
  report=$(kc admin get pods -A -o json --chunk-size=500 | jq -c --argjson ns "$namespaces" --argjson stamps "$STAMPS" \
    --arg k "$ANNOTATION" '
    [.items[] | select(.metadata.namespace as $n | $ns | index($n)) |
      {pod: (.metadata.namespace + "/" + .metadata.name), owner: (.metadata.labels["e2e-owner"] // null),
       value: ((.metadata.annotations // {})[$k] // null)} |
      .want = (if .owner then $stamps[.owner] else null end) |
      .verdict = (if .owner == null or .want == null then "unowned" elif .value == null then "missing"
                  elif .value != .want then "wrong" else "ok" end)] |
    {pods: length, ok: map(select(.verdict == "ok")) | length,
     missing: map(select(.verdict == "missing")) | length, wrong: map(select(.verdict == "wrong")) | length,
     unowned: map(select(.verdict == "unowned")) | length, offenders: map(select(.verdict != "ok")) | .[:5]}')
  echo "audit: $(jq -c 'del(.offenders)' <<< "$report") in $(jq -r 'join(",")' <<< "$namespaces")"
  jq -c '.offenders[]' <<< "$report" | sed 's/^/  offender: /'
  [ "$(jq '.missing + .wrong + .unowned' <<< "$report")" -eq 0 ] && [ "$(jq .pods <<< "$report")" -gt 0 ]
}

# kwhost_cpu_ticks: the webhook process's user + system CPU time so far, in clock ticks
kwhost_cpu_ticks() {
  awk '{print $14 + $15}' "/proc/$(cat "$RUN/pids/kwhost.pid")/stat"
}

# webhook_metrics FILE: the API server's admission webhook histogram for our webhook, into FILE
webhook_metrics() {
  curl_admin "https://127.0.0.1:$API_PORT/metrics" |
    grep '^apiserver_admission_webhook_admission_duration_seconds_bucket{.*name="yunikorn-user-info-e2e' > "$1" || true
}

# --- objects the scenarios create and read (cluster.bats, guard.bats) ---

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

# binding_json POD [VALUE]: a Binding of POD to e2e-node, carrying VALUE as the annotation when given
binding_json() {
  jq -n --arg name "$1" --arg v "${2:-}" --arg k "$ANNOTATION" \
    '{apiVersion: "v1", kind: "Binding", metadata: ({name: $name} + (if $v == "" then {} else {annotations: {($k): $v}} end)),
      target: {apiVersion: "v1", kind: "Node", name: "e2e-node"}}'
}

# bind USER NS POD [VALUE]: USER creates the pods/POD/binding subresource, as a scheduler does
bind() {
  local f
  f=$(mktemp "$BATS_TEST_TMPDIR/binding.XXXXXX")
  binding_json "$3" "${4:-}" > "$f"
  kc "$1" create --raw "/api/v1/namespaces/$2/pods/$3/binding" -f "$f"
}

# ensure_node: the Node e2e-node (there is no kubelet), reporting allocatable resources
ensure_node() {
  kc admin get node e2e-node > /dev/null 2>&1 || kc admin apply -f - > /dev/null <<'Y'
apiVersion: v1
kind: Node
metadata:
  name: e2e-node
  labels: {kubernetes.io/hostname: e2e-node, kubernetes.io/os: linux}
Y
  # Allocatable resources, as a kubelet reports them: the API server refuses a pods/resize that the
  # node cannot hold before it looks at anything else.
  kc admin patch node e2e-node --subresource=status --type=merge \
    -p '{"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}' > /dev/null
}

pod_count() { kc admin -n "$1" get pods --no-headers ${2:+-l "$2"} 2> /dev/null | wc -l; }

pods_at_least() { [ "$(pod_count "$1" "${3:-}")" -ge "$2" ]; }
