# operators.bash: helpers of the operator scenarios (operators.bats): the operators' real CRDs and
# controllers (built by build-operators.sh into $OPERATORS_DIR/<operator>-<version>) against the suite's API
# server, each controller under its own service account's token, trusted in systemUsers as the examples say.
#
# Every scenario appends rows to $RUN/operators.tsv (operator, version, resource form, expected, observed);
# run-operators.sh prints them as a table at the end of the run.

# shellcheck disable=SC2154 # status, output and stderr are set by bats' run
# shellcheck disable=SC2034 # constants for operators.bats
{
  EXAMPLES=$BATS_TEST_DIRNAME/../../examples
  TABLE=$RUN/operators.tsv
  AIRFLOW_VALUE='{"user":"airflow","groups":["workflow-engines","system:authenticated"]}'
  CAROL_FORGED='{"user":"carol","groups":["admins"]}'
}

# have_operator KEY: the operator was built (a refused download leaves it missing: the scenario is skipped)
have_operator() { [ -f "$OPERATORS_DIR/$1/.complete" ]; }

# require_operator KEY: skip the scenario, loudly, when the operator could not be built
require_operator() {
  if ! have_operator "$1"; then
    row "${1%-*}" "${1##*-}" "(every form)" "runs" "SKIPPED: not built (the module proxy refused it)"
    skip "$1 was not built: the module proxy refused it (see the build step's output)"
  fi
}

# row OPERATOR VERSION FORM EXPECTED OBSERVED: one line of the run's table
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$TABLE"; }

# examples_settings [EXTRA-JSON]: the settings of every operator example in one object (systemUsers merged,
# customWorkloads concatenated), plus EXTRA: what a cluster running all these operators configures
examples_settings() {
  local f
  for f in spark-operator kuberay flink-operator kubeflow-training argo-workflows; do
    yq -c .spec.settings "$EXAMPLES/$f.yaml"
  done | jq -cs --argjson extra "${1:-{\}}" \
    '{systemUsers: ([.[].systemUsers[]] | unique), customWorkloads: [.[].customWorkloads[]]} + $extra'
}

# operator_account KEY: "namespace:name" of the operator's service account: the one the README names (the
# operators' defaults), checked against the example's systemUsers, so that the suite runs each controller as
# the account users are told to trust
operator_account() {
  local example account
  case $1 in
    kuberay-*) example=kuberay account=ray-system:kuberay-operator ;;
    argo-*) example=argo-workflows account=argo:argo ;;
    training-operator-*) example=kubeflow-training account=kubeflow:training-operator ;;
    *) echo "operator_account: $1 has no controller here" >&2; return 2 ;;
  esac
  if ! yq -r '.spec.settings.systemUsers[]' "$EXAMPLES/$example.yaml" | grep -v '^\^system:serviceaccount:kube-system:' |
    while read -r re; do grep -qE "$re" <<< "system:serviceaccount:$account" && echo yes; done | grep -q yes; then
    echo "operator_account: examples/$example.yaml does not trust system:serviceaccount:$account" >&2
    return 1
  fi
  echo "$account"
}

# sa_kubeconfig NS NAME: a kubeconfig holding a token of that service account (TokenRequest, 3 h), in
# namespace NS; prints its path
sa_kubeconfig() {
  local f=$RUN/sa-$1-$2.kubeconfig token
  kc admin get namespace "$1" > /dev/null 2>&1 || kc admin create namespace "$1" > /dev/null
  kc admin -n "$1" get serviceaccount "$2" > /dev/null 2>&1 || kc admin -n "$1" create serviceaccount "$2" > /dev/null
  token=$(kc admin -n "$1" create token "$2" --duration=3h)
  kubeconfig "$f" "$1-$2" "    token: $token" "$1"
  echo "$f"
}

