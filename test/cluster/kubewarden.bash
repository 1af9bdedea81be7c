# kubewarden.bash: helpers of kubewarden.bats, the Kubewarden stage: Kubewarden's own controller reconciles the
# project's ClusterAdmissionPolicies against the cluster suite's control plane, and the API server calls the
# webhook configuration the controller wrote. Loaded after lib.bash; everything runs in the suite's private network
# namespace (kubewarden.sh), where the Services' ClusterIPs are added to lo.
#
# What stands in for what a cluster would have (there is no kubelet, no kube-proxy, no container runtime):
# - Helm: kw_chart fills in the few template expressions of the chart files build-kubewarden.sh copied from the
#   controller's module (its RBAC, its Service, its webhook configurations), as `helm install` with the chart's
#   defaults would (release kubewarden-controller in namespace kubewarden); the chart's certificates (generated with
#   Helm's genCA) are made here with openssl: EC P-256, as the chart makes them.
# - kube-proxy: svcproxy, from the controller webhook Service's ClusterIP:443 to the controller's webhook port.
# - the kubelet and the policy-server container: kw_kubelet_loop (a background process), which serves each new
#   policy-server pod's configuration with `kwhost serve` (the project's stand-in for policy-server) from what the
#   controller generated, the ConfigMap's policies.yml and the Secret's certificate, at the Service's ClusterIP and
#   port, then marks the pod Ready once it answers, as a kubelet would after its readiness probe.
#
# Expects (kubewarden.sh and run.sh export them): KW_VERSION, KW_BIN, SVCPROXY and lib.bash's.

