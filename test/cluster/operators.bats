#!/usr/bin/env bats
# operators.bats: the custom-workload rules (11-13) against the operators themselves. Their own CRDs (from
# their published artifacts, pinned: build-operators.sh) are applied to the suite's API server, their
# controllers (built from their Go modules) run under their own service accounts, trusted in systemUsers as
# the examples say, and create the pods; each scenario asserts on those pods: every pod carries its
# author's stamp, or the request was refused at admission; no pod carries another user's identity.
# run-operators.sh runs this file (make e2e-operators) and prints the table the scenarios record.
bats_require_minimum_version 1.5.0

setup_file() {
  load lib
  load operators
  # The test users may manage every operator's custom resources (rules 11-13 decide what they may put in them).
  cluster_role e2e-operators '- apiGroups: [sparkoperator.k8s.io, ray.io, flink.apache.org, kubeflow.org, argoproj.io]
  resources: ["*"]
  verbs: ["*"]' "$TEST_USER_GROUPS"
  : > "$TABLE"
  # The probe of the custom-resource rules (setup) is a SparkApplication dry run.
  local key
  if key=$(first_built spark-operator); then apply_crds "$key" > /dev/null; fi
}

setup() {
  load lib
  load operators
  load yunikorn
  # Every operator example's settings at once, and airflow as the allow-listed external submitter
  # (examples/external-submitters.yaml, with the suite's user). Started here rather than in setup_file:
  # a process started there inherits a descriptor bats waits on.
  local settings
  settings=$(examples_settings '{"bypassAuth":true,"externalUsers":["^airflow$"]}')
  if [ "$(cat "$RUN/kwhost.settings")" != "$settings" ]; then start_kwhost "$settings"; fi
  if [ "$(cat "$RUN/webhook.variant")" != custom-resources ]; then
    register_webhook custom-resources
    # webhook configurations take effect asynchronously: until alice's dry-run SparkApplication comes back stamped
    kc admin get namespace t-probe > /dev/null 2>&1 || new_namespace t-probe
    spark_app t-probe '{}' > "$RUN/probe.json"
    wait_until 60 "the custom-resource rules to apply" spark_probe
  fi
}

spark_probe() {
  [ "$(kc alice create --dry-run=server -o json -f "$RUN/probe.json" | jq -r --arg k "$ANNOTATION" '.spec.driver.annotations[$k] // empty')" = "$ALICE_VALUE" ]
}

# spark_app NS EXTRA-JSON: a SparkApplication the v2.4.0 CRD accepts, EXTRA merged into its spec
spark_app() {
  jq -n --arg ns "$1" --arg img "$IMAGE" --argjson extra "$2" '{apiVersion: "sparkoperator.k8s.io/v1beta2", kind: "SparkApplication",
    metadata: {name: "s", namespace: $ns}, spec: ({type: "Scala", mode: "cluster", image: $img, sparkVersion: "3.5.0",
    mainApplicationFile: "local:///x.jar", driver: {cores: 1}, executor: {instances: 1}} * $extra)}'
}

teardown_file() {
  load lib
  load operators
  stop_operator
  stop_operator argo
  stop yunikorn
}

# ---------------------------------------------------------------- what the CRDs' schemas refuse
# bob tries each forgery form the README lists, as a server-side dry run (webhooks run, nothing is stored):
# the API server refuses a value of the wrong type while decoding, before any webhook (400 "cannot be handled
# as a <Kind>"), the policy the others.

# schema_case OPERATOR VERSION FORM EXPECT FILE: EXPECT is "schema" (the API server refuses it),
# "policy" (the policy refuses it) or a jq path whose annotation must come back as bob's stamp
schema_case() {
  local op=$1 ver=$2 form=$3 want=$4 file=$5 observed
  run --separate-stderr kc bob create --dry-run=server -o json -f "$file"
  if [ "$status" -ne 0 ] && [[ "$stderr" == *"denied the request"* ]]; then observed="refused by the policy: ${stderr##*denied the request: }"
  elif [ "$status" -ne 0 ]; then observed="refused by the schema: $stderr"
  else observed="accepted, $(who "$(jq -r --arg k "$ANNOTATION" "($want.annotations // {})[\$k] // empty" <<< "$output" 2> /dev/null)") in the map"
  fi
  # the file's path is the run's own: left out, so that the table says the same in every run
  observed=${observed//"$file"/<file>}
  observed=$(head -c 150 <<< "$observed" | tr '\n\t' '  ' | sed 's/ *$//')
  case $want in
    schema) row "$op" "$ver" "$form" "refused by the API server (its schema)" "$observed"; [[ "$observed" == "refused by the schema: "* ]] ;;
    policy) row "$op" "$ver" "$form" "refused by the policy" "$observed"; [[ "$observed" == "refused by the policy: "* ]] ;;
    *) row "$op" "$ver" "$form" "accepted, bob in the map" "$observed"; [ "$observed" = "accepted, bob in the map" ] ;;
  esac
}

