# compare.bash: sends the cases of cases.json through the API server into two namespaces, one covered by the
# native policies (policies.yaml) and one by the policy's webhook, and compares what each stored. Sourced by
# test/cluster/native.bats after lib.bash (kc, RUN, IMAGE, wait_until).
#
# A case names a request of testdata/requests (its object, oldObject, requester and subresource) or gives its
# own: `pod`/`deployment` (metadata of a new Pod or of a Deployment's template), `oldPod`/`oldDeployment` and
# `patch` (a JSON merge patch), `as` and `groups`/`groupCount` (the requester, impersonated by admin unless it
# has a certificate here), `op` (create, update, status, scale, binding, bindings, delete). The old object of an
# update is created first by kube-controller-manager (a trusted controller: its value is kept as sent).
# shellcheck shell=bash

NATIVE_DIR=${NATIVE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
CORPUS=${CORPUS:-$NATIVE_DIR/../../testdata/requests}
# The keys whose values are compared, wherever they sit in the stored object (pod metadata, templates, maps of
# custom resources).
VIEW_ANNOTATIONS='["yunikorn.apache.org/user.info","yunikorn.apache.org/task-groups","yunikorn.apache.org/app-id"]'
VIEW_LABELS='["yunikorn.apache.org/username","yunikorn.apache.org/app-id","applicationId","spark-app-selector"]'

# webhook_settings: the webhook's settings, the spark-operator, kuberay and flink-operator examples' together (the
# native policies stand for the same: their systemUsers and customWorkloads). native.bats and native-cost.bats.
webhook_settings() {
  local s=$NATIVE_DIR/../../testdata/settings
  jq -sc '{systemUsers: (map(.systemUsers) | add | unique), customWorkloads: (map(.customWorkloads) | add)}' \
    "$s/spark-operator.json" "$s/kuberay.json" "$s/flink-operator.json"
}

# requester_args WHO [GROUP...]: kubectl's global flags to act as WHO: the user's own certificate, or admin
# impersonating WHO (a service account then gets its groups from the API server, as a token would)
requester_args() {
  local who=$1 g
  shift
  case $who in
    alice | bob | airflow | carol | binder) echo "--kubeconfig=$RUN/$who.kubeconfig" ;;
    system:kube-controller-manager) echo "--kubeconfig=$RUN/kcm.kubeconfig" ;;
    *)
      echo "--kubeconfig=$RUN/admin.kubeconfig"
      echo "--as=$who"
      for g in "$@"; do echo "--as-group=$g"; done
      ;;
  esac
}