# bind_operator_roles KEY NS NAME: the operator's own ClusterRoles (and namespaced Roles, in NS), from its
# published manifests (build-operators.sh copies them to rbac/), bound to its service account
bind_operator_roles() {
  local key=$1 ns=$2 sa=$3 f kind name
  for f in "$OPERATORS_DIR/$key"/rbac/*.yaml; do
    kind=$(yq -r .kind "$f") name=$(yq -r .metadata.name "$f")
    case $kind in
      ClusterRole)
        kc admin apply -f "$f" > /dev/null
        kc admin create clusterrolebinding "e2e-$key-$name" --clusterrole="$name" --serviceaccount="$ns:$sa" \
          --dry-run=client -o yaml | kc admin apply -f - > /dev/null ;;
      Role)
        kc admin -n "$ns" apply -f "$f" > /dev/null
        kc admin -n "$ns" create rolebinding "e2e-$key-$name" --role="$name" --serviceaccount="$ns:$sa" \
          --dry-run=client -o yaml | kc admin apply -f - > /dev/null ;;
    esac
  done
}

# start_operator KEY ARGS...: the operator's controller (bin/*) as its own service account (--kubeconfig, which
# all three take, holding its token), replacing the one in its slot: OPERATOR_SLOT, "operator" unless set (Argo's
# controller has a slot of its own, so that it keeps running while other operators' scenarios fill the minute
# its CronWorkflows wait for); logs in $RUN/logs/SLOT.log; env OPERATOR_ENV adds variables
start_operator() {
  local key=$1 account ns sa bin slot=${OPERATOR_SLOT:-operator}
  shift
  stop_operator "$slot"
  account=$(operator_account "$key") ns=${account%%:*} sa=${account#*:}
  bind_operator_roles "$key" "$ns" "$sa"
  bin=$(echo "$OPERATORS_DIR/$key"/bin/*)
  OPERATOR_KUBECONFIG=$(sa_kubeconfig "$ns" "$sa")
  echo "--- $key $* (as system:serviceaccount:$ns:$sa)" >> "$RUN/logs/$slot.log"
  # shellcheck disable=SC2086 # OPERATOR_ENV is a list of NAME=VALUE words
  start "$slot" env ${OPERATOR_ENV:-} "$bin" --kubeconfig "$OPERATOR_KUBECONFIG" "$@"
  # start records the first word's executable; the process is the operator's after env's exec
  readlink -f "$bin" > "$RUN/pids/$slot.exe"
  echo "$key running as system:serviceaccount:$ns:$sa: $(basename "$bin") $*"
}

# stop_operator [SLOT]: TERM, 3 s, then KILL (Argo v4 ignores TERM for ~20 s); only the recorded PID
stop_operator() { stop "${1:-operator}" 30; }

# who VALUE: the test user whose exact stamp VALUE is, else the value itself (or <none>)
who() {
  jq -rn --argjson stamps "$STAMPS" --arg v "$1" --arg carol "$CAROL_FORGED" '
    if $v == "" then "<none>" elif $v == $carol then "carol" else ([$stamps | to_entries[] | select(.value == $v) | .key][0] // $v) end'
}

# pod_owners NS SELECTOR: whose stamp each selected pod carries, as "N pods: USER" parts, sorted (USER is the
# test user whose exact stamp it is, else the user the value names, else the value)
pod_owners() {
  kc admin -n "$1" get pods -l "$2" -o json | jq -r --argjson stamps "$STAMPS" --arg k "$ANNOTATION" '
    [.items[] | ((.metadata.annotations // {})[$k]) as $v |
      if $v == null then "<none>" else ([$stamps | to_entries[] | select(.value == $v) | .key][0] //
        (try ($v | fromjson | .user // empty | "user \(.)") catch null) // $v) end] |
    group_by(.) | map("\(length) \(if length == 1 then "pod" else "pods" end): \(.[0])") | join("; ")'
}

# pod_users NS SELECTOR: the users the selected pods' stamps name, unique, comma-separated (<none> for a pod
# without one); for pods a controller keeps replacing, where a count means nothing
pod_users() {
  kc admin -n "$1" get pods -l "$2" -o json | jq -r --arg k "$ANNOTATION" '
    [.items[] | (.metadata.annotations // {})[$k] // "" | if . == "" then "<none>" else (try (fromjson | .user) catch "<invalid>") end] |
    unique | join(",")'
}

# bound_count NS SELECTOR: how many of the selected pods a scheduler bound to a node
bound_count() {
  kc admin -n "$1" get pods -l "$2" -o json | jq '[.items[] | select((.spec.nodeName // "") != "")] | length'
}

# ray_pods_ready NS CLUSTER: what a kubelet would report once the RayCluster's containers run: every pod of it
# Running and Ready, through the status subresource, as the suite's own account (there is no kubelet). KubeRay
# marks a RayCluster Ready when all its pods are; a RayJob submits only to a Ready cluster.
ray_pods_ready() {
  local pod now
  now=$(date -u +%FT%TZ)
  for pod in $(kc admin -n "$1" get pods -l "ray.io/cluster=$2" -o name); do
    kc admin -n "$1" patch "$pod" --subresource=status --type=merge -p '{"status": {"phase": "Running",
      "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "'"$now"'"},
        {"type": "ContainersReady", "status": "True", "lastTransitionTime": "'"$now"'"}]}}' > /dev/null
  done
}

# ---------------------------------------------------------------- YuniKorn (yunikorn.bash installs and runs it)
# run-operators.sh builds YuniKorn's scheduler (OPERATORS_YUNIKORN_VERSION, default 1.8.0) before the suite
# enters its network namespace; its REST API (:9080, every interface) is then on the suite's private loopback.

# yunikorn_built: the scheduler is there (a refused download leaves it missing: the scenario is skipped)
yunikorn_built() { [ -n "${YUNIKORN_BIN:-}" ] && [ -x "$YUNIKORN_BIN/yunikorn-scheduler" ]; }

# charged_to APP: the test users whose usage YuniKorn charges APP to (its user-usage tracker), comma-separated,
# or "nobody"
charged_to() {
  local u users=()
  for u in alice bob airflow; do
    if [[ ",$(usage_apps "$u")," == *",$1,"* ]]; then users+=("$u"); fi
  done
  if [ ${#users[@]} -eq 0 ]; then echo nobody; else (IFS=,; echo "${users[*]}"); fi
}

# rejected_user APP: the user of APP in YuniKorn's list of rejected applications (v1.8.0's REST API; <none>
# when it is not there)
rejected_user() {
  { yk_rest /partition/default/applications/rejected || echo '[]'; } |
    jq -r --arg app "$1" '[.[]? | select(.applicationID == $app) | .user][0] // "<none>"'
}

# expect_pods OPERATOR VERSION FORM NS SELECTOR COUNT USER: waits (60 s) until COUNT pods match SELECTOR,
# records the row, and fails unless every one of them carries USER's stamp
expect_pods() {
  local op=$1 ver=$2 form=$3 ns=$4 sel=$5 count=$6 user=$7 observed
  wait_until 60 "$count pods matching $sel in $ns" pods_at_least "$ns" "$count" "$sel" || true
  observed=$(pod_owners "$ns" "$sel")
  local expected="$count pods: $user"
  if [ "$count" = 1 ]; then expected="1 pod: $user"; fi
  row "$op" "$ver" "$form" "$expected" "${observed:-no pods}"
  echo "$op $ver, $form: expected $expected; observed ${observed:-no pods}"
  [ "$observed" = "$count pods: $user" ] || [ "$observed" = "$count pod: $user" ]
}

# apply_crds KEY: the operator's CRDs, server-side (KubeRay's exceed the last-applied annotation's limit),
# taking over fields from another version of the same CRDs; waits until they are established
apply_crds() {
  local f names=() applied=$RUN/crds-applied-${1%-*}
  # the same CRDs are applied once (a large CRD takes seconds to apply and establish)
  if [ "$(cat "$applied" 2> /dev/null)" = "$1" ]; then return 0; fi
  for f in "$OPERATORS_DIR/$1"/crds/*; do
    kc admin apply --server-side --force-conflicts -f "$f" > /dev/null
    names+=("crd/$(yq -r .metadata.name "$f")")
  done
  kc admin wait --for=condition=Established --timeout=60s "${names[@]}" > /dev/null
  echo "$1" > "$applied"
  echo "$1: applied its CRDs ${names[*]#crd/}"
}

# controller_writes ACCOUNT NS: what the controller's account sent the policy in NS (not dry runs), by kind
# and operation, and how many requests the policy patched or denied; fails when it patched or denied any
controller_writes() {
  local report
  report=$(jq -cs --arg u "system:serviceaccount:$1" --arg ns "$2" '
    [.[] | select(.namespace == $ns and .userInfo.username == $u and (.dryRun | not))] |
    {requests: length, patched: map(select(.patch)) | length, denied: map(select(.allowed | not)) | length,
     kinds: (group_by(.kind + " " + .operation + (if .subResource then "/" + .subResource else "" end)) |
       map("\(length) \(.[0].kind) \(.[0].operation)\(if .[0].subResource then "/" + .[0].subResource else "" end)") | join(", "))}' \
    "$RUN/reviews.jsonl")
  echo "$report"
  [ "$(jq '.patched + .denied' <<< "$report")" -eq 0 ]
}

pod_count() { kc admin -n "$1" get pods --no-headers ${2:+-l "$2"} 2> /dev/null | wc -l; }
pods_at_least() { [ "$(pod_count "$1" "${3:-}")" -ge "$2" ]; }

# first_built PREFIX: the newest built version of an operator (the keys sort by version)
first_built() {
  local d
  for d in $(find "$OPERATORS_DIR" -maxdepth 1 -name "$1-*" | sort -rV); do
    if [ -f "$d/.complete" ]; then basename "$d"; return; fi
  done
  return 1
}
