#!/usr/bin/env bats
# yunikorn.bats: what Apache YuniKorn's scheduler does with the pods the policy stamped (issue 30). yunikorn.sh
# runs it once per YuniKorn version, through run.sh, in a private network namespace. Each scenario asserts what
# YuniKorn did (the pod bound or failed, its events, the REST API's application user and user usage) and adds
# a row to the stage's table. The scenarios run in order: the restart and audit at the end read what the
# earlier ones left. Scenarios 13-15, last, run YuniKorn's own admission controller beside the policy.
bats_require_minimum_version 1.5.0

load lib
load yunikorn
load guard

setup_file() {
  yk_install
  new_namespace "$NS_A"
  new_namespace "$NS_B"
  new_namespace "$NS_OFF" unlabelled
  yk_start
  : > "$RUN/yk-stamps.tsv"
}

# A scenario that changes the settings or the webhook configuration, or stops the webhook or the scheduler,
# puts them back at its end; this does it when it failed half-way. On failure, the scheduler's log tail.
teardown() {
  if [ ! -f "$RUN/pids/kwhost.pid" ]; then start_kwhost "$(cat "$RUN/kwhost.settings")" > /dev/null; fi
  if [ "$(cat "$RUN/webhook.variant")" != default ]; then
    register_webhook
    kc admin delete mutatingwebhookconfiguration "$POLICY_FIRST_NAME" --ignore-not-found > /dev/null
  fi
  if [ ! -f "$RUN/pids/yunikorn.pid" ]; then yk_start > /dev/null || true; fi
  unregister_mutators
  if [ "${BATS_TEST_COMPLETED:-}" != 1 ]; then yk_log_tail; fi
}

use_settings() {
  if [ "$(cat "$RUN/kwhost.settings")" != "$1" ]; then
    start_kwhost "$1"
    wait_webhook "$NS_A"
  fi
  echo "policy settings: $1"
}

@test "1. alice's pod to root.alice (submitacl alice): stamped alice, bound, the application's user is alice" {
  yk_pod p1 yk-1 root.alice > "$BATS_TEST_TMPDIR/p.json"
  submit alice "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_A" p1 || true
  note_stamp "$NS_A" p1
  local seen
  seen="stamp $(stamp_user "$NS_A" p1), $(outcome "$NS_A" p1), app user $(app_user root.alice yk-1), usage alice: $(usage_apps alice)"
  echo "events: $(events "$NS_A" p1)"
  record "1 alice -> root.alice" "stamp alice, bound, app user alice" "$seen"
  [ "$(stamp_user "$NS_A" p1)" = alice ]
  [ "$(outcome "$NS_A" p1)" = bound ]
  [ "$(app_user root.alice yk-1)" = alice ]
  [[ ",$(usage_apps alice)," == *,yk-1,* ]]
  [[ "$(events "$NS_A" p1)" == *Scheduled* ]]
}

@test "2. bob's pod carrying alice's value, policy on: stamped bob, YuniKorn rejects it (ApplicationRejected)" {
  yk_pod p2 yk-2 root.alice "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"Warning:"* ]]
  wait_failed "$NS_A" p2 || true
  note_stamp "$NS_A" p2
  local seen
  seen="stamp $(stamp_user "$NS_A" p2), $(outcome "$NS_A" p2), events $(events "$NS_A" p2), usage alice: $(usage_apps alice)"
  record "2 bob forges alice (policy on)" "stamp bob, rejected" "$seen"
  [ "$(stamp_user "$NS_A" p2)" = bob ]
  [ "$(outcome "$NS_A" p2)" = rejected ]
  [[ "$(events "$NS_A" p2)" == *ApplicationFailed* ]] || [[ "$(events "$NS_A" p2)" == *ApplicationRejected* ]]
  [[ ",$(usage_apps alice)," != *,yk-2,* ]]
}

@test "3. control run, policy off (a namespace the webhook does not cover): bob's pod carrying alice's value runs as alice" {
  yk_pod p3 yk-3 root.alice "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_OFF" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_OFF" p3 || true
  local seen
  seen="stamp $(stamp_user "$NS_OFF" p3), $(outcome "$NS_OFF" p3), app user $(app_user root.alice yk-3), usage alice: $(usage_apps alice)"
  record "3 bob forges alice (policy OFF)" "app user alice, bound (the hole)" "$seen"
  [ "$(outcome "$NS_OFF" p3)" = bound ]
  [ "$(app_user root.alice yk-3)" = alice ]
  [[ ",$(usage_apps alice)," == *,yk-3,* ]]
}

@test "3b. a MutatingAdmissionPolicy copies the namespace's user.info after the stamp: without the guard bob's pod runs as alice; with the guard (examples/guard.yaml) it is refused" {
  local ns=yk-copied seen
  map_served || skip "this API server serves no MutatingAdmissionPolicy v1 (before 1.36)"
  new_namespace "$ns"
  kc admin annotate namespace "$ns" "$ANNOTATION=$ALICE_VALUE" > /dev/null # whoever may annotate the namespace
  register_map_copier
  wait_until 60 "the copier to be in force in $ns" copier_live "$ns" "$ALICE_VALUE" bob
  yk_pod p3b yk-3b root.alice > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$ns" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$ns" p3b || true
  seen="no guard: stamp $(stamp_user "$ns" p3b), $(outcome "$ns" p3b), app user $(app_user root.alice yk-3b)"
  [ "$(stamp_user "$ns" p3b)" = alice ]
  [ "$(outcome "$ns" p3b)" = bound ]
  [ "$(app_user root.alice yk-3b)" = alice ]
  register_guard
  wait_until 60 "the guard to refuse in $ns" guard_live "$ns" bob
  yk_pod p3c yk-3c root.alice > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$ns" "$BATS_TEST_TMPDIR/p.json"
  seen="$seen; guard: exit $status"
  record "3b MAP copies alice after the stamp" "no guard: app user alice, bound; guard: refused" "$seen"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"$MUTATION_REFUSAL"* ]]
  ! kc admin -n "$ns" get pod p3c > /dev/null 2>&1
  unregister_mutators
  kc admin delete namespace "$ns" --wait=false > /dev/null
}

@test "4. bob's pod with the legacy label username: alice: stamped bob, rejected as bob (the annotation wins)" {
  yk_pod p4 yk-4 root.alice "" '.metadata.labels["yunikorn.apache.org/username"] = "alice"' > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_failed "$NS_A" p4 || true
  note_stamp "$NS_A" p4
  local seen
  seen="stamp $(stamp_user "$NS_A" p4), $(outcome "$NS_A" p4)"
  record "4 bob, legacy label alice" "stamp bob, rejected" "$seen"
  [ "$(stamp_user "$NS_A" p4)" = bob ]
  [ "$(outcome "$NS_A" p4)" = rejected ]
  # the control run: without the policy YuniKorn reads the label
  yk_pod p4 yk-4-off root.alice "" '.metadata.labels["yunikorn.apache.org/username"] = "alice"' > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_OFF" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_OFF" p4 || true
  record "4 same, policy OFF" "app user alice, bound (the hole)" "stamp $(stamp_user "$NS_OFF" p4), $(outcome "$NS_OFF" p4), app user $(app_user root.alice yk-4-off)"
  [ "$(outcome "$NS_OFF" p4)" = bound ]
  [ "$(app_user root.alice yk-4-off)" = alice ]
}