# shellcheck disable=SC2034 # constants for kubewarden.bats
{
  KW_HERE=${KW_HERE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
  KW_ROOT=$(cd "$KW_HERE/../.." && pwd)
  KW_NS=kubewarden
  KW_RELEASE=kubewarden-controller # the chart's fullname for the release name users give it
  KW_SA=kubewarden-controller
  KW_SVC=kubewarden-controller-webhook-service
  KW_WEBHOOK_PORT=${KW_WEBHOOK_PORT:-9443} # the chart's ports.webhook
  KW_PROBE_PORT=${KW_PROBE_PORT:-18081}
  KW_PKI=$RUN/kw-pki
  KW_PS_NAME=default          # the PolicyServer the stand-in serves (kw_ps_pick)
  KW_PS=policy-server-default # what the controller names everything it makes for that PolicyServer
  KW_PS_DIR=$RUN/kw-policy-server
  KW_POLICY=yunikorn-user-info
}

kw_log() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*"; }

# kw_chart FILE KIND [NAME]: the documents of kind KIND (and metadata.name NAME) of the chart template FILE, with the
# expressions a default `helm install kubewarden-controller` in namespace kubewarden fills in, the chart's labels
# included (the controller finds its webhook configurations by app.kubernetes.io/part-of=kubewarden to rotate their
# CA); the lines of its conditionals are left out (the document is chosen by kind and name). Fails when a kept
# document still holds an expression.
kw_chart() {
  local out
  # shellcheck disable=SC2016 # $caBundle is the template's
  out=$(sed -E \
    -e '/^\s*\{\{-? include "[a-z-]+\.annotations" \. \| nindent [0-9]+ \}\}\s*$/d' \
    -e '/^\{\{-? ?(if|else|end)\b[^}]*\}\}\s*$/d' \
    -e 's/\{\{ \.Release\.Namespace \}\}/'"$KW_NS"'/g' \
    -e 's/\{\{ include "kubewarden-controller\.(fullname|serviceAccountName)" \. \}\}/'"$KW_RELEASE"'/g' \
    -e 's/\{\{ \.Values\.ports\.webhook \}\}/'"$KW_WEBHOOK_PORT"'/g' \
    -e 's/\{\{ \$caBundle \}\}/'"$(base64 -w0 "$KW_PKI/ca.crt")"'/g' \
    "$1" |
    awk -v chart="$(awk '/^version:/ && v == "" { v = $2 } /^appVersion:/ { a = $2 } END { print v, a }' "$KW_BIN/chart/Chart.yaml")" \
      -v release="$KW_RELEASE" '
      # the chart'"'"'s labels (_helpers.tpl), for the release kubewarden-controller
      match($0, /^ *\{\{-? include "kubewarden-controller\.(labels|selectorLabels)" \. \| nindent [0-9]+ \}\}/) {
        n = $0; sub(/.*nindent /, "", n); n += 0; pad = sprintf("%" n "s", "")
        split(chart, cv, " ")
        if ($0 ~ /\.labels"/) print pad "helm.sh/chart: kubewarden-controller-" cv[1]
        print pad "app.kubernetes.io/name: kubewarden-controller"
        print pad "app.kubernetes.io/instance: " release
        if ($0 ~ /\.labels"/) {
          print pad "app.kubernetes.io/version: \"" cv[2] "\""
          print pad "app.kubernetes.io/component: controller"
          print pad "app.kubernetes.io/managed-by: Helm"
          print pad "app.kubernetes.io/part-of: kubewarden"
        }
        next
      }
      { print }' |
    awk 'function ind(s) { match(s, /^ */); return RLENGTH }
      held != "" { if (ind($0) > ind(held)) print held; held = "" }
      /^ *(labels|annotations|selector): *$/ { held = $0; next }
      { print }' |
    awk -v kind="$2" -v name="${3:-}" 'function flush() { if (doc != "" && k && (name == "" || n)) printf "---\n%s", doc; doc = ""; k = n = 0 }
      /^---/ { flush(); next }
      /^kind: / { if ($2 == kind) k = 1 }
      /^  name: / { if ($2 == name) n = 1 }
      { doc = doc $0 "\n" } END { flush() }')
  if [ -z "$out" ]; then
    echo "kw_chart: no $2 ${3:-} in $1" >&2
    return 1
  fi
  if grep -n '{{' <<< "$out" >&2; then
    echo "kw_chart: the $2 of $1 has template expressions the suite does not fill in (above)" >&2
    return 1
  fi
  printf '%s\n' "$out" | sed '/^#/d'
}

# kw_pki: the chart's certificates: the CA in the Secret kubewarden-ca (ca.crt, ca.key: EC P-256, "EC PRIVATE KEY",
# what the controller reads to sign the policy servers' certificates) and the webhook server's, for
# kubewarden-controller-webhook-service.kubewarden.svc, which the controller reads from
# $TMPDIR/k8s-webhook-server/serving-certs (there is no flag) and the chart mounts from kubewarden-webhook-server-cert.
kw_pki() {
  local dns=$KW_SVC.$KW_NS.svc certs=$RUN/kw-controller-tmp/k8s-webhook-server/serving-certs
  mkdir -p "$KW_PKI" "$certs"
  (
    cd "$KW_PKI"
    openssl ecparam -name prime256v1 -genkey -noout -out ca.key
    openssl req -x509 -new -key ca.key -subj /CN=kubewarden-controller-ca -days 3650 -out ca.crt
    openssl ecparam -name prime256v1 -genkey -noout -out webhook.key
    openssl req -new -key webhook.key -subj "/CN=$dns" -out webhook.csr
    openssl x509 -req -in webhook.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -out webhook.crt \
      -extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$dns")
  ) > "$RUN/logs/kw-pki.log" 2>&1 || die_with_log kw-pki "the Kubewarden certificates could not be made"
  grep -q 'BEGIN EC PRIVATE KEY' "$KW_PKI/ca.key"
  cp "$KW_PKI/webhook.crt" "$certs/tls.crt"
  cp "$KW_PKI/webhook.key" "$certs/tls.key"
}

# kw_cluster_ip NAME: the ClusterIP of the Service NAME in kubewarden
# kw_ps_pick: the PolicyServer whose policies.yml holds a policy (the stand-in serves one at a time: the examples'
# run on "default", the README's Quick start on one of its own), "default" when none does; sets KW_PS_NAME and KW_PS.
kw_ps_pick() {
  local name
  for name in $(kc admin get policyservers -o jsonpath='{.items[*].metadata.name}' 2> /dev/null); do
    if kc admin -n "$KW_NS" get configmap "policy-server-$name" -o json 2> /dev/null |
      jq -e '.data["policies.yml"] // "{}" | fromjson | length > 0' > /dev/null 2>&1; then
      KW_PS_NAME=$name KW_PS=policy-server-$name
      return 0
    fi
  done
  KW_PS_NAME=default KW_PS=policy-server-default
}

kw_cluster_ip() { kc admin -n "$KW_NS" get service "$1" -o jsonpath='{.spec.clusterIP}'; }

# kw_lo_add IP: the address on lo of the suite's network namespace (where kube-proxy would route it)
kw_lo_add() { ip addr show dev lo | grep -q "inet $1/" || ip addr add "$1/32" dev lo; }

# kw_install: what `helm install` of kubewarden-crds and kubewarden-controller (chart defaults) puts in the cluster,
# minus the controller's Deployment (kw_start runs the binary) and the webhook configurations (kw_register_webhooks,
# once the controller answers; Helm applies them with the rest, and they fail until it does): the CRDs, the
# namespace, the controller's ServiceAccount, ClusterRole, Role and their bindings, the metrics-reader role, the CA
# and webhook server Secrets and the webhook Service, whose ClusterIP svcproxy serves. Also the policy server's
# ServiceAccount (kubewarden-defaults creates it; the ServiceAccount admission plugin refuses the PolicyServer's pods
# without it).
kw_install() {
  kc admin apply --server-side -f "$KW_BIN/crds" > /dev/null
  kc admin wait --for=condition=Established --timeout=60s -f "$KW_BIN/crds" > /dev/null
  kc admin create namespace "$KW_NS" > /dev/null
  wait_until 60 "the default service account in $KW_NS" sa_exists "$KW_NS"
  kw_pki
  kc admin -n "$KW_NS" create secret generic kubewarden-ca --from-file=ca.crt="$KW_PKI/ca.crt" \
    --from-file=ca.key="$KW_PKI/ca.key" > /dev/null
  kc admin -n "$KW_NS" create secret generic kubewarden-webhook-server-cert --from-file=tls.crt="$KW_PKI/webhook.crt" \
    --from-file=tls.key="$KW_PKI/webhook.key" > /dev/null
  {
    kw_chart "$KW_BIN/chart/serviceaccount.yaml" ServiceAccount "$KW_SA"
    kw_chart "$KW_BIN/chart/controller-rbac-roles.yaml" ClusterRole
    kw_chart "$KW_BIN/chart/controller-rbac-roles.yaml" Role
    kw_chart "$KW_BIN/chart/controller-rbac-rolebinding.yaml" RoleBinding
    kw_chart "$KW_BIN/chart/controller-rbac-rolebinding.yaml" ClusterRoleBinding
    kw_chart "$KW_BIN/chart/controller-rbac-metrics-role.yaml" ClusterRole
    kw_chart "$KW_BIN/chart/service.yaml" Service "$KW_SVC"
  } > "$RUN/kw-chart.yaml"
  kc admin apply -f "$RUN/kw-chart.yaml" > /dev/null
  kc admin -n "$KW_NS" create serviceaccount policy-server > /dev/null
  local token
  token=$(kc admin -n "$KW_NS" create token "$KW_SA" --duration=24h)
  kubeconfig "$RUN/kw-controller.kubeconfig" "$KW_SA" "    token: $token"
  local ip
  ip=$(kw_cluster_ip "$KW_SVC")
  kw_lo_add "$ip"
  stop kw-svcproxy
  start kw-svcproxy "$SVCPROXY" -listen "$ip:443" -target "127.0.0.1:$KW_WEBHOOK_PORT"
}

# kw_webhook_tls: a TLS handshake with the controller's webhook server through its Service, checked against the CA
# as the API server checks it (any HTTP answer will do)
kw_webhook_tls() {
  local ip code
  ip=$(kw_cluster_ip "$KW_SVC")
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 --cacert "$KW_PKI/ca.crt" \
    --resolve "$KW_SVC.$KW_NS.svc:443:$ip" "https://$KW_SVC.$KW_NS.svc/healthz") || true
  [ -n "$code" ] && [ "$code" != 000 ]
}

# kw_start: the controller, with the chart's arguments but --leader-elect (outside a pod it cannot tell its
# namespace) and with its probes on loopback (the chart: every interface, port 8081; metrics off, as the chart
# leaves them by default), as its ServiceAccount. Ready when its controllers print "Starting workers" and its
# webhook server completes a TLS handshake through the Service (without its certificate it exits, after /readyz
# already answered).
kw_start() {
  stop kw-controller
  TMPDIR=$RUN/kw-controller-tmp start kw-controller "$KW_BIN/kubewarden-controller" \
    --kubeconfig="$RUN/kw-controller.kubeconfig" \
    --deployments-namespace="$KW_NS" \
    --webhook-service-name="$KW_SVC" \
    --webhook-server-port="$KW_WEBHOOK_PORT" \
    --health-probe-bind-address="127.0.0.1:$KW_PROBE_PORT" \
    --metrics-bind-address=0 \
    --zap-log-level=info
  wait_until 60 "the Kubewarden controller's workers" bash -c "[ \$(grep -c 'Starting workers' '$RUN/logs/kw-controller.log') -ge 4 ]" ||
    die_with_log kw-controller "Kubewarden's controller did not start its workers" || return 1
  wait_until 30 "the Kubewarden controller's webhook server (TLS through its Service)" kw_webhook_tls ||
    die_with_log kw-controller "Kubewarden's controller's webhook server does not answer" || return 1
}

# kw_register_webhooks: the chart's MutatingWebhookConfiguration and ValidatingWebhookConfiguration (they default
# and validate policies and PolicyServers; the validating one compiles matchConditions' CEL), rendered from the
# chart's webhooks.yaml, then waits until the API server calls them: a ClusterAdmissionPolicy whose matchCondition
# does not compile is refused by the controller's webhook (a server-side dry run).
kw_register_webhooks() {
  {
    kw_chart "$KW_BIN/chart/webhooks.yaml" MutatingWebhookConfiguration
    kw_chart "$KW_BIN/chart/webhooks.yaml" ValidatingWebhookConfiguration
  } > "$RUN/kw-chart-webhooks.yaml"
  kc admin apply -f "$RUN/kw-chart-webhooks.yaml" > /dev/null
  wait_until 60 "the controller's webhooks to refuse a policy with a broken matchCondition" kw_webhook_refuses_bad_cel
}

# kw_bad_cel_policy: a ClusterAdmissionPolicy whose matchCondition is not CEL
kw_bad_cel_policy() {
  cat <<'Y'
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata: {name: e2e-bad-cel}
spec:
  module: registry://ghcr.io/kubewarden/tests/pod-privileged:v0.2.5
  mutating: false
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
  matchConditions: [{name: broken, expression: "object.metadata.("}]
  settings: {}
Y
}
kw_webhook_refuses_bad_cel() {
  kw_bad_cel_policy | kc admin apply --dry-run=server -f - > "$RUN/kw-bad-cel.out" 2>&1
  grep -qF "$KW_BAD_CEL_REFUSAL" "$RUN/kw-bad-cel.out"
}
# what the controller's validating webhook answers (the API server passes its Invalid status on as it is)
KW_BAD_CEL_REFUSAL='spec.matchConditions[0].expression: Invalid value: "object.metadata.(": compilation failed'


# kw_policy_server: the PolicyServer "default" as the kubewarden-defaults chart makes it (image from its values)
kw_policy_server() {
  local image
  image=$(awk '/^  image:/ { i = 1 } i && /repository:/ { r = $2 } i && /tag:/ { t = $2; exit } END { gsub(/"/, "", r); print "ghcr.io/" r ":" t }' \
    "$KW_BIN/chart/defaults-values.yaml")
  kc admin apply -f - > /dev/null <<Y
apiVersion: policies.kubewarden.io/v1
kind: PolicyServer
metadata:
  name: default
  labels: {app.kubernetes.io/component: policy-server}
  finalizers: [kubewarden.io/finalizer]
spec:
  image: $image
  serviceAccountName: policy-server
  replicas: 1
Y
  echo "PolicyServer default, image $image"
}

# --- the kubelet stand-in ---

# kw_ready_json: a pod status patch that says Ready, as the kubelet writes it once the readiness probe passes
KW_READY_PATCH='{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"}]}}'

# kw_serve CONFIGMAP_JSON: kwhost serve (as kw-policy-server) with the policy of the ConfigMap's policies.yml,
# the Secret's certificate, at the Service's ClusterIP and port; nothing to do when that is what already runs.
# Returns non-zero when it cannot serve that configuration (kwhost refused the settings, as policy-server would
# refuse to start: the pod is then never ready); the previous configuration is then served again, as the previous
# policy-server pods would go on serving it.
kw_serve() {
  local cm=$1 policies ip port n key
  mkdir -p "$KW_PS_DIR"
  policies=$(jq -r '.data["policies.yml"]' <<< "$cm")
  ip=$(kw_cluster_ip "$KW_PS") || return 1
  port=$(kc admin -n "$KW_NS" get service "$KW_PS" -o jsonpath='{.spec.ports[0].port}') || return 1
  kc admin -n "$KW_NS" get secret "$KW_PS" -o json > "$KW_PS_DIR/secret.json" || return 1
  jq -r '.data["tls.crt"] | @base64d' "$KW_PS_DIR/secret.json" > "$KW_PS_DIR/tls.crt"
  jq -r '.data["tls.key"] | @base64d' "$KW_PS_DIR/secret.json" > "$KW_PS_DIR/tls.key"
  key=$(cat <(printf '%s\n%s:%s\n' "$policies" "$ip" "$port") "$KW_PS_DIR/tls.crt" | sha256sum | cut -c1-16)
  if [ "$(cat "$KW_PS_DIR/serving" 2> /dev/null)" = "$key" ] && [ -f "$RUN/pids/kw-policy-server.pid" ]; then return 0; fi
  if [ "$(cat "$KW_PS_DIR/refused" 2> /dev/null)" = "$key" ]; then return 1; fi
  n=$(jq 'length' <<< "$policies")
  if [ "$n" -eq 0 ]; then
    stop kw-policy-server
    printf '%s\n' "$policies" > "$KW_PS_DIR/policies.yml"
    kw_log "policies.yml holds no policy: nothing to serve"
    echo "$key" > "$KW_PS_DIR/serving"
    return 0
  fi
  if [ "$n" -ne 1 ] && [ -z "${POLICY_SERVER:-}" ]; then
    # kwhost serves one module with one configuration on every path: it cannot stand in for several policies
    kw_log "policies.yml holds $n policies ($(jq -c keys <<< "$policies")): the stand-in serves one; not ready"
    echo "$key" > "$KW_PS_DIR/refused"
    return 1
  fi
  local id entry
  id=$(jq -r 'keys[0]' <<< "$policies")
  entry=$(jq -c '.[keys[0]]' <<< "$policies")
  kw_lo_add "$ip"
  kw_log "serving $id (module $(jq -r .module <<< "$entry") -> $POLICY; policyMode $(jq -r .policyMode <<< "$entry"); allowedToMutate $(jq -r '.allowedToMutate // false' <<< "$entry"); settings $(jq -c '.settings // {}' <<< "$entry")) on $ip:$port"
  mkdir -p "$KW_PS_DIR/new"
  cp "$KW_PS_DIR/tls.crt" "$KW_PS_DIR/tls.key" "$KW_PS_DIR/new/"
  printf '%s\n' "$policies" > "$KW_PS_DIR/new/policies.yml"
  echo "$ip:$port" > "$KW_PS_DIR/new/listen"
  echo "$key" > "$KW_PS_DIR/new/key"
  if kw_kwhost "$KW_PS_DIR/new"; then
    rm -rf "$KW_PS_DIR/good"
    mv "$KW_PS_DIR/new" "$KW_PS_DIR/good"
    return 0
  fi
  echo "$key" > "$KW_PS_DIR/refused"
  # policy-server's previous pods go on serving the previous configuration while the new ones crash-loop
  if [ -d "$KW_PS_DIR/good" ] && kw_kwhost "$KW_PS_DIR/good"; then
    kw_log "serving the previous configuration again, as the previous policy-server pods would"
  fi
  return 1
}

# kw_kwhost DIR: (re)starts kwhost serve (as kw-policy-server) with the configuration in DIR (policies.yml with one
# policy, tls.crt, tls.key, listen, key) and waits until it answers over TLS, checked against kubewarden-ca for the
# Service's name. Fails when kwhost exits (it refused the settings, as policy-server refuses to start) or does not
# answer within 15 s.
kw_kwhost() {
  local dir=$1 id settings listen i
  id=$(jq -r 'keys[0]' "$dir/policies.yml")
  settings=$(jq -c '.[keys[0]].settings // {}' "$dir/policies.yml")
  listen=$(cat "$dir/listen")
  stop kw-policy-server
  rm -f "$KW_PS_DIR/serving"
  echo "--- $id $settings" >> "$RUN/logs/kw-policy-server.log"
  if [ -n "${POLICY_SERVER:-}" ]; then
    # ports of its own: the suite's first webhook (start_kwhost) may hold WEBHOOK_PORT+1000 and +1001
    if PS_CA=$KW_PKI/ca.crt PS_TLS_NAME=$KW_PS.$KW_NS.svc PS_PORT=$((WEBHOOK_PORT + 1002)) PS_READY_PORT=$((WEBHOOK_PORT + 1003)) \
      ps_start kw-policy-server "$dir/policies.yml" "$listen" \
      "$dir/tls.crt" "$dir/tls.key" "$RUN/kw-reviews.jsonl"; then
      cp "$dir/policies.yml" "$KW_PS_DIR/policies.yml"
      cp "$dir/key" "$KW_PS_DIR/serving"
      kw_log "$id: policy-server answers, certificate checked against kubewarden-ca for $KW_PS.$KW_NS.svc"
      return 0
    fi
    kw_log "$id: policy-server did not start: $(grep -E "^Error|is taken|older than" "$RUN/logs/kw-policy-server-ps.log" | tail -n 1); not ready"
    return 1
  fi
  # allowedToMutate unset is policy-server's "not allowed": a patch becomes a rejection naming the policy
  start kw-policy-server "$KWHOST" serve --allow-unannotated --policy "$POLICY" --settings-json "$settings" \
    --allowed-to-mutate="$(jq -r '.[keys[0]].allowedToMutate // false' "$dir/policies.yml")" --policy-id "$id" \
    --cert-file "$dir/tls.crt" --key-file "$dir/tls.key" --listen "$listen" --record "$RUN/kw-reviews.jsonl"
  for i in $(seq 1 60); do
    if curl -sf --max-time 2 --cacert "$KW_PKI/ca.crt" --resolve "$KW_PS.$KW_NS.svc:${listen##*:}:${listen%:*}" \
      "https://$KW_PS.$KW_NS.svc:${listen##*:}/readyz" > /dev/null 2>&1; then
      cp "$dir/policies.yml" "$KW_PS_DIR/policies.yml"
      cp "$dir/key" "$KW_PS_DIR/serving"
      kw_log "$id: kwhost answers (after $i polls), certificate checked against kubewarden-ca for $KW_PS.$KW_NS.svc"
      return 0
    fi
    if ! kill -0 "$(cat "$RUN/pids/kw-policy-server.pid")" 2> /dev/null; then
      kw_log "$id: kwhost exited: $(tail -n 1 "$RUN/logs/kw-policy-server.log"); not ready (policy-server would crash-loop)"
      rm -f "$RUN/pids/kw-policy-server.pid" "$RUN/pids/kw-policy-server.exe"
      return 1
    fi
    sleep 0.25
  done
  kw_log "$id: kwhost did not answer within 15 s; not ready"
  stop kw-policy-server
  return 1
}

# kw_kubelet_sync: one pass: the policy server's pods of the newest configuration that are not ready yet get their
# configuration served and are marked Ready; pods of an older configuration are left to the Deployment's rollout.
kw_kubelet_sync() {
  local cm rv pods pod version
  kw_ps_pick
  cm=$(kc admin -n "$KW_NS" get configmap "$KW_PS" -o json 2> /dev/null) || return 0
  rv=$(jq -r .metadata.resourceVersion <<< "$cm")
  pods=$(kc admin -n "$KW_NS" get pods -l "kubewarden/policy-server=$KW_PS_NAME" -o json 2> /dev/null | jq -r '.items[] |
    select(.metadata.deletionTimestamp == null) |
    select([.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length == 0) |
    "\(.metadata.name) \(.metadata.labels["kubewarden/config-version"])"') || return 0
  [ -n "$pods" ] || return 0
  while read -r pod version; do
    [ "$version" = "$rv" ] || continue
    kw_serve "$cm" || continue
    if kc admin -n "$KW_NS" patch pod "$pod" --subresource=status --type=merge -p "$KW_READY_PATCH" > /dev/null 2>&1; then
      kw_log "pod $pod (config-version $version) marked Ready"
    else
      kw_log "pod $pod (config-version $version) is gone (the rollout moved on)"
    fi
  done <<< "$pods"
}

# kw_kubelet_loop: kw_kubelet_sync every half second, for KW_KUBELET_SECONDS at most (default 1200, the bats
# run's own limit); started in the background by kw_kubelet_start, stopped by its PID.
kw_kubelet_loop() {
  local deadline=$((SECONDS + ${KW_KUBELET_SECONDS:-1200}))
  kw_log "kubelet stand-in: watching the pods of the PolicyServer that holds a policy in $KW_NS"
  while [ $SECONDS -lt $deadline ]; do
    kw_kubelet_sync || true
    sleep 0.5
  done
  kw_log "kubelet stand-in: ${KW_KUBELET_SECONDS:-1200} s are up"
}

kw_kubelet_start() {
  stop kw-kubelet
  # shellcheck disable=SC2016 # $1 is the inner shell's
  start kw-kubelet bash -c 'source "$1/lib.bash" && source "$1/kubewarden.bash" && kw_kubelet_loop' _ "$KW_HERE"
}

# kw_stop: what kubewarden.bats started (lib.bash's stop_all stops them too)
kw_stop() {
  local c
  for c in kw-kubelet kw-policy-server kw-controller kw-svcproxy; do stop "$c"; done
}

# --- what the controller made ---

# kw_active NAME: the ClusterAdmissionPolicy NAME is active (its PolicyActive condition is True)
kw_active() {
  kc admin get clusteradmissionpolicy "$1" -o json |
    jq -e '.status.policyStatus == "active" and ([.status.conditions[]? | select(.type == "PolicyActive" and .status == "True")] | length == 1)' > /dev/null
}

# kw_policies_yml: the policies.yml of the policy server's ConfigMap, as JSON
kw_policies_yml() {
  kw_ps_pick
  kc admin -n "$KW_NS" get configmap "$KW_PS" -o json | jq -c '.data["policies.yml"] | fromjson'
}

# kw_example_json FILE: the example as the API server receives it from kubectl (YAML to JSON, no defaults)
kw_example_json() { kc admin create --dry-run=client -o json -f "$1"; }

# kw_settings_served: the settings the policy server stand-in serves now (empty when none)
kw_settings_served() {
  [ -f "$KW_PS_DIR/serving" ] && [ -f "$KW_PS_DIR/policies.yml" ] && jq -c '[.[]][0].settings // {}' "$KW_PS_DIR/policies.yml"
}

# kw_rolled_out: the Deployment carries the ConfigMap's version, and every pod of the policy server is of it and Ready
kw_rolled_out() {
  local rv
  kw_ps_pick
  rv=$(kc admin -n "$KW_NS" get configmap "$KW_PS" -o jsonpath='{.metadata.resourceVersion}')
  [ "$(kc admin -n "$KW_NS" get deployment "$KW_PS" -o jsonpath='{.metadata.annotations.kubewarden/config-version}')" = "$rv" ] &&
    kc admin -n "$KW_NS" get pods -l "kubewarden/policy-server=$KW_PS_NAME" -o json | jq -e --arg rv "$rv" '(.items | length) > 0 and
      all(.items[]; .metadata.labels["kubewarden/config-version"] == $rv and .metadata.deletionTimestamp == null and
        any(.status.conditions[]?; .type == "Ready" and .status == "True"))' > /dev/null
}

# kw_in_policies NAME SETTINGS: policies.yml holds the ClusterAdmissionPolicy NAME with SETTINGS (compact JSON)
kw_in_policies() {
  kw_policies_yml | jq -e --arg id "clusterwide-$1" --argjson s "$2" '.[$id] != null and (.[$id].settings // {}) == $s' > /dev/null
}

# kw_apply USER FILE: USER applies the ClusterAdmissionPolicy FILE as a user would (kubectl apply -f), then waits,
# each step bounded, until the controller put its settings in policies.yml, rolled the policy server out with them
# (the stand-in serving them, its pod Ready) and marked the policy PolicyActive. Prints how long each took.
kw_apply() {
  local json name settings kind t0=$SECONDS
  json=$(kw_example_json "$2") || return 1
  name=$(jq -r .metadata.name <<< "$json")
  settings=$(jq -c '.spec.settings // {}' <<< "$json")
  kc "$1" apply -f "$2" || return 1
  wait_until 30 "policies.yml to hold $name with $settings" kw_in_policies "$name" "$settings" || return 1
  wait_until "${KW_ACTIVE_TIMEOUT:-90}" "the policy server to roll out with $name" kw_rolled_out || return 1
  wait_until 30 "the stand-in to serve $settings" kw_serving "$settings" || return 1
  kc admin wait --for=condition=PolicyActive "clusteradmissionpolicy/$name" --timeout="${KW_ACTIVE_TIMEOUT:-90}s" > /dev/null || return 1
  kind=mutatingwebhookconfiguration
  [ "$(jq -r .spec.mutating <<< "$json")" = true ] || kind=validatingwebhookconfiguration # the guard
  wait_until 30 "the $kind clusterwide-$name" kc admin get "$kind" "clusterwide-$name" || return 1
  echo "$name from $(basename "$2"): in policies.yml, rolled out, PolicyActive and its webhook written in $((SECONDS - t0)) s"
}

# kw_delete NAME: the ClusterAdmissionPolicy NAME deleted, and gone from policies.yml and the webhook configurations
kw_delete() {
  kc admin delete clusteradmissionpolicy "$1" --ignore-not-found --timeout=60s > /dev/null || return 1
  wait_until 60 "$1 to leave policies.yml" kw_not_in_policies "$1" || return 1
  wait_until 60 "clusterwide-$1 to go" kw_no_webhook "$1"
}
kw_not_in_policies() { ! kw_policies_yml | jq -e --arg id "clusterwide-$1" '.[$id] != null' > /dev/null; }
kw_no_webhook() { ! kc admin get mutatingwebhookconfiguration,validatingwebhookconfiguration "clusterwide-$1" > /dev/null 2>&1; }
kw_serving() { [ "$(kw_settings_served)" = "$1" ]; }