@test "CRD schemas: the API server refuses some forgery forms before the policy, the policy refuses or replaces the rest" {
  local ns=t-schemas key f=$BATS_TEST_TMPDIR/cr.json c
  c=$(jq -cn --arg v "$CAROL_FORGED" '$v') # as a JSON string
  new_namespace "$ns"
  local img=$IMAGE k=$ANNOTATION

  key=$(first_built spark-operator) || skip "no Spark operator CRDs (the module proxy refused them)"
  apply_crds "$key"
  spark() { spark_app "$ns" "$1"; }
  spark "{\"driver\": {\"annotations\": {\"$k\": $c}}}" > "$f"
  schema_case "Spark operator" "${key##*-}" "driver.annotations naming carol" .spec.driver "$f"
  spark "{\"sparkConf\": {\"spark.kubernetes.driver.annotation.$k\": $c}}" > "$f"
  schema_case "Spark operator" "${key##*-}" "sparkConf spark.kubernetes.driver.annotation.<key> (string)" policy "$f"
  spark "{\"sparkConf\": {\"spark.kubernetes.driver.annotation\": {\"$k\": $c}}}" > "$f"
  schema_case "Spark operator" "${key##*-}" "sparkConf with a nested value" schema "$f"

  key=$(first_built flink-operator) || skip "no Flink operator CRDs (Maven Central refused them)"
  apply_crds "$key"
  flink() { jq -n --arg ns "$ns" --arg img "$img" --argjson extra "$1" '{apiVersion: "flink.apache.org/v1beta1", kind: "FlinkDeployment",
    metadata: {name: "f", namespace: $ns}, spec: ({image: $img, flinkVersion: "v1_20", serviceAccount: "flink",
    jobManager: {resource: {cpu: 1, memory: "1g"}}, taskManager: {resource: {cpu: 1, memory: "1g"}}} * $extra)}'; }
  flink "{\"podTemplate\": {\"metadata\": {\"annotations\": {\"$k\": $c}}}}" > "$f"
  schema_case "Flink operator" "${key##*-}" "podTemplate annotations naming carol" .spec.podTemplate.metadata "$f"
  flink "{\"flinkConfiguration\": {\"kubernetes.jobmanager.annotations\": \"$k:x\"}}" > "$f"
  schema_case "Flink operator" "${key##*-}" "flinkConfiguration kubernetes.jobmanager.annotations (string)" policy "$f"
  flink "{\"flinkConfiguration\": {\"kubernetes.jobmanager\": {\"annotations\": \"$k:x\"}}}" > "$f"
  schema_case "Flink operator" "${key##*-}" "flinkConfiguration with a nested value" schema "$f"
  # Flink Kubernetes Operator 1.13 declares flinkConfiguration x-kubernetes-preserve-unknown-fields; Maven
  # Central here serves its API jar up to 1.10.0 only, so the 1.10.0 CRD with that one change stands in for it.
  yq -y '(.spec.versions[].schema.openAPIV3Schema.properties.spec.properties.flinkConfiguration) =
    {type: "object", "x-kubernetes-preserve-unknown-fields": true}' "$OPERATORS_DIR/$key"/crds/flinkdeployments.flink.apache.org-v1.yml |
    kc admin apply --server-side --force-conflicts -f - > /dev/null
  rm -f "$RUN/crds-applied-${key%-*}"
  # the API server swaps in the new schema asynchronously: until the nested form decodes
  wait_until 30 "the stand-in schema" bash -c '! kubectl --kubeconfig="$0" create --dry-run=server -f "$1" 2>&1 | grep -q "cannot be handled"' \
    "$RUN/bob.kubeconfig" "$f"
  schema_case "Flink operator" "1.13 (stand-in)" "flinkConfiguration {kubernetes.jobmanager: {annotations: <key>:...}}" policy "$f"
  flink "{\"flinkConfiguration\": {\"kubernetes.jobmanager.annotations\": {\"$k\": $c}}}" > "$f"
  schema_case "Flink operator" "1.13 (stand-in)" "flinkConfiguration {kubernetes.jobmanager.annotations: {<key>: ...}}" policy "$f"
  flink "{\"flinkConfiguration\": {\"kubernetes\": {\"jobmanager\": {\"annotations\": {\"yunikorn\": {\"apache\": {\"org/user.info\": $c}}}}}}}" > "$f"
  schema_case "Flink operator" "1.13 (stand-in)" "flinkConfiguration, the key split over nesting levels" policy "$f"
  flink "{\"flinkConfiguration\": {\"kubernetes.jobmanager.annotations\": [\"$k:x\"]}}" > "$f"
  schema_case "Flink operator" "1.13 (stand-in)" "flinkConfiguration, a list value naming the key" policy "$f"
  apply_crds "$key" > /dev/null

  key=$(first_built kuberay) || skip "no KubeRay CRDs"
  apply_crds "$key"
  ray_cluster r "$CAROL_FORGED" | jq --arg ns "$ns" '.metadata.namespace = $ns' > "$f"
  schema_case KubeRay "${key##*-}" "RayCluster head template naming carol" .spec.headGroupSpec.template.metadata "$f"
  jq --arg k "$k" '.spec.headGroupSpec.template.metadata.annotations[$k] = {user: "carol"}' "$f" > "$f.2"
  schema_case KubeRay "${key##*-}" "RayCluster head template annotation as an object" schema "$f.2"

  key=$(first_built training-operator) || skip "no training operator CRDs"
  apply_crds "$key"
  pytorch_job p "$CAROL_FORGED" | jq --arg ns "$ns" '.metadata.namespace = $ns' > "$f"
  schema_case "Kubeflow training" "${key##*-}" "PyTorchJob Master template naming carol" .spec.pytorchReplicaSpecs.Master.template.metadata "$f"
  jq --arg k "$k" '.spec.pytorchReplicaSpecs.Master.template.metadata.annotations[$k] = {user: "carol"}' "$f" > "$f.2"
  schema_case "Kubeflow training" "${key##*-}" "PyTorchJob template annotation as an object" schema "$f.2"

  key=$(first_built argo) || skip "no Argo CRDs"
  apply_crds "$key"
  argo_yaml templated-key "$CAROL_FORGED" "" w | jq --arg ns "$ns" '.metadata.namespace = $ns' > "$f"
  schema_case Argo "${key##*-}" "template metadata key {{workflow.parameters.k}} (k = the annotation)" policy "$f"
  argo_yaml dag-inline "$CAROL_FORGED" "" w | jq --arg ns "$ns" '.metadata.namespace = $ns' > "$f"
  schema_case Argo "${key##*-}" "DAG task inline template naming carol" .spec.templates[0].dag.tasks[0].inline.metadata "$f"
  argo_yaml workflowtemplate "$CAROL_FORGED" template w | jq --arg ns "$ns" '.metadata.namespace = $ns' > "$f"
  schema_case Argo "${key##*-}" "WorkflowTemplate template metadata naming carol" policy "$f"
}

# ---------------------------------------------------------------- KubeRay

# ray_cluster NAME [TEMPLATE-VALUE] [METADATA-VALUE]: a RayCluster (head and one worker), TEMPLATE-VALUE in
# both pod templates' annotations, METADATA-VALUE in the RayCluster's own
ray_cluster() {
  jq -n --arg name "$1" --arg v "${2:-}" --arg mv "${3:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" '
    (if $v == "" then {} else {metadata: {annotations: {($k): $v}}} end) as $md |
    {apiVersion: "ray.io/v1", kind: "RayCluster",
     metadata: ({name: $name} + (if $mv == "" then {} else {annotations: {($k): $mv}} end)),
     spec: {rayVersion: "2.9.0",
       headGroupSpec: {rayStartParams: {}, template: ($md + {spec: {containers: [{name: "ray-head", image: $img}]}})},
       workerGroupSpecs: [{groupName: "cpu", replicas: 1, minReplicas: 1, maxReplicas: 4, rayStartParams: {},
         template: ($md + {spec: {containers: [{name: "ray-worker", image: $img}]}})}]}}'
}

# ray_job NAME [TEMPLATE-VALUE] [SUBMITTER-VALUE]: a RayJob (K8sJobMode: KubeRay submits through a Job of its
# own) whose cluster spec is ray_cluster's, with a submitterPodTemplate carrying SUBMITTER-VALUE (none when
# empty); SUBMITTER-VALUE "-": no submitterPodTemplate (KubeRay's default submitter)
ray_job() {
  jq -n --arg name "$1" --argjson cluster "$(ray_cluster x "${2:-}")" --arg sv "${3:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" '
    {apiVersion: "ray.io/v1", kind: "RayJob", metadata: {name: $name},
     spec: {entrypoint: "python -c \"print(1)\"", submissionMode: "K8sJobMode", rayClusterSpec: $cluster.spec}} |
    if $sv == "-" then . else .spec.submitterPodTemplate = ((if $sv == "" then {} else {metadata: {annotations: {($k): $sv}}} end) +
      {spec: {restartPolicy: "Never", containers: [{name: "ray-job-submitter", image: $img}]}}) end'
}