@test "5. bob's second application in root.bobs (maxapplications 1 for bob) is held, binds once his first is gone; charged to bob, never alice" {
  yk_pod p5a yk-5a root.bobs > "$BATS_TEST_TMPDIR/a.json"
  yk_pod p5b yk-5b root.bobs "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/b.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/a.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_A" p5a
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/b.json"
  [ "$status" -eq 0 ]
  note_stamp "$NS_A" p5b
  wait_until 60 "yk-5b to be Accepted" bash -c "[ \"\$(curl -sf --max-time 5 '$YK_REST/partition/default/queue/root.bobs/application/yk-5b' | jq -r .applicationState)\" = Accepted ]" || true
  local held_state held_outcome usage_bob usage_alice t0=$SECONDS waited
  held_state=$(app_state root.bobs yk-5b) held_outcome=$(outcome "$NS_A" p5b)
  usage_bob=$(usage_apps bob) usage_alice=$(usage_apps alice)
  kc admin -n "$NS_A" delete pod p5a --grace-period=0 --force > /dev/null 2>&1
  wait_bound "$NS_A" p5b 120 || true
  waited=$((SECONDS - t0))
  record "5 bob's 2nd app, limit 1" "held (Accepted), binds after 1st deleted; usage bob" \
    "2nd: $held_state/$held_outcome; after delete: $(outcome "$NS_A" p5b) in ${waited}s; usage bob: $usage_bob; alice: $usage_alice"
  [ "$held_state" = Accepted ]
  [ "$held_outcome" = pending ]
  [[ ",$usage_bob," == *,yk-5a,* ]]
  [[ ",$usage_alice," != *,yk-5* ]]
  [ "$(outcome "$NS_A" p5b)" = bound ]
  [ "$(app_user root.bobs yk-5b)" = bob ]
  [[ ",$(usage_apps alice)," != *,yk-5* ]]
}

# deployment_d6 [APP]: bob's Deployment d6, its template carrying alice's value
deployment_d6() {
  jq -n --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" --arg img "$IMAGE" --arg app "${1:-yk-6}" '{apiVersion: "apps/v1", kind: "Deployment",
    metadata: {name: "d6"}, spec: {replicas: 1, selector: {matchLabels: {app: "d6"}},
      template: {metadata: {labels: {app: "d6", applicationId: $app, queue: "root.alice"}, annotations: {($k): $v}},
        spec: {schedulerName: "yunikorn", tolerations: [{operator: "Exists"}],
          containers: [{name: "c", image: $img, resources: {requests: {cpu: "100m", memory: "64Mi"}}}]}}}}'
}

@test "6. bob's Deployment whose template carries alice's value: its pods are stamped bob and rejected; one ReplicaSet, no loop" {
  deployment_d6 > "$BATS_TEST_TMPDIR/d.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/d.json"
  [ "$status" -eq 0 ]
  failed_pod() { kc admin -n "$NS_A" get pods -l app=d6 -o json | jq -e '[.items[] | select(.status.reason == "ApplicationRejected")] | length > 0'; }
  wait_until 90 "a pod of d6 to be rejected" failed_pod || true
  local pods users rs
  pods=$(kc admin -n "$NS_A" get pods -l app=d6 -o json)
  users=$(jq -r --arg k "$ANNOTATION" '[.items[] | .metadata.annotations[$k] | fromjson | .user] | unique | join(",")' <<< "$pods")
  rs=$(kc admin -n "$NS_A" get rs -l app=d6 --no-headers | wc -l)
  record "6 bob's Deployment, template forged" "pods stamp bob, rejected; 1 ReplicaSet" \
    "pods $(jq '.items | length' <<< "$pods") stamp $users, rejected $(jq '[.items[] | select(.status.reason == "ApplicationRejected")] | length' <<< "$pods"), bound $(jq '[.items[] | select(.spec.nodeName != null)] | length' <<< "$pods"); ReplicaSets $rs"
  [ "$users" = bob ]
  [ "$(jq '[.items[] | select(.status.reason == "ApplicationRejected")] | length' <<< "$pods")" -ge 1 ]
  [ "$(jq '[.items[] | select(.spec.nodeName != null)] | length' <<< "$pods")" -eq 0 ]
  [ "$rs" -eq 1 ]
  kc admin -n "$NS_A" delete deployment d6 --wait=false > /dev/null
  # the control run: without the policy the controllers copy alice's value and YuniKorn runs the pods as alice
  deployment_d6 yk-6-off > "$BATS_TEST_TMPDIR/d.json"
  submit bob "$NS_OFF" "$BATS_TEST_TMPDIR/d.json"
  [ "$status" -eq 0 ]
  bound_pod() { kc admin -n "$NS_OFF" get pods -l app=d6 -o json | jq -e '[.items[] | select(.spec.nodeName != null)] | length > 0'; }
  wait_until 60 "a pod of d6 to be bound" bound_pod || true
  record "6 same, policy OFF" "pods run as alice (the hole)" \
    "bound $(kc admin -n "$NS_OFF" get pods -l app=d6 -o json | jq '[.items[] | select(.spec.nodeName != null)] | length'), app user $(app_user root.alice yk-6-off)"
  [ "$(app_user root.alice yk-6-off)" = alice ]
  kc admin -n "$NS_OFF" delete deployment d6 --wait=false > /dev/null
}

@test "7. a trusted external submitter (bypassAuth, airflow) supplying alice: alice, bound" {
  use_settings '{"bypassAuth":true,"externalUsers":["^airflow$"]}'
  yk_pod p7 yk-7 root.alice "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/p.json"
  submit airflow "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_A" p7 || true
  note_stamp "$NS_A" p7
  record "7 trusted external (airflow) supplies alice" "alice, bound" \
    "stamp $(stamp_user "$NS_A" p7), $(outcome "$NS_A" p7), app user $(app_user root.alice yk-7)"
  use_settings '{}'
  [ "$(stamp_user "$NS_A" p7)" = alice ]
  [ "$(outcome "$NS_A" p7)" = bound ]
  [ "$(app_user root.alice yk-7)" = alice ]
}

@test "8. documented limit: bob's pod naming alice's explicit application ID joins it and runs as alice, stamped bob" {
  yk_pod p8 yk-1 root.alice > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_A" p8 || true
  note_stamp "$NS_A" p8
  record "8 bob joins alice's app ID (limit)" "runs as alice (documented limit)" \
    "stamp $(stamp_user "$NS_A" p8), $(outcome "$NS_A" p8), app user $(app_user root.alice yk-1)"
  [ "$(stamp_user "$NS_A" p8)" = bob ]
  [ "$(outcome "$NS_A" p8)" = bound ]
  [ "$(app_user root.alice yk-1)" = alice ]
}

@test "9. bob's pod naming another namespace's generated application ID is refused at admission (rule 14)" {
  yk_pod p9 "yunikorn-$NS_A-autogen" root.alice > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_B" "$BATS_TEST_TMPDIR/p.json"
  record "9 bob names yunikorn-$NS_A-autogen from $NS_B" "refused at admission (rule 14)" \
    "exit $status: $(grep -o 'application ID .*' <<< "$stderr" | head -c 120)"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"application ID yunikorn-$NS_A-autogen is the generated application of namespace $NS_A: a pod may join it only from that namespace"* ]]
  [ -z "$(kc admin -n "$NS_B" get pod p9 --ignore-not-found -o name)" ]
}

@test "9b. both readings of the application ID (rule 14): the label yunikorn.apache.org/app-id names the pod's own application, the annotation another namespace's generated one (and the reverse): refused" {
  # YuniKorn 1.8 reads the label yunikorn.apache.org/app-id first; 1.4 knows no such label and reads the
  # annotation first (k8shim GetApplicationIDFromPod): under 1.4 the first pod would join yk-a's generated application
  local label annotation seen="" refused=0 gen="yunikorn-$NS_A-autogen"
  for label in yk-9b "$gen"; do
    annotation=$gen
    [ "$label" = yk-9b ] || annotation=yk-9b
    yk_pod p9b yk-9b root.alice | jq --arg l "$label" --arg a "$annotation" 'del(.metadata.labels.applicationId) |
      .metadata.labels["yunikorn.apache.org/app-id"] = $l | .metadata.annotations["yunikorn.apache.org/app-id"] = $a' > "$BATS_TEST_TMPDIR/p.json"
    submit bob "$NS_B" "$BATS_TEST_TMPDIR/p.json"
    seen="${seen}label $label, annotation $annotation: exit $status $(grep -o 'application ID [^:]*' <<< "$stderr" | head -n 1); "
    if [ "$status" -ne 0 ] && [[ "$stderr" == *"application ID $gen is the generated application of namespace $NS_A: a pod may join it only from that namespace"* ]] &&
      [ -z "$(kc admin -n "$NS_B" get pod p9b --ignore-not-found -o name)" ]; then
      refused=$((refused + 1))
    fi
    kc admin -n "$NS_B" delete pod p9b --ignore-not-found --grace-period=0 --force > /dev/null 2>&1 || true
  done
  record "9b label/annotation app-id: own and $gen, from $NS_B" "both refused at admission (rule 14, both readings)" "${seen%; }"
  [ "$refused" -eq 2 ]
}