# case_json ID: the case, with the corpus request's parts filled in (object, old, as, groups, op, resource)
case_json() {
  local c req
  c=$(jq -c --arg id "$1" '.[] | select(.id == $id)' "$NATIVE_DIR/cases.json")
  req=$(jq -r '.request // empty' <<< "$c")
  if [ -n "$req" ]; then
    jq -c --slurpfile r "$CORPUS/$req.json" '. as $c | $r[0] as $r |
      .object //= $r.object | .old //= $r.oldObject | .as //= $r.userInfo.username |
      .op //= (if $r.operation == "DELETE" then "delete" elif $r.kind.kind == "Binding" then
        (if $r.resource.resource == "bindings" and ($r.subResource // "") == "" then "bindings" else "binding" end)
        elif $r.operation == "UPDATE" then (if ($r.subResource // "") == "status" then "status" else "update" end)
        else "create" end) |
      .resource //= ($r.resource.resource + (if $r.resource.group == "" then "" else "." + $r.resource.group end))' \
      <<< "$c"
  else
    jq -c '
      def pod(m): {apiVersion: "v1", kind: "Pod", metadata: m, spec: {containers: [{name: "c", image: "registry.invalid/pause:1"}]}};
      def deployment(m): {apiVersion: "apps/v1", kind: "Deployment", metadata: {},
        spec: {replicas: 0, selector: {matchLabels: {app: "x"}},
               template: {metadata: (m | .labels = ((.labels // {}) + {app: "x"})), spec: {containers: [{name: "c", image: "registry.invalid/pause:1"}]}}}};
      if .pod then .object = pod(.pod) | .resource = "pods" elif .deployment then .object = deployment(.deployment) | .resource = "deployments.apps" else . end |
      if .oldPod then .old = pod(.oldPod) | .resource = "pods" elif .oldDeployment then .old = deployment(.oldDeployment) | .resource = "deployments.apps" else . end |
      .op //= (if .old then "update" else "create" end)' <<< "$c"
  fi
}

# prepared NS ID [EDIT]: the object of a request, ready to send again: named after the case, in NS, without what
# the API server sets itself, edited by the jq filter EDIT; "@NS@" in any string becomes NS
prepared() {
  jq -c --arg ns "$1" --arg id "$2" "${3:-.} | "'
    del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation,
        .metadata.managedFields, .metadata.ownerReferences, .metadata.generateName, .metadata.selfLink, .status) |
    .metadata.namespace = $ns | .metadata.name = $id |
    walk(if type == "string" then gsub("@NS@"; $ns) else . end)'
}

# merge_patch OLD NEW: the JSON merge patch from OLD to NEW (the fields the server sets left out)
merge_patch() {
  jq -nc --argjson a "$1" --argjson b "$2" '
    def mp($a; $b): if ($a | type) == "object" and ($b | type) == "object" then
      reduce ((($a | keys) + ($b | keys)) | unique)[] as $k ({};
        if ($b | has($k) | not) then .[$k] = null elif ($a | has($k) | not) then .[$k] = $b[$k]
        elif $a[$k] == $b[$k] then . else .[$k] = mp($a[$k]; $b[$k]) end)
      else $b end;
    def clean: del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation,
      .metadata.managedFields, .metadata.namespace, .metadata.name, .metadata.ownerReferences);
    mp($a | clean; $b | clean)'
}

# view NS: the compared values of the object on stdin, as a sorted list of {path, value} ("@NS@" for NS)
view() {
  jq -c --arg ns "$1" --argjson ann "$VIEW_ANNOTATIONS" --argjson lab "$VIEW_LABELS" '
    [paths(type == "string") as $p | select(($p | length) >= 2) |
      select(($p[-2] == "annotations" and ($ann | index($p[-1]))) or ($p[-2] == "labels" and ($lab | index($p[-1])))) |
      {path: ($p | map(tostring) | join(".")), key: $p[-1], value: (getpath($p) | gsub($ns; "@NS@"))}] | sort_by(.path)'
}

# run_case NS ID: sends the case into NS; prints one JSON line: accepted, message, warnings, view (of what is
# stored afterwards: the object, or the pod for a Binding), and setup (an error preparing the old object)
run_case() {
  local ns=$1 id=$2 c who op obj old res edit out err rc=0 setup="" groups=() args=() patch
  c=$(case_json "$id")
  who=$(jq -r .as <<< "$c")
  op=$(jq -r .op <<< "$c")
  res=$(jq -r '.resource // empty' <<< "$c")
  edit=$(jq -r '.edit // "."' <<< "$c")
  mapfile -t groups < <(jq -r '(.groups // [])[], (if .groupCount then range(.groupCount) | "group-\(. + 10000 | tostring | .[1:])" else empty end)' <<< "$c")
  mapfile -t args < <(requester_args "$who" "${groups[@]}")
  out=$RUN/native/out.$$ err=$RUN/native/err.$$
  mkdir -p "$RUN/native"
  # The object an UPDATE, a Binding or a DELETE acts on, made by a trusted controller.
  if [ "$op" != create ] && [ "$op" != bindings ]; then
    if [ "$op" = binding ]; then
      old=$(jq -nc --arg v '{"user":"alice","groups":["devops","system:authenticated"]}' \
        '{apiVersion: "v1", kind: "Pod", metadata: {annotations: {"yunikorn.apache.org/user.info": $v}},
          spec: {containers: [{name: "c", image: "registry.invalid/pause:1"}]}}' | prepared "$ns" "$id")
    else
      old=$(jq -c '.old // .object' <<< "$c" | prepared "$ns" "$id" "$edit")
    fi
    if ! kc kcm -n "$ns" create --validate=false -f - -o json <<< "$old" > "$out.old" 2> "$err"; then
      setup=$(head -c 300 "$err")
    fi
  fi
  case $op in
    create)
      obj=$(jq -c .object <<< "$c" | prepared "$ns" "$id" "$edit")
      kubectl "${args[@]}" --request-timeout=20s -n "$ns" create --validate=false -f - -o json <<< "$obj" > "$out" 2> "$err" || rc=$?
      ;;
    update | status | scale)
      if [ "$op" = scale ]; then
        patch=$(jq -c .patch <<< "$c")
        args+=(--subresource=scale)
      else
        patch=$(jq -c '.patch // empty' <<< "$c")
        [ -n "$patch" ] || patch=$(merge_patch "$(jq -c .old <<< "$c")" "$(jq -c .object <<< "$c")")
        if [ "$op" = status ]; then args+=(--subresource=status); else patch=$(jq -c 'del(.status)' <<< "$patch"); fi
      fi
      kubectl "${args[@]}" --request-timeout=20s -n "$ns" patch "$res" "$id" --type=merge -p "$patch" -o json > "$out" 2> "$err" || rc=$?
      [ "$op" != scale ] || kc admin -n "$ns" get "$res" "$id" -o json > "$out" 2> /dev/null || true
      ;;
    binding | bindings)
      if [ "$op" = bindings ]; then
        # the pod the Binding names, made first (by the trusted controller, with alice's value)
        jq -nc --arg v '{"user":"alice","groups":["devops","system:authenticated"]}' \
          '{apiVersion: "v1", kind: "Pod", metadata: {annotations: {"yunikorn.apache.org/user.info": $v}},
            spec: {containers: [{name: "c", image: "registry.invalid/pause:1"}]}}' | prepared "$ns" "$id" |
          kc kcm -n "$ns" create --validate=false -f - > /dev/null 2>&1 || setup="the pod to bind could not be created"
      fi
      obj=$(jq -c .object <<< "$c" | prepared "$ns" "$id")
      local path=/api/v1/namespaces/$ns/bindings
      [ "$op" = bindings ] || path=/api/v1/namespaces/$ns/pods/$id/binding
      kubectl "${args[@]}" --request-timeout=20s create --raw "$path" -f - <<< "$obj" > /dev/null 2> "$err" || rc=$?
      kc admin -n "$ns" get pod "$id" -o json > "$out" 2> /dev/null || true
      ;;
    delete)
      kubectl "${args[@]}" --request-timeout=20s -n "$ns" delete "$res" "$id" --wait=false > /dev/null 2> "$err" || rc=$?
      echo '{}' > "$out"
      ;;
    *) echo "run_case: unknown op $op" >&2; return 2 ;;
  esac
  [ "$rc" -eq 0 ] || : > "$out"
  # A refused request stores nothing new: the view is the old object's (or nothing).
  if [ "$rc" -ne 0 ] && [ -s "$out.old" ] && [ "$op" != create ]; then cp "$out.old" "$out"; fi
  [ -s "$out" ] || echo '{}' > "$out"
  jq -c --arg id "$id" --arg ns "$ns" --argjson accepted "$([ "$rc" -eq 0 ] && echo true || echo false)" \
    --arg err "$(cat "$err")" --arg setup "$setup" --argjson view "$(view "$ns" < "$out")" -n '
    {id: $id, accepted: $accepted,
     message: ($err | split("\n") | map(select(startswith("Warning: ") | not) | select(length > 0)) | join(" ") |
       sub("^.*denied the request: "; "") | sub("^.*denied request: "; "")),
     warnings: ($err | split("\n") | map(select(startswith("Warning: ")) | sub("^Warning: "; ""))),
     view: $view, setup: $setup}'
  rm -f "$out" "$out.old" "$err"
}