# ray_job_cluster NS JOB: the RayCluster the operator generated for the RayJob (once it has)
ray_job_cluster() {
  kc admin -n "$1" get rayjob "$2" -o jsonpath='{.status.rayClusterName}'
}
# ray_job_has_cluster NS JOB: the operator has generated the RayJob's RayCluster (for wait_until: a
# "$(...)" argument would be read once, when wait_until is called)
ray_job_has_cluster() { [ -n "$(ray_job_cluster "$1" "$2")" ]; }

# kuberay KEY [BATCH-SCHEDULER]: the KubeRay scenarios with one operator version and scheduler flag
kuberay() {
  local key=$1 sched=${2:-} op=KubeRay ver ns form account
  require_operator "$key"
  ver=${key##*-}
  ns=t-ray-${ver//./-}${sched:+-$sched}
  apply_crds "$key"
  new_namespace "$ns"
  account=$(operator_account "$key")
  start_operator "$key" --enable-leader-election=false \
    --metrics-addr=0 --health-probe-bind-address=0 ${sched:+--batch-scheduler=$sched}
  op="KubeRay${sched:+ --batch-scheduler=$sched}"

  form="RayCluster by alice"
  ray_cluster clean | kc alice -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "$form" "$ns" ray.io/cluster=clean 2 alice

  form="RayCluster by bob, carol's value in head and worker templates"
  ray_cluster forged "$CAROL_FORGED" | kc bob -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "$form" "$ns" ray.io/cluster=forged 2 bob

  form="RayCluster by bob, alice's value in the RayCluster's own metadata"
  ray_cluster own-metadata "" "$ALICE_VALUE" | kc bob -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "$form" "$ns" ray.io/cluster=own-metadata 2 bob

  form="RayCluster by airflow (external submitter) for alice"
  ray_cluster for-alice "$ALICE_VALUE" | kc airflow -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "$form" "$ns" ray.io/cluster=for-alice 2 alice

  # The RayJobs: alice's and bob's carry a submitterPodTemplate (bob's naming alice); a third (alice's) has
  # none, so KubeRay builds its default submitter. Their submitter Jobs are checked at the end.
  ray_job job | kc alice -n "$ns" create -f - > /dev/null
  ray_job forged-job "$CAROL_FORGED" "$ALICE_VALUE" | kc bob -n "$ns" create -f - > /dev/null
  if [ -z "$sched" ]; then ray_job default-submitter "" - | kc alice -n "$ns" create -f - > /dev/null; fi

  form="RayJob by alice -> its RayCluster"
  wait_until 60 "the RayCluster of RayJob job" ray_job_has_cluster "$ns" job || true
  expect_pods "$op" "$ver" "$form" "$ns" "ray.io/cluster=$(ray_job_cluster "$ns" job)" 2 alice

  form="RayJob by bob, carol's value in its cluster's templates -> its RayCluster"
  wait_until 60 "the RayCluster of RayJob forged-job" ray_job_has_cluster "$ns" forged-job || true
  expect_pods "$op" "$ver" "$form" "$ns" "ray.io/cluster=$(ray_job_cluster "$ns" forged-job)" 2 bob

  local j
  if [ -z "$sched" ]; then
    # A RayJob submits only to a Ready RayCluster (every pod Running and Ready). There is no kubelet: the suite
    # reports its clusters' pods ready as one would, KubeRay then creates the submitter Job (K8sJobMode) and the
    # job controller its pod.
    wait_until 60 "the RayCluster of RayJob default-submitter" ray_job_has_cluster "$ns" default-submitter || true
    for j in job forged-job default-submitter; do
      wait_until 60 "2 pods of RayJob $j's cluster" pods_at_least "$ns" 2 "ray.io/cluster=$(ray_job_cluster "$ns" "$j")" || true
      ray_pods_ready "$ns" "$(ray_job_cluster "$ns" "$j")"
    done
  fi

  form="bob's edit of alice's RayCluster worker template"
  run --separate-stderr kc bob -n "$ns" patch raycluster clean --type=json -p "$(jq -cn --arg k "${ANNOTATION//\//~1}" --arg v "$BOB_VALUE" \
    '[{op: "replace", path: "/spec/workerGroupSpecs/0/template/metadata/annotations/\($k)", value: $v}, {op: "replace", path: "/spec/workerGroupSpecs/0/replicas", value: 2}]')"
  echo "bob: patch alice's RayCluster (his value, 2 workers) -> exit $status; ${stderr:-}"
  expect_pods "$op" "$ver" "$form (restored), a second worker" "$ns" ray.io/cluster=clean 3 alice

  if [ -z "$sched" ]; then
    expect_pods "$op" "$ver" "RayJob by alice, submitterPodTemplate -> submitter pod (its cluster ready)" \
      "$ns" batch.kubernetes.io/job-name=job 1 alice
    expect_pods "$op" "$ver" "RayJob by bob, alice's value in submitterPodTemplate -> submitter pod" \
      "$ns" batch.kubernetes.io/job-name=forged-job 1 bob
    # Without a submitterPodTemplate KubeRay's Job template has no annotation: the Job (the operator's, trusted)
    # is left as it is (rule 4), and its pod gets the identity of the job controller that creates it.
    expect_pods "$op" "$ver" "RayJob by alice, no submitterPodTemplate (KubeRay's default) -> submitter pod" \
      "$ns" batch.kubernetes.io/job-name=default-submitter 1 "user system:serviceaccount:kube-system:job-controller"
    for j in job forged-job default-submitter; do
      echo "submitter Job $j: template annotation $(kc admin -n "$ns" get job "$j" -o json | jq -c --arg k "$ANNOTATION" '.spec.template.metadata.annotations[$k]')"
    done
  fi

  if [ -n "$sched" ]; then
    form="pods' schedulerName"
    local names
    names=$(kc admin -n "$ns" get pods -o json | jq -r '[.items[].spec.schedulerName] | unique | join(",")')
    row "$op" "$ver" "$form" "$sched" "$names"
    [ "$names" = "$sched" ]
  fi

  form="the operator's own writes (status, RayClusters of RayJobs, pods)"
  local writes
  writes=$(controller_writes "$account" "$ns") || true
  row "$op" "$ver" "$form" "passed unchanged" "$(jq -r '"\(.requests) requests (\(.kinds)): \(.patched) patched, \(.denied) denied"' <<< "$writes")"
  echo "$op $ver, $form: $writes"
  controller_writes "$account" "$ns" > /dev/null
  stop_operator
}

# ray_cluster_yk NAME VALUE APP QUEUE: ray_cluster's RayCluster for YuniKorn: the labels KubeRay's yunikorn
# batch scheduler copies onto the pods as YuniKorn's application ID and queue (yunikorn.apache.org/app-id ->
# applicationId, yunikorn.apache.org/queue -> queue: batchscheduler/yunikorn in ray-operator), and templates
# YuniKorn can place on the suite's kubelet-less Nodes (requests, and every taint tolerated)
ray_cluster_yk() {
  ray_cluster "$1" "$2" | jq --arg app "$3" --arg q "$4" '
    .metadata.labels = {"yunikorn.apache.org/app-id": $app, "yunikorn.apache.org/queue": $q} |
    (.spec.headGroupSpec.template.spec, .spec.workerGroupSpecs[].template.spec) |=
      (.tolerations = [{operator: "Exists"}] | .containers[0].resources = {requests: {cpu: "100m", memory: "64Mi"}})'
}

# kuberay_yunikorn KEY: KubeRay (--batch-scheduler=yunikorn, watching its own namespace only) with YuniKorn's
# real scheduler: the application user YuniKorn's REST API reports for the pods KubeRay created, and whom it
# charges. yunikorn.bash's queues: root.alice admits alice only, root.sandbox anybody.
kuberay_yunikorn() {
  local key=$1 ver ns op app form seen rejected
  require_operator "$key"
  ver=${key##*-}
  op="KubeRay + YuniKorn v${YUNIKORN_VERSION:-?}"
  if ! yunikorn_built; then
    row "$op" "$ver" "(every form)" "runs" "SKIPPED: YuniKorn's scheduler was not built (the module proxy refused it)"
    skip "YuniKorn's scheduler was not built (see the build step's output)"
  fi
  ns=t-ray-yk-${ver//./-} app=rayop-$ver
  apply_crds "$key"
  new_namespace "$ns"
  kc admin get namespace "$YK_NS" > /dev/null 2>&1 || yk_install
  yk_start
  start_operator "$key" --enable-leader-election=false --metrics-addr=0 --health-probe-bind-address=0 \
    --batch-scheduler=yunikorn --watch-namespace="$ns"

  ray_cluster_yk yk-alice "" "$app-alice" root.alice | kc alice -n "$ns" create -f - > /dev/null
  ray_cluster_yk yk-bob "$ALICE_VALUE" "$app-bob" root.alice | kc bob -n "$ns" create -f - > /dev/null
  ray_cluster_yk yk-bob-sandbox "$ALICE_VALUE" "$app-bob-sandbox" root.sandbox | kc bob -n "$ns" create -f - > /dev/null
  wait_until 60 "alice's 2 pods to be bound" bash -c '[ "$(kubectl --kubeconfig="$0" -n "$1" get pods -l ray.io/cluster=yk-alice -o json |
    jq "[.items[] | select(.spec.nodeName)] | length")" -ge 2 ]' "$RUN/admin.kubeconfig" "$ns" || true
  wait_until 60 "bob's sandbox pods to be bound" bash -c '[ "$(kubectl --kubeconfig="$0" -n "$1" get pods -l ray.io/cluster=yk-bob-sandbox -o json |
    jq "[.items[] | select(.spec.nodeName)] | length")" -ge 2 ]' "$RUN/admin.kubeconfig" "$ns" || true
  # bob's application in root.alice: v1.8.0 lists rejected applications with their user; v1.4.0 keeps none, and
  # only its events on the pods say it (ApplicationRejected or ApplicationFailed)
  bob_events() {
    kc admin -n "$1" get events -o json | jq -r '[.items[] | select(.involvedObject.name | test("^yk-bob-(head|cpu)")) | .reason] | unique | join(",")'
  }
  rejected_seen() { [ "$(rejected_user "$1")" != "<none>" ] || [[ "$(bob_events "$2")" =~ Application(Rejected|Failed) ]]; }
  wait_until 60 "YuniKorn to reject bob's application in root.alice" rejected_seen "$app-bob" "$ns" || true
  echo "pods: $(kc admin -n "$ns" get pods -o json | jq -c '[.items[] | {name: .metadata.name, app: .metadata.labels.applicationId, queue: .metadata.labels.queue, node: .spec.nodeName, phase: .status.phase, reason: .status.reason}]')"

  form="RayCluster by alice, app-id/queue labels: root.alice"
  seen="pods stamped $(pod_users "$ns" ray.io/cluster=yk-alice); $(bound_count "$ns" ray.io/cluster=yk-alice) bound; YuniKorn app user $(app_user root.alice "$app-alice"), charged to $(charged_to "$app-alice")"
  row "$op" "$ver" "$form" "pods stamped alice; 2 bound; YuniKorn app user alice, charged to alice" "$seen"
  echo "$form: $seen; the application's allocations: $(app_pods root.alice "$app-alice")"
  [ "$seen" = "pods stamped alice; 2 bound; YuniKorn app user alice, charged to alice" ]
  # the application is exactly the pods KubeRay created from alice's RayCluster
  [ "$(app_pods root.alice "$app-alice")" = "$(kc admin -n "$ns" get pods -l ray.io/cluster=yk-alice -o json | jq -r '[.items[].metadata.name] | sort | join(",")')" ]

  form="RayCluster by bob, alice's value in head and worker templates, root.alice (alice's queue)"
  local rejected_as=bob
  if yk_rest /partition/default/applications/rejected > /dev/null; then
    rejected="YuniKorn rejected the application of user $(rejected_user "$app-bob")"
  else
    rejected_as="? (v$YUNIKORN_VERSION lists no rejected applications; the pods' events)"
    rejected="YuniKorn rejected the application of user ? (v$YUNIKORN_VERSION lists no rejected applications; the pods' events)"
    [[ "$(bob_events "$ns")" =~ Application(Rejected|Failed) ]] || rejected="YuniKorn's events on bob's pods: $(bob_events "$ns")"
  fi
  seen="pods stamped $(pod_users "$ns" ray.io/cluster=yk-bob); $(bound_count "$ns" ray.io/cluster=yk-bob) bound; $rejected, charged to $(charged_to "$app-bob")"
  local want="pods stamped bob; 0 bound; YuniKorn rejected the application of user $rejected_as, charged to nobody"
  row "$op" "$ver" "$form" "$want" "$seen"
  echo "$form: $seen; events on bob's pods: $(bob_events "$ns")"
  [ "$seen" = "$want" ]
  [ "$(app_user root.alice "$app-bob")" = "<none>" ]

  form="RayCluster by bob, alice's value in head and worker templates, root.sandbox"
  seen="pods stamped $(pod_users "$ns" ray.io/cluster=yk-bob-sandbox); $(bound_count "$ns" ray.io/cluster=yk-bob-sandbox) bound; YuniKorn app user $(app_user root.sandbox "$app-bob-sandbox"), charged to $(charged_to "$app-bob-sandbox")"
  row "$op" "$ver" "$form" "pods stamped bob; 2 bound; YuniKorn app user bob, charged to bob" "$seen"
  echo "$form: $seen"
  [ "$seen" = "pods stamped bob; 2 bound; YuniKorn app user bob, charged to bob" ]

  # alice is charged for her application only
  form="alice's usage in YuniKorn"
  seen=$(usage_apps alice | tr , '\n' | grep "^$app" | paste -sd, -)
  row "$op" "$ver" "$form" "$app-alice" "${seen:-nothing}"
  [ "$seen" = "$app-alice" ]

  # bob's rejected pods are recreated by KubeRay (a Failed pod is replaced): stop that before the next scenario
  kc admin -n "$ns" delete rayclusters --all --wait=false > /dev/null
  stop_operator
  yk_stop
}

# ---------------------------------------------------------------- Argo Workflows
# One controller per version serves the tests of that version (argo_start starts it; the next start or
# the run's end stops it), each test one resource form, so that a form can be skipped on its own.

# argo_ns KEY: the namespace of that version's scenarios
argo_ns() { local v=${1##*-}; echo "t-argo-${v//./-}"; }

# argo_start KEY [no-cron]: that version's controller, its namespace, and (unless no-cron) the CronWorkflows
argo_start() {
  local key=$1 ns account
  require_operator "$key"
  ns=$(argo_ns "$key") account=$(operator_account "$key")
  apply_crds "$key"
  new_namespace "$ns"
  kc admin get namespace "${account%%:*}" > /dev/null 2>&1 || kc admin create namespace "${account%%:*}" > /dev/null
  # The controller needs its ConfigMap; metrics off (else :9090): the newline matters.
  kc admin -n "${account%%:*}" apply -f - > /dev/null <<Y
apiVersion: v1
kind: ConfigMap
metadata: {name: workflow-controller-configmap}
data:
  metricsConfig: |
    enabled: false
Y
  OPERATOR_ENV="LEADER_ELECTION_DISABLE=true" OPERATOR_SLOT=argo start_operator "$key" \
    --executor-image "registry.invalid/argoexec:${key##*-}"
  [ "${2:-}" != no-cron ] || return 0
  # A CronWorkflow runs at the next minute: created first, checked by the last test of the version.
  argo_yaml cron "" | kc alice -n "$ns" create -f - > /dev/null
  argo_yaml cron "$CAROL_FORGED" podMetadata cron-forged | kc bob -n "$ns" create -f - > /dev/null
}

# argo_yaml FORM VALUE [WHERE] [NAME]: a Workflow (or CronWorkflow, WorkflowTemplate...) of the given form,
# VALUE put where WHERE says
argo_yaml() {
  local form=$1 v=$2 where=${3:-} name=${4:-$1}
  jq -n --arg form "$form" --arg v "$v" --arg where "$where" --arg name "$name" --arg k "$ANNOTATION" --arg img "$IMAGE" '
    ({annotations: {($k): $v}}) as $md |
    {name: "main", container: {image: $img, command: ["true"]}} as $main |
    (if $v != "" and ($where == "template" or $where == "everywhere") then $main + {metadata: $md} else $main end) as $tmain |
    ({entrypoint: "main", templates: [$tmain]}
      + (if $v != "" and ($where == "podMetadata" or $where == "everywhere") then {podMetadata: $md} else {} end)
      + (if $v != "" and $where == "templateDefaults" then {templateDefaults: {metadata: $md}} else {} end)) as $spec |
    {apiVersion: "argoproj.io/v1alpha1", kind: "Workflow", metadata: {name: $name}, spec: $spec} |
    if $form == "steps" then .spec.entrypoint = "seq" | .spec.templates += [{name: "seq", steps: [[{name: "a", template: "main"}], [{name: "b", template: "main"}]]}]
    elif $form == "dag" then .spec.entrypoint = "d" | .spec.templates += [{name: "d", dag: {tasks: [{name: "a", template: "main"}, {name: "b", template: "main"}]}}]
    elif $form == "dag-inline" then .spec.entrypoint = "d" | .spec.templates = [{name: "d", dag: {tasks: [{name: "a", inline: ($main | del(.name) + {metadata: $md})}]}}]
    elif $form == "steps-inline" then .spec.entrypoint = "s" | .spec.templates = [{name: "s", steps: [[{name: "a", inline: ($main | del(.name) + {metadata: $md})}]]}]
    elif $form == "templated-key" then .spec.arguments = {parameters: [{name: "k", value: $k}]} |
      .spec.templates[0].metadata = {annotations: {"{{workflow.parameters.k}}": $v}}
    elif $form == "cron" then {apiVersion: "argoproj.io/v1alpha1", kind: "CronWorkflow", metadata: {name: $name},
      spec: {schedules: ["* * * * *"], concurrencyPolicy: "Forbid", workflowSpec: .spec}}
    elif $form == "workflowtemplate" then .kind = "WorkflowTemplate"
    elif $form == "clusterworkflowtemplate" then .kind = "ClusterWorkflowTemplate"
    elif $form == "workflowTemplateRef" then .spec = ({workflowTemplateRef: {name: $v}} + (.spec | del(.templates, .entrypoint)))
    elif $form == "templateRef" then .spec.entrypoint = "s" | .spec.templates = [{name: "s", steps: [[{name: "a", templateRef: {name: $v, template: "main"}}]]}]
    elif $form == "clusterTemplateRef" then .spec.entrypoint = "s" | .spec.templates = [{name: "s", steps: [[{name: "a", templateRef: {name: $v, template: "main", clusterScope: true}}]]}]
    else . end'
}

# argo_case KEY FORM USER EXPECTED-USER PODS [VALUE] [WHERE]: USER creates the Workflow of FORM; its PODS
# pods must carry EXPECTED-USER's stamp, or the request must have been refused at admission ("refused")
argo_case() {
  local key=$1 form=$2 user=$3 want=$4 count=$5 v=${6:-} where=${7:-} ns name desc
  ns=$(argo_ns "$key") name=$(tr 'A-Z' 'a-z' <<< "$form-$user-${where:-x}" | tr -c 'a-z0-9\n' - | tr -s -)
  case $form in
    *Ref) desc="Workflow ($form to $v) by $user" ;;
    *) desc="Workflow ($form${where:+, $where}) by $user"
       if [ -n "$v" ]; then desc+=", $(who "$v")'s value"; fi ;;
  esac
  argo_yaml "$form" "$v" "$where" "$name" > "$BATS_TEST_TMPDIR/wf.json"
  run --separate-stderr kc "$user" -n "$ns" create -f "$BATS_TEST_TMPDIR/wf.json"
  echo "$user: create $desc -> exit $status; ${stderr:-}"
  if [ "$status" -ne 0 ]; then
    local expected="$count pods: $want, or refused"
    if [ "$want" = refused ]; then expected=refused; fi
    row "Argo" "${key##*-}" "$desc" "$expected" "refused: ${stderr##*denied the request: }"
    [[ "$stderr" == *"denied the request"* ]]
    return
  fi
  expect_pods Argo "${key##*-}" "$desc" "$ns" "workflows.argoproj.io/workflow=$name" "$count" "$want"
}

# argo_ref_case KEY KIND FORM: alice writes a (Cluster)WorkflowTemplate; bob's Workflow calls it by FORM
# (templateRef, clusterTemplateRef, workflowTemplateRef): bob's pods must carry bob's stamp, never alice's
argo_ref_case() {
  local key=$1 kind=$2 form=$3 ns tmpl
  ns=$(argo_ns "$key") tmpl="alice-$kind-${key##*-}"
  tmpl=$(tr 'A-Z' 'a-z' <<< "$tmpl" | tr -c 'a-z0-9\n' - | tr -s -)
  kc admin get "$kind" "$tmpl" -n "$ns" > /dev/null 2>&1 ||
    argo_yaml "$kind" "" "" "$tmpl" | kc alice -n "$ns" create -f - > /dev/null
  echo "alice's $kind $tmpl: podMetadata $(kc admin -n "$ns" get "$kind" "$tmpl" -o json | jq -c .spec.podMetadata)"
  argo_case "$key" "$form" bob bob 1 "$tmpl"
}

# cron_ran NS CRON: the CronWorkflow has created a Workflow (for wait_until, which runs it at every poll)
cron_ran() { [ -n "$(kc admin -n "$1" get workflows -l "workflows.argoproj.io/cron-workflow=$2" -o name)" ]; }

# argo_cron KEY: alice's CronWorkflow (argo_start created it) ran a Workflow, created by the controller's
# account and left unchanged; its pod carries alice's stamp; bob's (his podMetadata naming carol) bob's
argo_cron() {
  local key=$1 ns wf form c
  ns=$(argo_ns "$key")
  for c in cron:alice cron-forged:bob; do
    wait_until 150 "a Workflow of CronWorkflow ${c%%:*}" cron_ran "$ns" "${c%%:*}" || true
    wf=$(kc admin -n "$ns" get workflows -l "workflows.argoproj.io/cron-workflow=${c%%:*}" -o jsonpath='{.items[0].metadata.name}')
    form="CronWorkflow by ${c#*:}"
    if [ "${c%%:*}" = cron-forged ]; then form+=", carol's value in podMetadata"; fi
    expect_pods Argo "${key##*-}" "$form -> Workflow" \
      "$ns" "workflows.argoproj.io/workflow=$wf" 1 "${c#*:}"
  done
}

# argo_controller_writes KEY: every request of the controller's account (Workflows of CronWorkflows, status,
# pods) passed unchanged
argo_controller_writes() {
  local key=$1 writes
  writes=$(controller_writes "$(operator_account "$key")" "$(argo_ns "$key")") || true
  row Argo "${key##*-}" "the controller's own writes" "passed unchanged" "$(jq -r '"\(.requests) requests (\(.kinds)): \(.patched) patched, \(.denied) denied"' <<< "$writes")"
  echo "$writes"
  controller_writes "$(operator_account "$key")" "$(argo_ns "$key")" > /dev/null
}

@test "Argo v3.7.9: the workflow controller starts under its account" { argo_start argo-v3.7.9; }
@test "Argo v3.7.9: steps Workflow by alice -> pods carry alice" { argo_case argo-v3.7.9 steps alice alice 1; }
@test "Argo v3.7.9: DAG Workflow by alice -> pods carry alice" { argo_case argo-v3.7.9 dag alice alice 2; }
@test "Argo v3.7.9: bob's podMetadata naming carol -> pods carry bob" { argo_case argo-v3.7.9 steps bob bob 1 "$CAROL_FORGED" podMetadata; }
@test "Argo v3.7.9: bob's template metadata naming carol -> pods carry bob" { argo_case argo-v3.7.9 steps bob bob 1 "$CAROL_FORGED" template; }
@test "Argo v3.7.9: bob's templateDefaults naming carol -> pods carry bob" { argo_case argo-v3.7.9 steps bob bob 1 "$CAROL_FORGED" templateDefaults; }
@test "Argo v3.7.9: bob's DAG inline template naming carol -> pods carry bob or refused (rule 11)" { argo_case argo-v3.7.9 dag-inline bob bob 1 "$CAROL_FORGED"; }
@test "Argo v3.7.9: bob's steps inline template naming carol -> pods carry bob or refused (rule 11)" { argo_case argo-v3.7.9 steps-inline bob bob 1 "$CAROL_FORGED"; }
@test "Argo v3.7.9: bob's templated key naming carol -> refused (rule 11, keys of a target map)" { argo_case argo-v3.7.9 templated-key bob refused 1 "$CAROL_FORGED"; }
@test "Argo v3.7.9: airflow's value for alice in podMetadata and the template -> pods carry alice" { argo_case argo-v3.7.9 steps airflow alice 1 "$ALICE_VALUE" everywhere; }
@test "Argo v3.7.9: airflow's value for alice in podMetadata only -> pods carry alice (v3: spec.podMetadata wins over a named template's metadata; rule 11 stamped alice into it too)" { argo_case argo-v3.7.9 steps airflow alice 1 "$ALICE_VALUE" podMetadata; }
@test "Argo v3.7.9: bob's templateRef to alice's WorkflowTemplate -> pods carry bob (rule 13)" { argo_ref_case argo-v3.7.9 workflowtemplate templateRef; }
@test "Argo v3.7.9: bob's workflowTemplateRef to alice's WorkflowTemplate -> pods carry bob" { argo_ref_case argo-v3.7.9 workflowtemplate workflowTemplateRef; }
@test "Argo v3.7.9: bob's templateRef to alice's ClusterWorkflowTemplate -> pods carry bob (rule 13)" { argo_ref_case argo-v3.7.9 clusterworkflowtemplate clusterTemplateRef; }
# The KubeRay scenarios of one version run while Argo's controller waits for its CronWorkflows' minute.
@test "KubeRay v1.4.0: RayCluster and RayJob pods carry their author's stamp; forged values are replaced; a trusted submitter's value is kept" {
  kuberay kuberay-v1.4.0
}

@test "KubeRay v1.4.0 --batch-scheduler=yunikorn: the same, on pods that name YuniKorn" {
  kuberay kuberay-v1.4.0 yunikorn
}

@test "KubeRay v1.4.0 --batch-scheduler=yunikorn with YuniKorn's scheduler: YuniKorn's application user is the RayCluster's author" {
  kuberay_yunikorn kuberay-v1.4.0
}

@test "Argo v3.7.9: CronWorkflows' Workflows -> pods carry their author" { argo_cron argo-v3.7.9; }
@test "Argo v3.7.9: the controller's own writes pass unchanged" { argo_controller_writes argo-v3.7.9; }

@test "Argo v4.0.7: the workflow controller starts under its account" { argo_start argo-v4.0.7; }
@test "Argo v4.0.7: steps Workflow by alice -> pods carry alice" { argo_case argo-v4.0.7 steps alice alice 1; }
@test "Argo v4.0.7: DAG Workflow by alice -> pods carry alice" { argo_case argo-v4.0.7 dag alice alice 2; }
@test "Argo v4.0.7: bob's podMetadata naming carol -> pods carry bob" { argo_case argo-v4.0.7 steps bob bob 1 "$CAROL_FORGED" podMetadata; }
@test "Argo v4.0.7: bob's template metadata naming carol -> pods carry bob" { argo_case argo-v4.0.7 steps bob bob 1 "$CAROL_FORGED" template; }
@test "Argo v4.0.7: bob's templateDefaults naming carol -> pods carry bob" { argo_case argo-v4.0.7 steps bob bob 1 "$CAROL_FORGED" templateDefaults; }
@test "Argo v4.0.7: bob's DAG inline template naming carol -> pods carry bob or refused (rule 11)" { argo_case argo-v4.0.7 dag-inline bob bob 1 "$CAROL_FORGED"; }
@test "Argo v4.0.7: bob's steps inline template naming carol -> pods carry bob or refused (rule 11)" { argo_case argo-v4.0.7 steps-inline bob bob 1 "$CAROL_FORGED"; }
@test "Argo v4.0.7: bob's templated key naming carol -> refused (rule 11, keys of a target map)" { argo_case argo-v4.0.7 templated-key bob refused 1 "$CAROL_FORGED"; }
@test "Argo v4.0.7: airflow's value for alice in podMetadata and the template -> pods carry alice" { argo_case argo-v4.0.7 steps airflow alice 1 "$ALICE_VALUE" everywhere; }
@test "Argo v4.0.7: airflow's value for alice in podMetadata only -> pods carry alice (v4: a named template's metadata wins over spec.podMetadata; rule 11: a trusted external names the user once, so the policy stamped alice into it)" { argo_case argo-v4.0.7 steps airflow alice 1 "$ALICE_VALUE" podMetadata; }
@test "Argo v4.0.7: bob's templateRef to alice's WorkflowTemplate -> pods carry bob (rule 13)" { argo_ref_case argo-v4.0.7 workflowtemplate templateRef; }
@test "Argo v4.0.7: bob's workflowTemplateRef to alice's WorkflowTemplate -> pods carry bob" { argo_ref_case argo-v4.0.7 workflowtemplate workflowTemplateRef; }
@test "Argo v4.0.7: bob's templateRef to alice's ClusterWorkflowTemplate -> pods carry bob (rule 13)" { argo_ref_case argo-v4.0.7 clusterworkflowtemplate clusterTemplateRef; }
@test "KubeRay v1.5.0: RayCluster and RayJob pods carry their author's stamp; forged values are replaced; a trusted submitter's value is kept" {
  kuberay kuberay-v1.5.0
}

@test "KubeRay v1.5.0 --batch-scheduler=yunikorn: the same, on pods that name YuniKorn" {
  kuberay kuberay-v1.5.0 yunikorn
}

@test "KubeRay v1.5.0 --batch-scheduler=yunikorn with YuniKorn's scheduler: YuniKorn's application user is the RayCluster's author" {
  kuberay_yunikorn kuberay-v1.5.0
}

@test "Kubeflow training operator v1.9.3: PyTorchJob pods carry their author's stamp; forged values are replaced; a trusted submitter's value is kept" {
  local key=training-operator-v1.9.3 op="Kubeflow training" ver=v1.9.3 ns=t-pytorch account
  require_operator "$key"
  if [ "$(findmnt -n -o SOURCE /tmp/k8s-webhook-server)" != e2e-tmp ]; then skip "needs the private /tmp/k8s-webhook-server of run-operators.sh"; fi
  account=$(operator_account "$key")
  apply_crds "$key"
  new_namespace "$ns"
  kc admin get namespace "${account%%:*}" > /dev/null 2>&1 || kc admin create namespace "${account%%:*}" > /dev/null
  training_webhook "$key" "${account%%:*}"
  start_operator "$key" --enable-scheme=pytorchjob \
    --metrics-bind-address=0 --health-probe-bind-address=0
  # Its cert rotator fills the Secret, then waits for the files a cluster's kubelet would mount from it in
  # /tmp/k8s-webhook-server/serving-certs (hard-coded; run-operators.sh gives the suite a /tmp of its own):
  # copied here as the kubelet would. Its webhook then answers: alice's dry run passes.
  wait_until 60 "the training operator's certificate Secret" cert_secret_ready "${account%%:*}"
  mkdir -p /tmp/k8s-webhook-server/serving-certs
  local f
  for f in ca.crt tls.crt tls.key; do
    kc admin -n "${account%%:*}" get secret training-operator-webhook-cert -o json |
      jq -r --arg f "$f" '.data[$f]' | base64 -d > "/tmp/k8s-webhook-server/serving-certs/$f"
  done
  pytorch_job probe > "$BATS_TEST_TMPDIR/probe.json"
  wait_until 120 "the training operator's webhook" kc alice -n "$ns" create --dry-run=server -f "$BATS_TEST_TMPDIR/probe.json"

  pytorch_job clean | kc alice -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "PyTorchJob by alice" "$ns" training.kubeflow.org/job-name=clean 2 alice
  pytorch_job forged "$CAROL_FORGED" | kc bob -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "PyTorchJob by bob, carol's value in Master and Worker templates" "$ns" training.kubeflow.org/job-name=forged 2 bob
  pytorch_job for-alice "$ALICE_VALUE" | kc airflow -n "$ns" create -f - > /dev/null
  expect_pods "$op" "$ver" "PyTorchJob by airflow (external submitter) for alice" "$ns" training.kubeflow.org/job-name=for-alice 2 alice

  local writes
  writes=$(controller_writes "$account" "$ns") || true
  row "$op" "$ver" "the operator's own writes" "passed unchanged" "$(jq -r '"\(.requests) requests (\(.kinds)): \(.patched) patched, \(.denied) denied"' <<< "$writes")"
  echo "$writes"
  controller_writes "$account" "$ns" > /dev/null
  stop_operator
}

@test "Argo v4.0.7: CronWorkflows' Workflows -> pods carry their author" { argo_cron argo-v4.0.7; }
@test "Argo v4.0.7: the controller's own writes pass unchanged" { argo_controller_writes argo-v4.0.7; }

# ---------------------------------------------------------------- Kubeflow training operator

# pytorch_job NAME [VALUE]: a PyTorchJob, one Master and one Worker, VALUE in both templates
pytorch_job() {
  jq -n --arg name "$1" --arg v "${2:-}" --arg k "$ANNOTATION" --arg img "$IMAGE" '
    (if $v == "" then {} else {metadata: {annotations: {($k): $v}}} end) as $md |
    ($md + {spec: {containers: [{name: "pytorch", image: $img}]}}) as $t |
    {apiVersion: "kubeflow.org/v1", kind: "PyTorchJob", metadata: {name: $name},
     spec: {pytorchReplicaSpecs: {Master: {replicas: 1, restartPolicy: "Never", template: $t},
                                  Worker: {replicas: 1, restartPolicy: "Never", template: $t}}}}'
}

# training_webhook KEY NS: the operator's own ValidatingWebhookConfiguration (its manifests), named as its
# cert rotator expects, calling it through a Service whose ClusterIP is on this network namespace's
# loopback (no kube-proxy here): the operator's validation stays in the loop, as in a cluster
training_webhook() {
  local key=$1 ns=$2 ip=10.0.0.53
  ip addr add "$ip/32" dev lo 2> /dev/null || true
  kc admin -n "$ns" apply -f - > /dev/null <<Y
apiVersion: v1
kind: Service
metadata: {name: training-operator}
spec:
  clusterIP: $ip
  ports: [{name: webhook-server, port: 9443, targetPort: 9443}]
---
apiVersion: v1
kind: Secret
metadata: {name: training-operator-webhook-cert}
Y
  yq -y --arg ns "$ns" '.metadata.name = "validator.training-operator.kubeflow.org" |
    .webhooks[].clientConfig.service |= {name: "training-operator", namespace: $ns, port: 9443, path: .path}' \
    "$OPERATORS_DIR/$key"/webhook/*.yaml | kc admin apply -f - > /dev/null
}

cert_secret_ready() {
  kc admin -n "$1" get secret training-operator-webhook-cert -o json | jq -e '.data["ca.crt"] and .data["tls.crt"] and .data["tls.key"]'
}

# ---------------------------------------------------------------- load (OPERATOR_LOAD=1; not part of make test)
# 200 Workflows (alice) and 50 RayClusters (bob) at once, Argo v4.0.7 and KubeRay v1.5.0 creating their pods:
# what admission costs the controllers. Figures: the policy's time per request in kwhost (reviews.jsonl) by
# requester and kind, and the API server's own histogram of the webhook's latency (sum/count over the run).

# latency_report NS: count, p50, p99 and max of the policy's time (µs) per requester kind and operation in NS
latency_report() {
  jq -sr --arg ns "$1" '[.[] | select(.namespace == $ns and (.dryRun | not))] |
    group_by([(if (.userInfo.username | startswith("system:serviceaccount:")) then .userInfo.username | split(":")[3] else "user" end), .kind, .operation]) |
    map(sort_by(.micros) | {who: .[0].userInfo.username, kind: .[0].kind, op: .[0].operation, n: length,
      p50: .[(length * 0.5 | floor)].micros, p99: .[((length - 1) * 0.99 | floor)].micros, max: .[-1].micros,
      patched: map(select(.patch)) | length}) |
    .[] | "\(.who)\t\(.kind) \(.op)\t\(.n)\tp50 \(.p50) µs\tp99 \(.p99) µs\tmax \(.max) µs\tpatched \(.patched)"' "$RUN/reviews.jsonl"
}

# webhook_seconds: the API server's sum and count of our webhook's admission latency
webhook_seconds() {
  curl_admin "https://127.0.0.1:$API_PORT/metrics" |
    awk '/^apiserver_admission_webhook_admission_duration_seconds_(sum|count)\{.*name="yunikorn-user-info-e2e/ {
      if ($1 ~ /_sum/) s += $2; else c += $2 } END {print s, c}'
}

@test "load: 200 Workflows and 50 RayClusters at once; the latency admission adds for the controllers" {
  [ "${OPERATOR_LOAD:-0}" = 1 ] || skip "OPERATOR_LOAD=1 runs it (a few minutes)"
  require_operator argo-v4.0.7
  require_operator kuberay-v1.5.0
  local ns=t-load i before after t0
  apply_crds argo-v4.0.7
  apply_crds kuberay-v1.5.0
  new_namespace "$ns"
  argo_start argo-v4.0.7 no-cron
  start_operator kuberay-v1.5.0 --enable-leader-election=false --metrics-addr=0 --health-probe-bind-address=0
  before=$(webhook_seconds)
  t0=$(date +%s)
  for i in $(seq 1 200); do argo_yaml steps "" "" "wf-$i"; done | jq -s '{apiVersion: "v1", kind: "List", items: .}' > "$BATS_TEST_TMPDIR/wfs.json"
  for i in $(seq 1 50); do ray_cluster "rc-$i"; done | jq -s '{apiVersion: "v1", kind: "List", items: .}' > "$BATS_TEST_TMPDIR/rcs.json"
  kc alice -n "$ns" create -f "$BATS_TEST_TMPDIR/wfs.json" > /dev/null &
  local alice=$!
  kc bob -n "$ns" create -f "$BATS_TEST_TMPDIR/rcs.json" > /dev/null
  wait "$alice" # not a bare wait: the controllers are background jobs of this shell too
  wait_until 600 "300 pods in $ns" pods_at_least "$ns" 300
  after=$(webhook_seconds)
  echo "300 pods in $(($(date +%s) - t0)) s; the API server's webhook latency: $(awk -v b="$before" -v a="$after" 'BEGIN {
    split(b, x, " "); split(a, y, " "); n = y[2] - x[2]; printf "%d calls, mean %.1f ms", n, n ? 1000 * (y[1] - x[1]) / n : 0 }')"
  latency_report "$ns" | tee "$RUN/operators-load.txt" | column -t -s $'\t'
  row "load" "Argo v4.0.7, KubeRay v1.5.0" "200 Workflows (alice), 50 RayClusters (bob)" "300 pods, each its author's" "$(pod_owners "$ns" "")"
  [ "$(pod_owners "$ns" "")" = "200 pods: alice; 100 pods: bob" ]
  stop_operator
  stop_operator argo
}

# ---------------------------------------------------------------- the documents against this run
# docs/operators.md carries this run's table (make operators-table puts it there) and, like the README, says
# which versions were tested: after a complete run, both must claim what the run showed (operators-table.sh).

@test "docs: docs/operators.md's table is this run's, and it and the README claim only versions the run showed" {
  if [ -n "${BATS_FILTER:-}" ]; then skip "BATS_FILTER ran some scenarios only: the run's table is partial"; fi
  if cut -f5 "$TABLE" | grep -q '^SKIPPED'; then skip "some operators were not built (see the banners): the run's table is partial"; fi
  local root=$BATS_TEST_DIRNAME/../.. doc
  doc=$root/docs/operators.md
  run "$BATS_TEST_DIRNAME/operators-table.sh" check "$TABLE" "$doc" "$root/README.md"
  echo "$output"
  [ "$status" -eq 0 ]
}