@test "10. a Binding carrying the annotation is refused (rule 10); the scheduler's own Bindings never reach the webhook" {
  yk_pod p10 yk-10 root.alice "" '.spec.schedulerName = "e2e-nobody"' > "$BATS_TEST_TMPDIR/p.json"
  submit alice "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  jq -n --arg k "$ANNOTATION" --arg v "$BOB_VALUE" '{apiVersion: "v1", kind: "Binding",
    metadata: {name: "p10", annotations: {($k): $v}}, target: {apiVersion: "v1", kind: "Node", name: "yk-node-1"}}' > "$BATS_TEST_TMPDIR/b.json"
  run --separate-stderr kc binder create --raw "/api/v1/namespaces/$NS_A/pods/p10/binding" -f "$BATS_TEST_TMPDIR/b.json"
  echo "binder: Binding of p10 carrying bob's value -> exit $status; stderr: $stderr"
  local bound by_scheduler
  bound=$(kc admin get pods -A -o json | jq --arg ns "$NS_A" '[.items[] | select(.metadata.namespace == $ns and .spec.schedulerName == "yunikorn" and .spec.nodeName != null)] | length')
  by_scheduler=$(jq -c --arg u "$YK_USER" 'select(.kind == "Binding" and .userInfo.username == $u)' "$RUN/reviews.jsonl" | wc -l)
  record "10 Binding carrying the annotation" "refused; scheduler's Bindings pass untouched" \
    "exit $status; pods YuniKorn bound in $NS_A: $bound; its Bindings seen by the webhook: $by_scheduler"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"a Binding cannot set the $ANNOTATION annotation"* ]]
  [ "$(stamp_user "$NS_A" p10)" = alice ]
  [ "$bound" -ge 3 ]
  [ "$by_scheduler" -eq 0 ]
}

@test "11. a declared custom resource: the pods a trusted stand-in operator creates from it carry the author's stamp, and YuniKorn uses it" {
  use_settings "$(jq -c '.' "$BATS_TEST_DIRNAME/../../testdata/settings/kuberay.json")"
  kc admin apply -f "$CRDS" > /dev/null
  kc admin wait --for=condition=Established --timeout=60s crd/rayclusters.ray.io > /dev/null
  register_webhook custom-resources
  ray_stamped() {
    kc alice -n "$NS_A" create --dry-run=server -o json -f "$BATS_TEST_TMPDIR/rc.json" 2> /dev/null |
      jq -e --arg k "$ANNOTATION" '.spec.headGroupSpec.template.metadata.annotations[$k] != null' > /dev/null
  }
  local author value
  for author in alice bob; do
    # bob's RayCluster carries alice's value: the policy replaces it with his (rule 11)
    value=""
    [ "$author" = bob ] && value=$ALICE_VALUE
    jq -n --arg v "$value" --arg k "$ANNOTATION" --arg img "$IMAGE" --arg name "rc11-$author" '{apiVersion: "ray.io/v1", kind: "RayCluster",
      metadata: {name: $name}, spec: {rayVersion: "2.9.0", headGroupSpec: {rayStartParams: {},
        template: ((if $v == "" then {} else {metadata: {annotations: {($k): $v}}} end) + {spec: {containers: [{name: "head", image: $img}]}})},
        workerGroupSpecs: []}}' > "$BATS_TEST_TMPDIR/rc.json"
    wait_until 60 "the webhook to stamp RayClusters" ray_stamped
    submit "$author" "$NS_A" "$BATS_TEST_TMPDIR/rc.json"
    [ "$status" -eq 0 ]
    # The stand-in operator (KubeRay's account, trusted): the head pod from the head template, as KubeRay builds it.
    kc admin -n "$NS_A" get raycluster "rc11-$author" -o json |
      jq --arg img "$IMAGE" --arg app "yk-11-$author" '.spec.headGroupSpec.template as $t | {apiVersion: "v1", kind: "Pod",
        metadata: {name: (.metadata.name + "-head"), annotations: ($t.metadata.annotations // {}),
          labels: {applicationId: $app, queue: "root.alice", "ray.io/cluster": .metadata.name}},
        spec: ($t.spec + {schedulerName: "yunikorn", tolerations: [{operator: "Exists"}]})}' > "$BATS_TEST_TMPDIR/head.json"
    run --separate-stderr kc admin -n "$NS_A" create -f "$BATS_TEST_TMPDIR/head.json" \
      --as=system:serviceaccount:kube-system:kuberay-operator --as-group=system:serviceaccounts --as-group=system:serviceaccounts:kube-system
    echo "stand-in operator: create rc11-$author-head -> exit $status; stderr: ${stderr:-<none>}"
    [ "$status" -eq 0 ]
  done
  wait_bound "$NS_A" rc11-alice-head || true
  wait_failed "$NS_A" rc11-bob-head || true
  note_stamp "$NS_A" rc11-alice-head
  note_stamp "$NS_A" rc11-bob-head
  record "11 RayCluster -> operator's pods" "pods carry the author's stamp; YuniKorn uses it" \
    "alice's: stamp $(stamp_user "$NS_A" rc11-alice-head), $(outcome "$NS_A" rc11-alice-head), app user $(app_user root.alice yk-11-alice); bob's (forged alice): stamp $(stamp_user "$NS_A" rc11-bob-head), $(outcome "$NS_A" rc11-bob-head)"
  register_webhook
  use_settings '{}'
  [ "$(stamp_user "$NS_A" rc11-alice-head)" = alice ]
  [ "$(outcome "$NS_A" rc11-alice-head)" = bound ]
  [ "$(app_user root.alice yk-11-alice)" = alice ]
  [ "$(stamp_user "$NS_A" rc11-bob-head)" = bob ]
  [ "$(outcome "$NS_A" rc11-bob-head)" = rejected ]
}

# gang_pod NAME APP [TASK-GROUP-ANNOTATIONS-JSON] [JQ-FILTER-OF-THE-TASK-GROUP]: a pod of a gang of 3 (task group
# tg, minMember 3) for root.alice: YuniKorn creates 3 placeholders for it under its own account
gang_pod() {
  local extra=${3:-'{}'}
  yk_pod "$1" "$2" root.alice | jq --arg tg "$YK_TASK_GROUPS" --arg tgn "$YK_TASK_GROUP_NAME" --argjson extra "$extra" '
    .metadata.annotations = {($tgn): "tg", ($tg): ([{name: "tg", minMember: 3, minResource: {cpu: "100m", memory: "64Mi"},
      tolerations: [{operator: "Exists"}], annotations: $extra} | '"${4:-.}"'] | tojson)}'
}

# placeholders NS APP: one line per placeholder of APP (v1.4.0: annotation yunikorn.apache.org/placeholder, label
# applicationId; v1.8.0: internal.yunikorn.apache.org/placeholder, yunikorn.apache.org/app-id): name, the user in its stamp, bound or not
placeholders() {
  kc admin -n "$1" get pods -o json | jq -r --arg app "$2" --arg k "$ANNOTATION" '.items[] |
    select(any(.metadata.annotations // {} | to_entries[]; (.key | endswith("yunikorn.apache.org/placeholder")) and .value == "true") and (.metadata.labels.applicationId == $app or .metadata.labels["yunikorn.apache.org/app-id"] == $app)) |
    [.metadata.name, ((.metadata.annotations[$k] // "{}") | fromjson | .user // "<none>"), (if .spec.nodeName then "bound" else "pending" end)] | @tsv'
}
placeholder_count() { [ "$(placeholders "$1" "$2" | wc -l)" -ge "$3" ]; }
placeholders_bound() { [ "$(placeholders "$1" "$2" | grep -c '	bound$')" -ge "$3" ]; }

# gang_watch NS APP POD: what has been seen of the gang APP so far, kept in $BATS_TEST_TMPDIR/gang-APP: each
# placeholder line of placeholders() ever seen, and the originating pod POD's outcome. Once all are bound
# YuniKorn 1.8.0 replaces a placeholder with the originating pod (the placeholder goes): a snapshot may miss it.
gang_watch() {
  local f=$BATS_TEST_TMPDIR/gang-$2
  placeholders "$1" "$2" >> "$f"
  sort -u -o "$f" "$f"
  outcome "$1" "$3" > "$f.pod"
}
# gang_bound APP: how many members of the gang APP were seen bound: placeholders, plus the originating pod
# when it is bound (it took a placeholder's place)
gang_bound() {
  local f=$BATS_TEST_TMPDIR/gang-$1 n
  n=$(grep '	bound$' "$f" 2> /dev/null | cut -f1 | sort -u | wc -l)
  if [ "$(cat "$f.pod" 2> /dev/null)" = bound ]; then n=$((n + 1)); fi
  echo "$n"
}
# gang_stamps APP: the users of the stamps of every placeholder of APP seen, comma-separated
gang_stamps() { cut -f2 "$BATS_TEST_TMPDIR/gang-$1" 2> /dev/null | sort -u | paste -sd,; }
# gangs_bound N NS APP:POD...: watches each gang; true once N members of each were seen bound
gangs_bound() {
  local n=$1 ns=$2 ap ok=0
  shift 2
  for ap in "$@"; do
    gang_watch "$ns" "${ap%%:*}" "${ap#*:}"
    [ "$(gang_bound "${ap%%:*}")" -ge "$n" ] || ok=1
  done
  return $ok
}

# group_users NS POD: the users of the user.info values in the task groups' annotations of the pod, one per
# group (<none> for a group without one), comma-separated
group_users() {
  kc admin -n "$1" get pod "$2" -o json | jq -r --arg tg "$YK_TASK_GROUPS" --arg k "$ANNOTATION" '
    .metadata.annotations[$tg] | fromjson | map((.annotations // {})[$k] // "" | if . == "" then "<none>" else (fromjson | .user) end) | join(",")'
}

# placeholder_reviews APP: the webhook's records of the placeholders' CREATEs for APP (the scheduler's), as
# "admitted/warned" counts
placeholder_reviews() {
  jq -sr --arg u "$YK_USER" --arg ns "$NS_A" --arg p "tg-$1-" '[.[] | select(.namespace == $ns and .kind == "Pod" and
    .operation == "CREATE" and .userInfo.username == $u and (.name | startswith($p)))] |
    "\([.[] | select(.allowed)] | length)/\([.[] | select((.warnings // []) | length > 0)] | length)"' "$RUN/reviews.jsonl"
}

# systemUsers with YuniKorn's scheduler account trusted (examples/default.yaml)
yk_trusted_settings() {
  jq -cn --arg u "^$YK_USER\$" '{systemUsers: ["^system:serviceaccount:kube-system:", "^system:kube-controller-manager$", $u]}'
}

@test "12. gang scheduling, the scheduler untrusted (replace): alice's task groups carry her stamp (rule 16); the placeholders are admitted with the scheduler's identity and a warning, bound, in alice's application" {
  use_settings '{}'
  gang_pod p12-untrusted yk-12-untrusted > "$BATS_TEST_TMPDIR/p.json"
  submit alice "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  note_stamp "$NS_A" p12-untrusted
  wait_until 60 "the 3 members of yk-12-untrusted to be bound" gangs_bound 3 "$NS_A" yk-12-untrusted:p12-untrusted || true
  local groups reviews user bound stamps
  groups=$(group_users "$NS_A" p12-untrusted) reviews=$(placeholder_reviews yk-12-untrusted)
  user=$(app_user root.alice yk-12-untrusted) bound=$(gang_bound yk-12-untrusted) stamps=$(gang_stamps yk-12-untrusted)
  sed 's/^/  placeholder seen: /' "$BATS_TEST_TMPDIR/gang-yk-12-untrusted"
  record "12 gang, scheduler untrusted (replace)" "task groups alice; placeholders admitted with a warning, stamp scheduler; gang bound; app user alice" \
    "task groups $groups; placeholders admitted/warned $reviews, stamps $stamps; gang members bound $bound (p12-untrusted $(cat "$BATS_TEST_TMPDIR/gang-yk-12-untrusted.pod")); app user $user"
  # on 1.4.0 a restart would recover this gang as the scheduler's account (measured 2026-11-26): gone before any restart
  drop_gangs yk-12-untrusted
  [ "$groups" = alice ]
  [ "${reviews%/*}" -ge 3 ]
  [ "${reviews#*/}" -ge 3 ]
  [ "$bound" -ge 3 ]
  [ "$stamps" = "$YK_USER" ]
  [ "$user" = alice ]
}

# gang_users_now: the users of the two gang applications of scenario 12 (trusted); gangs_known: both are known
gang_users_now() { echo "open $(app_user root.sandbox yk-12-open), acl $(app_user root.alice yk-12-acl)"; }
gangs_known() { app_known root.sandbox yk-12-open && app_known root.alice yk-12-acl; }

@test "12. gang scheduling, the scheduler trusted (systemUsers): placeholders carry alice's stamp; every restart recovers the gang as alice (open queue and root.alice) and root.alice keeps scheduling" {
  use_settings "$(yk_trusted_settings)"
  # root.sandbox admits anyone (the user cannot be refused there: whose user is measured); root.alice admits alice only
  gang_pod p12-open yk-12-open | jq '.metadata.labels.queue = "root.sandbox"' > "$BATS_TEST_TMPDIR/o.json"
  gang_pod p12-acl yk-12-acl > "$BATS_TEST_TMPDIR/a.json"
  submit alice "$NS_A" "$BATS_TEST_TMPDIR/o.json"
  [ "$status" -eq 0 ]
  submit alice "$NS_A" "$BATS_TEST_TMPDIR/a.json"
  [ "$status" -eq 0 ]
  note_stamp "$NS_A" p12-open
  note_stamp "$NS_A" p12-acl
  wait_until 60 "the 3 members of each gang to be bound" gangs_bound 3 "$NS_A" yk-12-open:p12-open yk-12-acl:p12-acl || true
  local groups reviews live bound stamps
  groups="$(group_users "$NS_A" p12-open),$(group_users "$NS_A" p12-acl)"
  reviews="$(placeholder_reviews yk-12-open) $(placeholder_reviews yk-12-acl)"
  bound="$(gang_bound yk-12-open) $(gang_bound yk-12-acl)" stamps="$(gang_stamps yk-12-open) $(gang_stamps yk-12-acl)"
  cat "$BATS_TEST_TMPDIR/gang-yk-12-open" "$BATS_TEST_TMPDIR/gang-yk-12-acl" | sed 's/^/  placeholder seen: /'
  live=$(gang_users_now)
  record "12 gang, scheduler trusted" "task groups alice; placeholders admitted (no warning), stamp alice; gangs bound; app user alice" \
    "task groups $groups; placeholders admitted/warned $reviews, stamps $stamps; gang members bound $bound (p12-open $(cat "$BATS_TEST_TMPDIR/gang-yk-12-open.pod"), p12-acl $(cat "$BATS_TEST_TMPDIR/gang-yk-12-acl.pod")); $live"
  [ "$groups" = alice,alice ]
  local r_open r_acl
  read -r r_open r_acl <<< "$reviews"
  [ "${r_open%/*}" -ge 3 ] && [ "${r_acl%/*}" -ge 3 ]
  [ "${r_open#*/}" -eq 0 ] && [ "${r_acl#*/}" -eq 0 ]
  [ "${bound% *}" -ge 3 ] && [ "${bound#* }" -ge 3 ]
  [ "$stamps" = "alice alice" ]
  [ "$live" = "open alice, acl alice" ]

  # YUNIKORN_RESTARTS restarts (make test: 3; by hand: 10 or more), each wait bounded: ready within 60 s,
  # both applications recovered within 30 s
  local restarts=${YUNIKORN_RESTARTS:-3} i t0 users="" wrong=0 stalled=0 times="" now
  for i in $(seq 1 "$restarts"); do
    yk_stop
    t0=$SECONDS
    if ! yk_start 60 > /dev/null 2>&1; then
      stalled=$((stalled + 1))
      users="$users #$i: NOT ready in 60 s;"
      yk_stop
      yk_start 90 > /dev/null || true
      continue
    fi
    wait_until 30 "both gangs recovered" gangs_known || true
    times="$times$((SECONDS - t0))"
    now=$(gang_users_now)
    [ "$now" = "open alice, acl alice" ] || wrong=$((wrong + 1))
    users="$users #$i: $now;"
    times="$times "
  done
  echo "restarts:$users"
  # root.alice keeps scheduling: alice's gang is not rejected, and a new pod of hers binds
  yk_pod p12-after yk-12-after root.alice > "$BATS_TEST_TMPDIR/p.json"
  submit alice "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_A" p12-after 60 || true
  note_stamp "$NS_A" p12-after
  local after
  after="alice's gang pod $(outcome "$NS_A" p12-acl), placeholders bound now $(placeholders "$NS_A" yk-12-acl | grep -c '	bound$'), new pod p12-after $(outcome "$NS_A" p12-after) as $(app_user root.alice yk-12-after)"
  record "12 gang, scheduler trusted, $restarts restarts" "alice in every restart, ready each time; root.alice keeps scheduling" \
    "not alice in $wrong, not ready in $stalled of $restarts restarts (ready in ${times% } s); $after"
  drop_gangs yk-12-open yk-12-acl
  [ "$wrong" -eq 0 ]
  [ "$stalled" -eq 0 ]
  [ "$(outcome "$NS_A" p12-acl)" != rejected ]
  [ "$(outcome "$NS_A" p12-after)" = bound ]
  [ "$(app_user root.alice yk-12-after)" = alice ]
  use_settings '{}'
}

# tg_case USER NAME SETTINGS EXTRA FILTER: USER's gang pod NAME with task-group annotations EXTRA and FILTER applied
# to its task group, created under SETTINGS; sets status and stderr
tg_case() {
  use_settings "$3" > /dev/null
  gang_pod "$2" "yk-$2" "$4" "$5" > "$BATS_TEST_TMPDIR/p.json"
  submit "$1" "$NS_A" "$BATS_TEST_TMPDIR/p.json"
}

@test "12b. task groups (rules 15 and 16): user.info in a task group's labels or anywhere but its annotations is refused; in its annotations it is stamped (replace) or refused (reject)" {
  local refusal="the $YK_TASK_GROUPS annotation sets the $ANNOTATION annotation on placeholder pods: only trusted controllers and allow-listed submitters may"
  local forged seen=() ok=0
  forged=$(jq -cn --arg k "$ANNOTATION" --arg v "$ALICE_VALUE" '{($k): $v}')
  # rule 15: in the labels, as a nodeSelector key, under a member YuniKorn reads as annotations (ANNOTATIONS)
  local c filter want
  for c in "labels|.labels = $forged|$refusal" \
    "a nodeSelector key|.nodeSelector = $forged|$refusal" \
    "ANNOTATIONS|.ANNOTATIONS = $forged|is not plain JSON task groups: a task group has the member"; do
    IFS='|' read -r where filter want <<< "$c"
    tg_case bob p12b '{}' '{}' "$filter"
    seen+=("$where: exit $status $(grep -oE "the $YK_TASK_GROUPS annotation [^:]*" <<< "$stderr" | head -n 1)")
    if [ "$status" -ne 0 ] && [[ "$stderr" == *"$want"* ]] && [ -z "$(kc admin -n "$NS_A" get pod p12b --ignore-not-found -o name)" ]; then ok=$((ok + 1)); fi
  done
  # rule 16: alice's value in the group's annotations: replace stamps bob's (with the warning), reject refuses
  tg_case bob p12b-replace '{}' "$forged"
  local replaced_status=$status replaced_err=$stderr groups="" outcome_r=""
  if [ "$replaced_status" -eq 0 ]; then
    note_stamp "$NS_A" p12b-replace
    groups=$(group_users "$NS_A" p12b-replace)
    wait_failed "$NS_A" p12b-replace 60 || true
    outcome_r=$(outcome "$NS_A" p12b-replace)
  fi
  seen+=("annotations, replace: exit $replaced_status, stamp $(stamp_user "$NS_A" p12b-replace 2> /dev/null), task groups ${groups:-?}, $outcome_r")
  tg_case bob p12b-reject '{"onUntrustedAnnotation":"reject"}' "$forged"
  local reject_status=$status reject_err=$stderr
  seen+=("annotations, reject: exit $reject_status $(grep -oE "the $YK_TASK_GROUPS annotation [^:]*" <<< "$reject_err" | head -n 1)")
  use_settings '{}'
  record "12b bob's task groups carry alice's user.info" "labels, nodeSelector, ANNOTATIONS: refused (rule 15); annotations: bob's, rejected by root.alice (replace), refused (reject) (rule 16)" \
    "$(printf '%s; ' "${seen[@]}" | sed 's/; $//')"
  [ "$ok" -eq 3 ]
  [ "$replaced_status" -eq 0 ]
  [[ "$replaced_err" == *"Warning:"* ]]
  [ "$groups" = bob ]
  [ "$(stamp_user "$NS_A" p12b-replace)" = bob ]
  [ "$outcome_r" = rejected ]
  [ "$reject_status" -ne 0 ]
  [[ "$reject_err" == *"$refusal"* ]]
}

@test "fault: the webhook is down (failurePolicy Fail): no pod is created, so no unstamped pod reaches YuniKorn" {
  use_settings '{}'
  stop kwhost
  local who out=""
  for who in alice bob; do
    yk_pod "pwd-$who" "yk-wd-$who" root.sandbox > "$BATS_TEST_TMPDIR/p.json"
    submit "$who" "$NS_A" "$BATS_TEST_TMPDIR/p.json"
    out="$out$who: exit $status$( [[ "$stderr" == *"failed calling webhook"* ]] && echo ' (failed calling webhook)'); "
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"failed calling webhook"* ]]
  done
  start_kwhost '{}' > /dev/null
  wait_webhook "$NS_A"
  record "fault: webhook down, failurePolicy Fail" "no pod created, YuniKorn sees none" \
    "${out}pods: $(kc admin -n "$NS_A" get pods -l 'applicationId in (yk-wd-alice,yk-wd-bob)' --no-headers 2> /dev/null | wc -l), apps known: $(app_user root.sandbox yk-wd-alice)/$(app_user root.sandbox yk-wd-bob)"
  [ "$(kc admin -n "$NS_A" get pods -l 'applicationId in (yk-wd-alice,yk-wd-bob)' --no-headers 2> /dev/null | wc -l)" -eq 0 ]
  [ "$(app_user root.sandbox yk-wd-alice)" = "<none>" ]
  [ "$(app_user root.sandbox yk-wd-bob)" = "<none>" ]
}

# app_users QUEUE/APP...: "queue/app=user" for each application, one per line
APPS="root.alice/yk-1 root.alice/yk-7 root.alice/yk-11-alice root.bobs/yk-5b root.bobs/yk-5c"
app_users() {
  local qa
  for qa in "$@"; do echo "$qa=$(app_user "${qa%%/*}" "${qa#*/}")"; done
}
all_known() {
  local qa
  for qa in "$@"; do app_known "${qa%%/*}" "${qa#*/}" || return 1; done
}

# drop_gangs APP...: force-deletes the pods of these gang applications, placeholders included (no kubelet
# confirms a deletion here)
drop_gangs() {
  local app
  for app in "$@"; do
    kc admin -n "$NS_A" delete pods -l "applicationId=$app" --grace-period=0 --force > /dev/null 2>&1 || true
    kc admin -n "$NS_A" delete pods -l "yunikorn.apache.org/app-id=$app" --grace-period=0 --force > /dev/null 2>&1 || true
  done
}

@test "fault: restart the scheduler with pending and bound pods: every application comes back with the same user" {
  # The gang applications of scenario 12 are gone already (12 restarts the scheduler on its own): dropped again in case it failed half-way.
  drop_gangs yk-12-untrusted yk-12-open yk-12-acl
  # a pending application: bob's second one in root.bobs waits while yk-5b runs
  yk_pod p5c yk-5c root.bobs > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  wait_until 60 "yk-5c to be Accepted" bash -c "[ \"\$(curl -sf --max-time 5 '$YK_REST/partition/default/queue/root.bobs/application/yk-5c' | jq -r .applicationState)\" = Accepted ]"
  note_stamp "$NS_A" p5c
  local before restarts=${YK_RESTARTS:-2} i changed=0 t0 times="" now
  # shellcheck disable=SC2086
  before=$(app_users $APPS)
  echo "before: $(paste -sd' ' <<< "$before")"
  for i in $(seq 1 "$restarts"); do
    yk_stop
    t0=$SECONDS
    yk_start > /dev/null
    # shellcheck disable=SC2086
    wait_until 60 "every application recovered" all_known $APPS || true
    times="$times$((SECONDS - t0))s "
    # shellcheck disable=SC2086
    now=$(app_users $APPS)
    echo "restart $i: $(paste -sd' ' <<< "$now")"
    [ "$now" = "$before" ] || changed=$((changed + 1))
  done
  wait_until 10 "yk-5c to be Accepted again" bash -c "[ \"\$(curl -sf --max-time 5 '$YK_REST/partition/default/queue/root.bobs/application/yk-5c' | jq -r .applicationState)\" = Accepted ]" || true
  record "fault: scheduler restarted $restarts times" "every app keeps its user" \
    "apps changed user in $changed of $restarts restarts; ready again in ${times% }; pending yk-5c: $(app_state root.bobs yk-5c), $(outcome "$NS_A" p5c)"
  # Only the users are asserted: whether bob's held application is still held after a restart is YuniKorn's
  # limit bookkeeping (v1.8.0 has let it run after a restart, the recovered allocations of yk-5b not yet counted).
  [ "$changed" -eq 0 ]
  [ "$(stamp_user "$NS_A" p5c)" = bob ]
}

# held_in_bobs NS POD APP: APP waits in root.bobs (bob's limit) and its pod is not bound
held_in_bobs() { [ "$(app_state root.bobs "$3")" = Accepted ] && ! is_bound "$1" "$2"; }

@test "14b. bob relabels his pending pod to alice's application ID: the policy refuses it (rule 14b); without the policy the pod joins alice's application and runs as alice" {
  local msg="the application of a pod cannot change once the pod exists: yk-r to yk-1" shipped with
  # bob's pr waits in root.bobs (his limit: yk-5b runs); he points it at alice's yk-1
  yk_pod pr yk-r root.bobs > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_A" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  note_stamp "$NS_A" pr
  wait_until 20 "yk-r to be held" held_in_bobs "$NS_A" pr yk-r || true
  # The shipped matchConditions (examples/default.yaml) send a pod UPDATE to the policy when it changes
  # user.info, the legacy label, a source of the application ID or the task groups: a dry run shows it.
  run --separate-stderr kc bob -n "$NS_A" label pod pr applicationId=yk-1 --overwrite --dry-run=server
  shipped="exit $status${stderr:+: $(grep -o 'the application of a pod[^"]*' <<< "$stderr" | head -n 1)}"
  echo "bob, shipped matchConditions: relabel pr (dry run) -> $shipped; stderr: ${stderr:-<none>}"
  # With a webhook configuration that sends the UPDATE to the policy (no matchConditions): refused. The
  # requests of that window are left out of the final audit (the shipped conditions would not send them).
  local from
  from=$(wc -l < "$RUN/reviews.jsonl")
  register_webhook no-conditions
  relabel_refused() { ! kc bob -n "$NS_A" label pod pr applicationId=yk-1 --overwrite --dry-run=server > /dev/null 2>&1; }
  wait_until 30 "the webhook without matchConditions to apply" relabel_refused || true
  run --separate-stderr kc bob -n "$NS_A" label pod pr applicationId=yk-1 --overwrite
  echo "bob: relabel pr to applicationId=yk-1 -> exit $status; stderr: ${stderr:-<none>}"
  local label_status=$status label_err=$stderr annot_status annot_err
  # the other reading: the annotation yunikorn.apache.org/app-id (read first by 1.4, after the label by 1.8)
  run --separate-stderr kc bob -n "$NS_A" annotate pod pr yunikorn.apache.org/app-id=yk-1
  echo "bob: annotate pr yunikorn.apache.org/app-id=yk-1 -> exit $status; stderr: ${stderr:-<none>}"
  annot_status=$status annot_err=$stderr
  register_webhook
  relabel_passes() { kc bob -n "$NS_A" label pod pr applicationId=yk-1 --overwrite --dry-run=server > /dev/null 2>&1; }
  if [[ "$shipped" == "exit 0"* ]]; then wait_until 30 "the shipped webhook configuration to apply again" relabel_passes || true; else sleep 5; fi
  echo "$from $(wc -l < "$RUN/reviews.jsonl")" >> "$RUN/no-conditions.lines"
  wait_until 5 "pr to be bound (it is not expected to be)" is_bound "$NS_A" pr || true
  with="label: exit $label_status $(grep -o 'the application of a pod[^"]*' <<< "$label_err" | head -n 1); annotation: exit $annot_status $(grep -o 'the application of a pod[^"]*' <<< "$annot_err" | head -n 1); pr $(outcome "$NS_A" pr), label $(kc admin -n "$NS_A" get pod pr -o jsonpath='{.metadata.labels.applicationId}'), yk-1 pods [$(app_pods root.alice yk-1)]"
  record "14b relabel pending pod to alice's app (policy on, shipped matchConditions)" "sent to the policy: refused (rule 14b)" "dry run $shipped"
  record "14b relabel pending pod to alice's app (policy on)" "refused (rule 14b), pr stays pending outside yk-1" "$with"

  # The control run, policy off: alice's application yk-r-alice in root.alice and bob's held yk-r-off in
  # root.bobs, each pod carrying its author's own value (what the policy would have stamped)
  yk_pod pa-off yk-r-alice root.alice "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/a.json"
  submit alice "$NS_OFF" "$BATS_TEST_TMPDIR/a.json"
  [ "$status" -eq 0 ]
  wait_bound "$NS_OFF" pa-off || true
  yk_pod pr-off yk-r-off root.bobs "$BOB_VALUE" > "$BATS_TEST_TMPDIR/p.json"
  submit bob "$NS_OFF" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  wait_until 20 "yk-r-off to be held" held_in_bobs "$NS_OFF" pr-off yk-r-off || true
  local held when
  held="$(outcome "$NS_OFF" pr-off), yk-r-off $(app_state root.bobs yk-r-off)"
  run --separate-stderr kc bob -n "$NS_OFF" label pod pr-off applicationId=yk-r-alice --overwrite
  echo "bob (policy off): relabel pr-off to applicationId=yk-r-alice -> exit $status; stderr: ${stderr:-<none>}"
  [ "$status" -eq 0 ]
  if wait_until 15 "pr-off to be bound" is_bound "$NS_OFF" pr-off; then
    when="at once"
  else
    yk_stop
    yk_start > /dev/null
    wait_until 30 "pr-off to be bound after a restart" is_bound "$NS_OFF" pr-off || true
    when="after a restart"
  fi
  local off
  off="before: $held; relabelled: $(outcome "$NS_OFF" pr-off) $when, yk-r-alice user $(app_user root.alice yk-r-alice) pods [$(app_pods root.alice yk-r-alice)]"
  record "14b same, policy OFF" "joins alice's app, runs as alice (1.8.0 at once, 1.4.0 after a restart)" "$off"
  [[ "$shipped" == "exit 1: $msg"* ]]
  [ "$label_status" -ne 0 ]
  [[ "$label_err" == *"$msg"* ]]
  [ "$annot_status" -ne 0 ]
  [[ "$annot_err" == *"the application of a pod cannot change once the pod exists: yk-r to yk-1"* ]]
  [ "$(kc admin -n "$NS_A" get pod pr -o jsonpath='{.metadata.labels.applicationId}')" = yk-r ]
  [ "$(stamp_user "$NS_A" pr)" = bob ]
  [ -z "$(node_of "$NS_A" pr)" ]
  [[ ",$(app_pods root.alice yk-1)," != *,pr,* ]]
  [ "$(outcome "$NS_OFF" pr-off)" = bound ]
  [ "$(app_user root.alice yk-r-alice)" = alice ]
  [[ ",$(app_pods root.alice yk-r-alice)," == *,pr-off,* ]]
  if [ "$YUNIKORN_VERSION" = 1.8.0 ]; then [ "$when" = "at once" ]; fi
}

# audit_reviews: the webhook's records, less those of the windows when it was registered without
# matchConditions (no-conditions.lines: first and last line of each)
audit_reviews() {
  awk -v w="$(cat "$RUN/no-conditions.lines" 2> /dev/null)" 'BEGIN { n = split(w, a, /[ \n]+/) }
    { for (i = 1; i + 1 <= n; i += 2) if (NR > a[i] && NR <= a[i + 1]) next; print }' "$RUN/reviews.jsonl"
}

@test "the scheduler's writes (Bindings, pod status) never reached the webhook nor changed a stamp" {
  local reviews changed
  reviews=$(audit_reviews | jq -r --arg u "$YK_USER" 'select(.userInfo.username == $u) | .kind + (if (.subResource // "") != "" then "/" + .subResource else "" end) + " " + .operation' |
    sort | uniq -c | awk '{$1 = $1; print}' | paste -sd,)
  local ns pod v json checked=0
  changed=""
  while IFS=$'\t' read -r ns pod v; do
    json=$(kc admin -n "$ns" get pod "$pod" -o json 2> /dev/null) || continue # deleted by a scenario
    checked=$((checked + 1))
    [ "$(jq -c --arg k "$ANNOTATION" '(.metadata.annotations // {})[$k]' <<< "$json")" = "$v" ] || changed="$changed $ns/$pod"
  done < "$RUN/yk-stamps.tsv"
  record "scheduler's writes vs the webhook" "only its placeholder CREATEs; no stamp changed" \
    "webhook saw from YuniKorn: ${reviews:-nothing}; pods checked $checked, changed:${changed:- none}"
  [ -z "$changed" ]
  [ "$(audit_reviews | jq -c --arg u "$YK_USER" 'select(.userInfo.username == $u and (.kind != "Pod" or .operation != "CREATE" or (.subResource // "") != ""))' | wc -l)" -eq 0 ]
}

@test "preflight: reads YuniKorn's ConfigMaps (generateUniqueAppId off) and names the application bob's pod shares with alice" {
  kc admin get pods,configmaps -A -o json > "$BATS_TEST_TMPDIR/objects.json"
  run --separate-stderr "$PREFLIGHT" --policy "$POLICY" -f "$BATS_TEST_TMPDIR/objects.json"
  echo "exit $status; stderr: ${stderr:-<none>}"
  sed -n '/^YuniKorn:/,$p' <<< "$output"
  record "preflight: applications" "generateUniqueAppId off; yk-1 charged to alice for bob's pods" \
    "$(grep -c 'generateUniqueAppId is off (default)' <<< "$output") off line; $(grep -E '^yk-a +yk-1 ' <<< "$output" | tr -s ' ')"
  [ "$status" -eq 0 ]
  [[ "$output" == *"admissionController.filtering.generateUniqueAppId is off (default)"* ]]
  grep -qE '^yk-a +yk-1 +alice \(p1\) +bob: [0-9]+$' <<< "$output"
}

# --- YuniKorn's own admission controller beside the policy (coexistence). Both webhooks see the same pods in
# $NS_CO; the API server calls mutating webhooks in the order of their configurations' names. The pods of these
# scenarios name no schedulerName: YuniKorn's admission controller sets it, so a pod YuniKorn binds went through
# it. Each case is a real create: alice's clean pod, bob's pod carrying alice's value, airflow (allow-listed by
# the policy) supplying alice, and alice's Deployment whose pod the ReplicaSet controller (trusted) creates.

# co_pod NAME APP [VALUE]: a pod for root.alice without a schedulerName
co_pod() { yk_pod "$1" "$2" root.alice "${3:-}" 'del(.spec.schedulerName)'; }
# co_deployment NAME APP: alice's Deployment, one replica, no annotation, no schedulerName
co_deployment() {
  jq -n --arg name "$1" --arg app "$2" --arg img "$IMAGE" '{apiVersion: "apps/v1", kind: "Deployment",
    metadata: {name: $name}, spec: {replicas: 1, selector: {matchLabels: {app: $name}},
      template: {metadata: {labels: {app: $name, applicationId: $app, queue: "root.alice"}},
        spec: {tolerations: [{operator: "Exists"}],
          containers: [{name: "c", image: $img, resources: {requests: {cpu: "100m", memory: "64Mi"}}}]}}}}'
}
co_pod_of() { kc admin -n "$NS_CO" get pods -l "app=$1" -o jsonpath='{.items[0].metadata.name}' 2> /dev/null; }
# who_refused: from $stderr, who refused the request: yunikorn (its message), policy, or other
who_refused() {
  if [[ "$stderr" == *"is not allowed to set user annotation"* ]]; then echo "refused by YuniKorn ($(grep -o 'user [^ ]* with groups \[[^]]*\]' <<< "$stderr" | head -n 1))"
  elif [[ "$stderr" == *"$ANNOTATION"* ]]; then echo "refused by the policy"
  else echo "refused: $(head -c 120 <<< "$stderr")"; fi
}
# co_cases TAG: the four cases in $NS_CO, apps yk-co-TAG-{alice,bob,airflow,deploy}; sets CO_A CO_B CO_C CO_D
# (admitted or who refused) and CO_POD_D (the Deployment's pod, once the ReplicaSet controller made it)
co_cases() {
  local tag=$1
  co_pod "co-$tag-alice" "yk-co-$tag-alice" > "$BATS_TEST_TMPDIR/a.json"
  co_pod "co-$tag-bob" "yk-co-$tag-bob" "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/b.json"
  co_pod "co-$tag-airflow" "yk-co-$tag-airflow" "$ALICE_VALUE" > "$BATS_TEST_TMPDIR/c.json"
  co_deployment "co-$tag-deploy" "yk-co-$tag-deploy" > "$BATS_TEST_TMPDIR/d.json"
  submit alice "$NS_CO" "$BATS_TEST_TMPDIR/a.json"
  if [ "$status" -eq 0 ]; then CO_A=admitted; else CO_A=$(who_refused); fi
  submit bob "$NS_CO" "$BATS_TEST_TMPDIR/b.json"
  if [ "$status" -eq 0 ]; then CO_B=admitted; else CO_B=$(who_refused); fi
  submit airflow "$NS_CO" "$BATS_TEST_TMPDIR/c.json"
  if [ "$status" -eq 0 ]; then CO_C=admitted; else CO_C=$(who_refused); fi
  submit alice "$NS_CO" "$BATS_TEST_TMPDIR/d.json"
  if [ "$status" -eq 0 ]; then CO_D=admitted; else CO_D=$(who_refused); fi
  CO_POD_D=""
  if [ "$CO_D" = admitted ]; then
    wait_until 30 "the pod of co-$tag-deploy" co_pod_of "co-$tag-deploy" || true
    CO_POD_D=$(co_pod_of "co-$tag-deploy")
  fi
  echo "cases $tag: alice $CO_A; bob forging alice $CO_B; airflow supplying alice $CO_C; alice's Deployment $CO_D, pod ${CO_POD_D:-none}"
}

@test "13. YuniKorn's admission controller with its defaults beside the policy: it refuses every value it did not stamp itself, so only the order 'YuniKorn first' admits pods" {
  if ! yk_ac_install; then skip "lo cannot take $YK_AC_IP here (no CAP_NET_ADMIN in this network namespace)"; fi
  new_namespace "$NS_CO"
  yk_ac_start
  use_settings '{"bypassAuth":true,"externalUsers":["^airflow$"]}'
  refused_alice() { ! kc alice -n "$NS_CO" create --dry-run=server -f "$BATS_TEST_TMPDIR/probe.json" > /dev/null 2>&1; }
  admitted_alice() { ! refused_alice; }
  co_pod co-probe yk-co-probe > "$BATS_TEST_TMPDIR/probe.json"

  # YuniKorn first: the policy's configuration keeps its name, which sorts after yunikorn-admission-controller-mutations
  policy_order last
  wait_until 30 "the order YuniKorn, policy" admitted_alice
  co_cases yk-first
  local a_stamp a_by_policy
  a_stamp=$(stamp_user "$NS_CO" co-yk-first-alice) a_by_policy=$(policy_stamped co-yk-first-alice)
  record "13 coexistence, YuniKorn's defaults, YuniKorn first" "alice admitted (YuniKorn stamps); forged and airflow refused by YuniKorn" \
    "alice $CO_A, stamp $a_stamp, policy patched: $a_by_policy; bob $CO_B; airflow $CO_C; Deployment $CO_D, pod stamp $(stamp_user "$NS_CO" "$CO_POD_D" 2> /dev/null)"
  [ "$CO_A" = admitted ]
  [ "$a_stamp" = alice ]
  [ "$a_by_policy" = no ] # YuniKorn had stamped it already: the policy found alice's own value
  [ "$(kc admin -n "$NS_CO" get pod co-yk-first-alice -o jsonpath='{.spec.schedulerName}')" = yunikorn ]
  [[ "$CO_B" == "refused by YuniKorn (user bob "* ]]
  [[ "$CO_C" == "refused by YuniKorn (user airflow "* ]] # the policy trusts airflow; YuniKorn's defaults do not
  [ "$CO_D" = admitted ]
  [ "$(stamp_user "$NS_CO" "$CO_POD_D")" = alice ]

  # the policy first (the name Kubewarden gives it): YuniKorn then sees the policy's stamp and refuses its requester
  policy_order first
  wait_until 30 "the order policy, YuniKorn" refused_alice
  co_cases policy-first
  record "13 coexistence, YuniKorn's defaults, policy first" "every pod refused by YuniKorn (it sees the policy's stamp)" \
    "alice $CO_A; bob $CO_B; airflow $CO_C; Deployment $CO_D"
  policy_order last
  [[ "$CO_A" == "refused by YuniKorn (user alice "* ]]
  [[ "$CO_B" == "refused by YuniKorn (user bob "* ]]
  [[ "$CO_C" == "refused by YuniKorn (user airflow "* ]]
  [[ "$CO_D" == "refused by YuniKorn (user alice "* ]]
  [ -z "$(kc admin -n "$NS_CO" get pods -l 'applicationId in (yk-co-policy-first-alice,yk-co-policy-first-bob,yk-co-policy-first-airflow)' -o name)" ]
}

# co_outcomes TAG: waits for what YuniKorn does with the admitted pods of co_cases TAG; CO_SEEN says it per case
co_outcomes() {
  local tag=$1 c pod app seen=()
  if [ "$CO_A" = admitted ]; then wait_bound "$NS_CO" "co-$tag-alice" 60 || true; fi
  if [ "$CO_C" = admitted ]; then wait_bound "$NS_CO" "co-$tag-airflow" 30 || true; fi
  if [ -n "$CO_POD_D" ]; then wait_bound "$NS_CO" "$CO_POD_D" 30 || true; fi
  if [ "$CO_B" = admitted ]; then wait_failed "$NS_CO" "co-$tag-bob" 30 || true; fi
  for c in "alice:co-$tag-alice:$CO_A" "bob forging alice:co-$tag-bob:$CO_B" "airflow supplying alice:co-$tag-airflow:$CO_C" \
    "alice's Deployment:${CO_POD_D:-none}:$CO_D"; do
    pod=$(cut -d: -f2 <<< "$c") app=yk-$(cut -d: -f2 <<< "$c")
    if [[ "$c" == *Deployment* ]]; then app=yk-co-$tag-deploy; fi
    if [ "${c##*:}" = admitted ]; then
      seen+=("${c%%:*}: stamp $(stamp_user "$NS_CO" "$pod"), $(outcome "$NS_CO" "$pod"), app user $(app_user root.alice "$app")")
    else
      seen+=("${c%%:*}: ${c#*:*:}")
    fi
  done
  CO_SEEN=$(printf '%s; ' "${seen[@]}")
  CO_SEEN=${CO_SEEN%; }
}
co_assert_agree() {
  local tag=$1
  [ "$CO_A" = admitted ] && [ "$CO_B" = admitted ] && [ "$CO_C" = admitted ] && [ "$CO_D" = admitted ]
  [ "$(stamp_user "$NS_CO" "co-$tag-alice")" = alice ]
  [ "$(outcome "$NS_CO" "co-$tag-alice")" = bound ]
  [ "$(app_user root.alice "yk-co-$tag-alice")" = alice ]
  [ "$(stamp_user "$NS_CO" "co-$tag-bob")" = bob ]
  [ "$(outcome "$NS_CO" "co-$tag-bob")" = rejected ]
  [ "$(app_user root.alice "yk-co-$tag-bob")" != alice ]
  [[ ",$(usage_apps alice)," != *,yk-co-$tag-bob,* ]]
  [ "$(stamp_user "$NS_CO" "co-$tag-airflow")" = alice ]
  [ "$(outcome "$NS_CO" "co-$tag-airflow")" = bound ]
  [ "$(app_user root.alice "yk-co-$tag-airflow")" = alice ]
  [ "$(stamp_user "$NS_CO" "$CO_POD_D")" = alice ]
  [ "$(outcome "$NS_CO" "$CO_POD_D")" = bound ]
  [ "$(app_user root.alice "yk-co-$tag-deploy")" = alice ]
}

@test "14. the configuration that agrees: YuniKorn's bypassAuth true leaves user.info to the policy, in both orders (the policy reinvoked after YuniKorn's patch when first)" {
  if [ ! -f "$RUN/pids/yunikorn-admission.pid" ]; then skip "YuniKorn's admission controller is not running (scenario 13)"; fi
  use_settings '{"bypassAuth":true,"externalUsers":["^airflow$"]}'
  yk_ac_config admissionController.accessControl.bypassAuth=true
  # the policy with reinvocationPolicy IfNeeded: called again when a later webhook (YuniKorn's) changed the pod
  local n=0
  calls_now() { n=$((n + 1)); kc alice -n "$NS_CO" run "co-probe-$n" --image="$IMAGE" --restart=Never --dry-run=server -o name > /dev/null 2>&1; [ "$(policy_calls "co-probe-$n")" -eq "$1" ]; }
  local order calls
  for order in last first; do
    policy_order "$order" IfNeeded
    # YuniKorn first: one call of the policy; the policy first: a second one after YuniKorn set schedulerName
    calls=1
    [ "$order" = first ] && calls=2
    wait_until 30 "the policy $order ($calls calls per pod)" calls_now "$calls"
    co_cases "bypass-$order"
    co_outcomes "bypass-$order"
    record "14 coexistence, YuniKorn bypassAuth=true, policy $order" "all admitted; YuniKorn runs alice, airflow's alice, the controller's pod as alice, bob as bob" \
      "policy calls for alice's pod: $(policy_calls "co-bypass-$order-alice"); $CO_SEEN"
    co_assert_agree "bypass-$order"
    [ "$(policy_calls "co-bypass-$order-alice")" -eq "$calls" ]
  done
  policy_order last
}

@test "15. YuniKorn's checks on, its lists aligned with the policy's (reject mode): they agree only while YuniKorn is called first" {
  if [ ! -f "$RUN/pids/yunikorn-admission.pid" ]; then skip "YuniKorn's admission controller is not running (scenario 13)"; fi
  use_settings '{"bypassAuth":true,"externalUsers":["^airflow$"],"onUntrustedAnnotation":"reject"}'
  yk_ac_config admissionController.accessControl.bypassAuth=false 'admissionController.accessControl.externalUsers=^airflow$' \
    'admissionController.accessControl.systemUsers=^system:serviceaccount:kube-system:,^system:kube-controller-manager$'
  policy_order last
  co_cases aligned
  co_outcomes aligned
  record "15 coexistence, YuniKorn checks aligned, YuniKorn first" "alice, airflow, controller admitted and run as alice; bob refused (by YuniKorn first)" \
    "$CO_SEEN"
  [ "$CO_A" = admitted ] && [ "$CO_C" = admitted ] && [ "$CO_D" = admitted ]
  [[ "$CO_B" == "refused by YuniKorn (user bob "* ]]
  [ "$(outcome "$NS_CO" co-aligned-alice)" = bound ] && [ "$(app_user root.alice yk-co-aligned-alice)" = alice ]
  [ "$(outcome "$NS_CO" co-aligned-airflow)" = bound ] && [ "$(app_user root.alice yk-co-aligned-airflow)" = alice ]
  [ "$(stamp_user "$NS_CO" "$CO_POD_D")" = alice ] && [ "$(outcome "$NS_CO" "$CO_POD_D")" = bound ]
  [ -z "$(kc admin -n "$NS_CO" get pod co-aligned-bob --ignore-not-found -o name)" ]
  # leave the suite as it was: no YuniKorn webhook, the policy's defaults
  yk_ac_stop
  use_settings '{}'
}
