#!/usr/bin/env bats
# End-to-end tests through the compiled policy.wasm, in the style of Kubewarden's policies: every test runs
# `$KWCTL run` (the real kwctl when installed, else the project's host, build/kwhost, which prints the
# same one-line AdmissionResponse) and checks the decision, the message, the warnings and the decoded patch.
# `make e2e-tests` sets KWCTL and POLICY.

bats_require_minimum_version 1.5.0

load e2e-helpers

# ---------------------------------------------------------------------------------------------- CREATE

@test "stamps the requester on a pod she creates" {
  evaluate "$R/pod-create-alice.json"
  allowed true
  [ "$(jq -r .patchType <<<"$output")" = JSONPatch ]
  [ "$(stamped /metadata)" = "$ALICE" ]
  [ -z "$(warnings)" ]
}

@test "the stamp is the only change: replicas 0, allowPrivilegeEscalation false and unknown fields survive" {
  for f in pod-create-alice deployment-create-alice statefulset-create-alice; do
    evaluate "$R/$f.json"
    [ "$(patch_ops)" -eq 1 ]
  done
}

@test "stamps the pod template of a Deployment, not the Deployment" {
  evaluate "$R/deployment-create-alice.json"
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
  [ -z "$(stamped /metadata)" ]
}

@test "stamps the pod template of a ReplicaSet created by a user" {
  evaluate "$R/replicaset-create-alice.json"
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
}

@test "stamps the pod template of a StatefulSet" {
  evaluate "$R/statefulset-create-alice.json"
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
}

@test "stamps the pod template of a DaemonSet" {
  evaluate "$R/daemonset-create-alice.json"
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
}

@test "stamps the pod template of a Job" {
  evaluate "$R/job-create-alice.json"
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
}

@test "stamps the pod template of a CronJob under spec.jobTemplate" {
  evaluate "$R/cronjob-create-alice.json"
  [ "$(stamped /spec/jobTemplate/spec/template/metadata)" = "$ALICE" ]
}

@test "stamps the pod template of a ReplicationController" {
  evaluate "$R/replicationcontroller-create-alice.json"
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
}

@test "creates metadata and annotations when the object has none" {
  edit pod-create-alice '.object |= {kind, apiVersion, spec}'
  evaluate "$REQ"
  [ "$(stamped /metadata)" = "$ALICE" ]
}

@test "replaces a value supplied by an untrusted user and warns" {
  evaluate "$R/pod-create-bob-forged.json"
  allowed true
  [ "$(stamped /metadata)" = "$BOB" ]
  [ "$(warnings)" = "$ANN in metadata replaced by your identity: do not set it" ]
  [[ "$stderr" == *"replaced an untrusted"* ]] || [ "$KWCTL" = kwctl ]
}

@test "logs nothing for a routine decision by default" {
  evaluate "$R/pod-create-alice.json"
  allowed true
  [ "$(stamped /metadata)" = "$ALICE" ]
  [[ "$stderr" != *"stamped the requester"* ]]
  [ "$OWN_HOST" != true ] || [ -z "$stderr" ]
}

@test "logs each decision as one JSON line that names the requester, with logDecisions" {
  evaluate "$R/pod-create-alice.json" '{"logDecisions":true}'
  allowed true
  [ "$OWN_HOST" = true ] || return 0 # kwctl prints the lines in a format of its own
  [ "$(wc -l <<<"$stderr")" -eq 1 ]
  jq -e '.level == "debug" and .message == "stamped the requester (rule 3)" and .user == "alice"
    and .kind == "Pod" and .operation == "CREATE" and .groups == "devops,system:authenticated"' <<<"$stderr"
}

@test "replaces a forged value in a Deployment template" {
  evaluate "$R/deployment-create-bob-forged.json"
  [ "$(stamped /spec/template/metadata)" = "$BOB" ]
  [[ "$(warnings)" == *"spec.template.metadata replaced by your identity"* ]]
}

@test "rejects a value supplied by an untrusted user in reject mode" {
  evaluate "$R/pod-create-bob-forged.json" "$REJECT"
  rejected_with "user bob with groups [qa,system:authenticated] is not allowed to set the yunikorn.apache.org/user.info annotation"
}

@test "keeps the value a trusted controller copies from the template" {
  evaluate "$R/pod-create-replicaset-controller.json"
  allowed true
  no_patch
  evaluate "$R/pod-create-kube-controller-manager.json" "$REJECT"
  allowed true
  no_patch
}

@test "rejects an invalid value from a trusted controller, naming the problem" {
  edit pod-create-replicaset-controller '.object.metadata.annotations[$k] = "{\"user\":\"bob\",\"user\":\"alice\"}"' --arg k "$ANN"
  evaluate "$REQ"
  rejected_with 'is not valid: the key "user" occurs more than once'
}

@test "gives a controller creating a pod without the annotation its own identity" {
  evaluate "$R/pod-create-job-controller-no-annotation.json"
  [ "$(stamped /metadata | jq -r .user)" = "system:serviceaccount:kube-system:job-controller" ]
}

@test "treats controllers as untrusted when bypassControllers is false" {
  evaluate "$R/pod-create-replicaset-controller.json" '{"bypassControllers":false}'
  [ "$(stamped /metadata | jq -r .user)" = "system:serviceaccount:kube-system:replicaset-controller" ]
  [[ "$(warnings)" == *"replaced by your identity"* ]]
}

@test "does not trust a service account in a namespace that merely starts with kube-system" {
  edit pod-create-bob-forged '.userInfo.username = "system:serviceaccount:kube-system-evil:default"'
  evaluate "$REQ"
  [ "$(stamped /metadata | jq -r .user)" = "system:serviceaccount:kube-system-evil:default" ]
}

@test "keeps the value of an allow-listed external submitter, by user and by group" {
  edit pod-create-bob-forged '.userInfo = {"username":"airflow","groups":["system:authenticated"]}'
  evaluate "$REQ" "$EXTERNAL"
  allowed true
  no_patch
  edit pod-create-bob-forged '.userInfo = {"username":"gateway","groups":["spark-submitters"]}'
  evaluate "$REQ" "$EXTERNAL"
  allowed true
  no_patch
}

@test "ignores the external allow-lists while bypassAuth is false" {
  edit pod-create-bob-forged '.userInfo = {"username":"airflow","groups":["system:authenticated"]}'
  evaluate "$REQ" '{"externalUsers":["^airflow$"]}'
  [ "$(stamped /metadata | jq -r .user)" = airflow ]
}

@test "lets the deprecated label stand for a trusted submitter when bypassAuth is on, with a warning" {
  edit pod-create-legacy-label '.userInfo = {"username":"airflow","groups":["system:authenticated"]}'
  evaluate "$REQ" "$EXTERNAL"
  allowed true
  no_patch
  [[ "$(warnings)" == "the yunikorn.apache.org/username label is deprecated: set the $ANN annotation instead" ]]
}

@test "ignores the deprecated label otherwise and stamps the requester" {
  evaluate "$R/pod-create-legacy-label.json"
  [ "$(stamped /metadata)" = "$BOB" ]
  evaluate "$R/pod-create-legacy-label.json" "$EXTERNAL"
  [ "$(stamped /metadata)" = "$BOB" ]
}

@test "never mutates a ReplicaSet the deployment controller creates" {
  evaluate "$R/replicaset-create-deployment-controller.json"
  allowed true
  no_patch
  evaluate "$R/replicaset-create-deployment-controller.json" '{"bypassControllers":false,"onUntrustedAnnotation":"reject"}'
  allowed true
  no_patch
}

@test "never mutates a Job the cronjob controller creates" {
  evaluate "$R/job-create-cronjob-controller.json"
  allowed true
  no_patch
}

@test "rejects an invalid template value on a workload from a trusted system user" {
  edit replicaset-create-deployment-controller '.object.spec.template.metadata.annotations[$k] = "{}"' --arg k "$ANN"
  evaluate "$REQ"
  rejected_with 'annotation in spec.template.metadata is not valid: the key "user" is missing'
}

# ---------------------------------------------------------------------------------------------- UPDATE

@test "accepts an unrelated change to a pod" {
  evaluate "$R/pod-update-label-change.json"
  allowed true
  no_patch
}

@test "accepts a status update of a pod" {
  evaluate "$R/pod-update-status.json"
  allowed true
  no_patch
}

@test "rejects a change to the annotation on a running pod" {
  evaluate "$R/pod-update-annotation-change.json"
  rejected_with "the yunikorn.apache.org/user.info annotation cannot be changed once the pod exists"
}

@test "rejects removing the annotation from a running pod, even by a trusted controller" {
  edit pod-update-label-change 'del(.object.metadata.annotations[$k]) | .userInfo.username = "system:kube-controller-manager"' --arg k "$ANN"
  evaluate "$REQ"
  rejected_with "cannot be changed once the pod exists"
}

@test "rejects adding the annotation to a running pod" {
  edit pod-update-label-change 'del(.oldObject.metadata.annotations[$k])' --arg k "$ANN"
  evaluate "$REQ"
  rejected_with "cannot be changed once the pod exists"
}

@test "rejects a change to the deprecated label of a running pod without the annotation" {
  edit pod-update-label-change 'del(.oldObject.metadata.annotations[$k], .object.metadata.annotations[$k])
    | .oldObject.metadata.labels["yunikorn.apache.org/username"] = "alice"
    | .object.metadata.labels["yunikorn.apache.org/username"] = "bob"' --arg k "$ANN"
  evaluate "$REQ"
  rejected_with "the yunikorn.apache.org/username label cannot be changed once the pod exists"
}

@test "accepts a workload update that leaves the template identity alone" {
  evaluate "$R/deployment-update-image.json" "$REJECT"
  allowed true
  no_patch
}

@test "restores the template annotation an untrusted user changed, with a warning" {
  evaluate "$R/deployment-update-bob-template.json"
  allowed true
  [ "$(patch_ops)" -eq 1 ]
  [ "$(stamped /spec/template/metadata)" = "$ALICE" ]
  [[ "$(warnings)" == *"$ANN in spec.template.metadata restored: only trusted submitters may change it"* ]]
}

@test "removes a template annotation an untrusted user added" {
  edit deployment-update-bob-template 'del(.oldObject.spec.template.metadata.annotations[$k])' --arg k "$ANN"
  evaluate "$REQ"
  allowed true
  [ "$(patch | jq -r '.[0].op')" = remove ]
  [ "$(patch | jq -r '.[0].path')" = "/spec/template/metadata/annotations/yunikorn.apache.org~1user.info" ]
}

@test "rejects an untrusted template change in reject mode, naming the requester" {
  evaluate "$R/deployment-update-bob-template.json" "$REJECT"
  rejected_with "user bob with groups [qa,system:authenticated] is not allowed to change the yunikorn.apache.org/user.info annotation in spec.template.metadata of this Deployment"
}

@test "accepts a template change by a trusted controller" {
  edit deployment-update-bob-template '.userInfo.username = "system:kube-controller-manager"'
  evaluate "$REQ" "$REJECT"
  allowed true
  no_patch
}

@test "protects the deprecated label of a workload template without the annotation" {
  edit deployment-update-image 'del(.oldObject.spec.template.metadata.annotations[$k], .object.spec.template.metadata.annotations[$k])
    | .oldObject.spec.template.metadata.labels["yunikorn.apache.org/username"] = "alice"
    | .object.spec.template.metadata.labels["yunikorn.apache.org/username"] = "bob"' --arg k "$ANN"
  evaluate "$REQ" "$EXTERNAL"
  allowed true
  [ "$(patch | jq -r '.[0].value')" = alice ]
  [ "$(warnings)" = "yunikorn.apache.org/username in spec.template.metadata restored: only trusted submitters may change it" ]
}

# --------------------------------------------------------------------------------- not ours, bad input

@test "accepts a DELETE unchanged" {
  evaluate "$R/pod-delete.json" "$REJECT"
  allowed true
  no_patch
}

@test "accepts a scale subresource update unchanged" {
  evaluate "$R/deployment-scale.json" "$REJECT"
  allowed true
  no_patch
}

@test "accepts kinds it does not handle, such as a Job of another API group" {
  edit job-create-alice '.kind.group = "example.com"'
  evaluate "$REQ"
  allowed true
  no_patch
}

@test "rejects a request without a username with 400" {
  # kwctl itself refuses a request without userInfo; an empty one reaches the policy.
  edit pod-create-alice '.userInfo = {}'
  evaluate "$REQ"
  rejected_with "request.userInfo.username is missing or empty"
}

@test "rejects an UPDATE without oldObject with 400" {
  edit pod-update-label-change 'del(.oldObject)'
  evaluate "$REQ"
  rejected_with "request.oldObject is missing"
}

@test "rejects a workload without a pod template with 400" {
  edit deployment-create-alice 'del(.object.spec.template)'
  evaluate "$REQ"
  rejected_with "request.object.spec.template is missing or not an object: a Deployment needs a pod template"
}

@test "rejects annotations that are not an object with 400" {
  edit pod-create-alice '.object.metadata.annotations = ["x"]'
  evaluate "$REQ"
  rejected_with "request.object.metadata.annotations must be an object of strings"
}

@test "accepts unchanged an untrusted requester's value that is exactly its own stamp, in both modes (rule 1)" {
  edit job-create-alice '.userInfo = {"username":"bob","groups":["qa","system:authenticated"]}
    | .object.spec.template.metadata.annotations["yunikorn.apache.org/user.info"] = $v' --arg v "$BOB"
  for settings in '{}' "$REJECT"; do
    evaluate "$REQ" "$settings"
    allowed true
    no_patch
    [ -z "$(warnings)" ]
  done
}

@test "accepts an AdmissionReview as well as a bare AdmissionRequest" {
  jq '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: .}' "$R/pod-create-alice.json" >"$REQ"
  evaluate "$REQ"
  [ "$(stamped /metadata)" = "$ALICE" ]
  [ "$(jq -r .uid <<<"$output")" = "$(jq -r .uid "$R/pod-create-alice.json")" ]
}

# ------------------------------------------------------------------------------ applications and task groups
@test "refuses a pod that joins another namespace's generated application, in both modes (rule 14)" {
  for settings in '{}' "$REJECT"; do
    evaluate "$R/pod-create-bob-foreign-app.json" "$settings"
    rejected_with "application ID yunikorn-team-b-autogen is the generated application of namespace team-b: a pod may join it only from that namespace"
  done
}

@test "accepts a pod that joins its own namespace's generated application, or an explicit one (rule 14)" {
  for id in yunikorn-team-a-autogen analytics-0042; do
    edit pod-create-bob-foreign-app '.object.metadata.labels.applicationId = $id' --arg id "$id"
    evaluate "$REQ"
    allowed true
    [ "$(stamped /metadata)" = "$BOB" ]
  done
}

@test "refuses a Deployment whose pods would join another namespace's generated application, on create and when changed (rule 14)" {
  edit deployment-create-alice '.object.spec.template.metadata.annotations["yunikorn.apache.org/app-id"] = "yunikorn-team-b-autogen"'
  evaluate "$REQ"
  rejected_with "application ID yunikorn-team-b-autogen is the generated application of namespace team-b"
  edit deployment-update-image '.object.spec.template.metadata.labels["yunikorn.apache.org/app-id"] = "yunikorn-kube-system-autogen"'
  evaluate "$REQ"
  rejected_with "application ID yunikorn-kube-system-autogen is the generated application of namespace kube-system"
}

@test "a trusted submitter may name any application (rule 14)" {
  edit pod-create-bob-foreign-app '.userInfo = {"username":"airflow","groups":["system:authenticated"]}'
  evaluate "$REQ" "$EXTERNAL"
  allowed true
}

@test "writes the pod's identity into every task group, replacing another user's (rule 16)" {
  evaluate "$R/pod-create-bob-task-groups.json"
  allowed true
  [ "$(warnings)" = "$ANN in the task groups replaced by the pod's: do not set it" ]
  # the task groups as YuniKorn reads them: each group's annotations carry bob, the rest is kept
  groups="$(patch | jq -r '.[] | select(.path == "/metadata/annotations/yunikorn.apache.org~1task-groups") | .value')"
  [ "$(jq -r '.[0].annotations["yunikorn.apache.org/user.info"]' <<<"$groups")" = "$BOB" ]
  [ "$(jq -c '.[0].minResource' <<<"$groups")" = '{"cpu":"1"}' ]
  evaluate "$R/pod-create-bob-task-groups.json" "$REJECT"
  rejected_with "the yunikorn.apache.org/task-groups annotation sets the yunikorn.apache.org/user.info annotation on placeholder pods: only trusted controllers and allow-listed submitters may"
}

@test "refuses task groups that set the annotation anywhere else, or that YuniKorn could read otherwise (rule 15)" {
  edit pod-create-bob-task-groups '.object.metadata.annotations["yunikorn.apache.org/task-groups"] = "[{\"name\":\"tg\",\"labels\":{\"yunikorn.apache.org/user.info\":\"x\"}}]"'
  evaluate "$REQ"
  rejected_with "the yunikorn.apache.org/task-groups annotation sets the yunikorn.apache.org/user.info annotation on placeholder pods"
  edit pod-create-bob-task-groups '.object.metadata.annotations["yunikorn.apache.org/task-groups"] = "[{\"name\":\"tg\",\"ANNOTATIONS\":{}}]"'
  evaluate "$REQ"
  rejected_with "the yunikorn.apache.org/task-groups annotation is not plain JSON task groups: a task group has the member \"ANNOTATIONS\", which YuniKorn reads as annotations"
  # a null element: nothing to a strict reader, an empty task group without the identity to YuniKorn
  edit pod-create-bob-task-groups '.object.metadata.annotations["yunikorn.apache.org/task-groups"] = "[{\"name\":\"tg\"},null]"'
  evaluate "$REQ"
  rejected_with "the yunikorn.apache.org/task-groups annotation is not plain JSON task groups: element 1 is null, which YuniKorn reads as an empty task group"
}

@test "refuses an untrusted change of a pod's application (rule 14b)" {
  edit pod-update-status '.userInfo = {"username":"bob","groups":["qa"]} | .object.metadata.labels.applicationId = "alice-app"'
  evaluate "$REQ"
  rejected_with "the application of a pod cannot change once the pod exists: analytics-0042 to alice-app"
}

# ------------------------------------------------------------------------------------------- Binding

@test "refuses a Binding through pods/binding that carries the annotation, whoever sends it (rule 10)" {
  evaluate "$R/binding-create-forged.json"
  rejected_with "a Binding cannot set the $ANN annotation: the pod's annotation cannot be changed once the pod exists"
  edit binding-create-forged '.userInfo = {"username":"system:kube-scheduler","groups":["system:authenticated"]}'
  evaluate "$REQ" "$EXTERNAL"
  rejected_with "a Binding cannot set the $ANN annotation"
}

@test "refuses a Binding through the top-level bindings resource that carries the annotation (rule 10)" {
  evaluate "$R/bindings-create-forged.json" "$REJECT"
  rejected_with "a Binding cannot set the $ANN annotation"
}

@test "accepts a scheduler's Binding without annotations unchanged, needing no username (rule 10)" {
  evaluate "$R/binding-create-scheduler.json"
  allowed true
  no_patch
  edit binding-create-scheduler '.userInfo = {"username":""}'
  evaluate "$REQ"
  allowed true
  no_patch
}

@test "rejects a Binding whose annotations are not an object with 400 (rule 10)" {
  edit binding-create-forged '.object.metadata.annotations = ["x"]'
  evaluate "$REQ"
  rejected_with "request.object.metadata.annotations must be an object of strings"
}

# ----------------------------------------------------------------------------------- duplicate members

@test "rejects a request whose username occurs twice with 400" {
  jq -c . "$R/pod-create-alice.json" | sed 's/"username":"alice"/"username":"bob","username":"alice"/' >"$REQ"
  grep -q '"username":"bob","username":"alice"' "$REQ"
  # policy-server (and kwctl) read the request into a typed struct first: the last username reaches the policy.
  evaluate "$REQ"
  [ "$(stamped /metadata)" = "$ALICE" ]
  raw_payload
  evaluate "$REQ"
  rejected_with "request.userInfo.username occurs more than once"
}

# ------------------------------------------------------------------------------------------- settings

# settings_error SETTINGS EXPECTED: the policy refuses to run with SETTINGS and says EXPECTED.
settings_error() {
  run "$KWCTL" run "${HOST_FLAGS[@]}" --request-path "$R/pod-create-alice.json" --settings-json "$1" "$POLICY"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Provided settings are not valid"* ]]
  [[ "$output" == *"$2"* ]]
}

@test "refuses settings with a wrong type" {
  settings_error '{"bypassAuth":"yes"}' "bypassAuth: must be true or false, not a string"
}

@test "refuses a list item of the wrong type, naming its index" {
  settings_error '{"bypassAuth":true,"externalUsers":["^a$",3]}' "externalUsers: item 1 must be a string"
}

@test "refuses an invalid regex with the regex error" {
  settings_error '{"systemUsers":["^ok$","(x"]}' 'systemUsers[1]: invalid regular expression "(x": error parsing regexp: missing closing )'
}

@test "refuses an empty pattern" {
  settings_error '{"systemUsers":["^a$",""]}' 'systemUsers[1]: the empty pattern "" matches every user'
}

@test "refuses a pattern that matches the empty string, naming key and index" {
  settings_error '{"systemUsers":["^a$",".*"]}' 'systemUsers[1]: the pattern ".*" matches the empty string, so it matches every name'
  settings_error '{"bypassAuth":true,"externalUsers":"^airflow$, ^"}' 'externalUsers[1]: the pattern "^" matches the empty string'
  settings_error '{"bypassAuth":true,"externalGroups":["a*"]}' 'externalGroups[0]: the pattern "a*" matches the empty string'
}

@test "refuses a pattern over 1,024 bytes, naming key, index and limit" {
  settings_error "{\"systemUsers\":[\"^a\$\",\"^$(printf 'a%.0s' {1..1100})\$\"]}" 'systemUsers[1]: the pattern is 1102 bytes long, over the limit of 1,024 bytes'
}

@test "refuses groups nested over 32 deep with a message, not a trap" {
  local deep
  deep="$(printf '(%.0s' {1..110})a$(printf ')%.0s' {1..110})"
  settings_error "{\"bypassAuth\":true,\"externalUsers\":[\"^x\$\",\"$deep\"]}" 'externalUsers[1]: the pattern nests groups 110 deep, over the limit of 32'
  deep="$(printf '(%.0s' {1..33})a$(printf ')%.0s' {1..33})"
  settings_error "{\"systemUsers\":\"$deep\"}" 'systemUsers[0]: the pattern nests groups 33 deep, over the limit of 32'
}

@test "accepts a pattern nested exactly 32 deep" {
  local deep
  deep="^$(printf '(%.0s' {1..32})airflow$(printf ')%.0s' {1..32})\$"
  edit pod-create-bob-forged '.userInfo = {"username":"airflow","groups":[]}'
  evaluate "$REQ" "{\"bypassAuth\":true,\"externalUsers\":[\"$deep\"]}"
  allowed true
  no_patch
}

@test "refuses a legacyUserLabel that is not a label key" {
  settings_error '{"legacyUserLabel":"yunikorn user"}' 'legacyUserLabel: "yunikorn user" is not a valid label key'
  settings_error '{"legacyUserLabel":"YuniKorn.apache.org/username"}' 'legacyUserLabel: "YuniKorn.apache.org/username" is not a valid label key (the prefix must be a DNS subdomain'
}

@test "refuses honorLegacyUserLabel of the wrong type" {
  settings_error '{"honorLegacyUserLabel":"false"}' 'honorLegacyUserLabel: must be true or false, not a string'
}

@test "refuses a settings key given twice" {
  # policy-server and kwctl read settings into a JSON value first, which keeps the last key: as written,
  # the policy refuses them.
  raw_payload
  settings_error '{"onUntrustedAnnotation":"reject","onUntrustedAnnotation":"replace"}' 'the key "onUntrustedAnnotation" occurs more than once'
}

@test "reads a single string of patterns as YuniKorn does: split at commas, blanks dropped" {
  edit pod-create-bob-forged '.userInfo = {"username":"spark","groups":[]}'
  evaluate "$REQ" '{"bypassAuth":true,"externalUsers":" ^airflow$ , ^spark$ ,"}'
  allowed true
  no_patch
  # " " is an empty list, not a pattern trusting every name with a space in it.
  settings_error '{"bypassAuth":true,"externalUsers":" ","externalGroups":","}' 'bypassAuth: is true but externalUsers and externalGroups are both empty'
}

@test "honorLegacyUserLabel false lets a pod's legacy label change (legacy handling off)" {
  edit pod-update-label-change '.oldObject.metadata.annotations = {} | .object.metadata.annotations = {}
    | .oldObject.metadata.labels["yunikorn.apache.org/username"] = "alice" | .object.metadata.labels["yunikorn.apache.org/username"] = "bob"'
  evaluate "$REQ"
  rejected_with "the yunikorn.apache.org/username label cannot be changed once the pod exists"
  evaluate "$REQ" '{"honorLegacyUserLabel":false}'
  allowed true
  no_patch
}

@test "refuses an unknown key, listing the valid ones" {
  settings_error '{"bypassauth":true}' 'unknown key "bypassauth": valid keys are bypassAuth, bypassControllers, systemUsers, externalUsers, externalGroups, onUntrustedAnnotation, legacyUserLabel, customWorkloads, honorLegacyUserLabel, logDecisions'
}

@test "refuses an unknown onUntrustedAnnotation" {
  settings_error '{"onUntrustedAnnotation":"ignore"}' 'onUntrustedAnnotation: "ignore" is not a valid mode'
}

@test "refuses bypassAuth without any external user or group" {
  settings_error '{"bypassAuth":true}' "bypassAuth: is true but externalUsers and externalGroups are both empty"
}

@test "accepts a single string where a list is expected" {
  edit pod-create-bob-forged '.userInfo = {"username":"airflow","groups":[]}'
  evaluate "$REQ" '{"bypassAuth":true,"externalUsers":"^airflow$"}'
  allowed true
  no_patch
}

# ------------------------------------------------------------------------------ custom resources (rules 11-13)
# Settings are the examples' own (testdata/settings/<example>.json; test/shipcheck checks that they
# are examples/<example>.yaml's spec.settings, but for YuniKorn's scheduler, whose requests are not here).

S=testdata/settings
@test "SparkApplication: stamps the driver and executor maps of alice's application" {
  evaluate "$R/sparkapplication-create-alice.json" "$(cat $S/spark-operator.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/driver/annotations") | .value["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
  [ "$(patch | jq -r '.[] | select(.path == "/spec/executor/annotations") | .value["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
  [ "$(patch | jq -r '.[] | select(.path == "/spec/executor/template/metadata") | .value.annotations["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
  [ "$(patch_ops)" -eq 3 ]
  [ -z "$(warnings)" ]
}

@test "SparkApplication: replaces bob's forged driver annotation with one warning" {
  evaluate "$R/sparkapplication-create-bob-forged.json" "$(cat $S/spark-operator.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/driver/annotations/yunikorn.apache.org~1user.info") | .value')" = "$BOB" ]
  [ "$(warnings | wc -l)" -eq 1 ]
  [[ "$(warnings)" == *"replaced with the requester's identity in 1 map"* ]]
}

@test "SparkApplication: rejects bob's forged driver annotation in reject mode" {
  evaluate "$R/sparkapplication-create-bob-forged.json" "$(jq -c '. + {"onUntrustedAnnotation":"reject"}' $S/spark-operator.json)"
  rejected_with "user bob with groups [qa,system:authenticated] is not allowed to set the yunikorn.apache.org/user.info annotation (in spec.driver.annotations)"
}

@test "SparkApplication: refuses a sparkConf entry that sets the annotation, in both modes (rule 13)" {
  for mode in replace reject; do
    evaluate "$R/sparkapplication-create-bob-sparkconf.json" "$(jq -c --arg m $mode '. + {"onUntrustedAnnotation":$m}' $S/spark-operator.json)"
    rejected_with "the spec.sparkConf entry spark.kubernetes.driver.annotation.yunikorn.apache.org/user.info sets the yunikorn.apache.org/user.info annotation"
  done
}

@test "SparkApplication: restores alice's driver annotation that bob changed, and nothing else" {
  evaluate "$R/sparkapplication-update-bob.json" "$(cat $S/spark-operator.json)"
  allowed true
  [ "$(patch_ops)" -eq 1 ]
  [ "$(patch | jq -r '.[0].path')" = /spec/driver/annotations/yunikorn.apache.org~1user.info ]
  [ "$(patch | jq -r '.[0].value')" = "$ALICE" ]
  [[ "$(warnings)" == *"restored to its previous value in 1 map"* ]]
}

@test "SparkApplication: an update that leaves the maps alone is not mutated" {
  edit sparkapplication-update-bob '.object = .oldObject | .object.spec.executor.instances = 9'
  evaluate "$REQ" "$(cat $S/spark-operator.json)"
  allowed true
  no_patch
}

@test "ScheduledSparkApplication: stamps the maps under spec.template" {
  evaluate "$R/scheduledsparkapplication-create-alice.json" "$(cat $S/spark-operator.json)"
  allowed true
  [ "$(patch | jq -r '[.[].path] | join(" ")')" = "/spec/template/driver/annotations /spec/template/executor/annotations /spec/template/executor/template/metadata" ]
}

@test "RayCluster: stamps the head and every worker group's pod template" {
  evaluate "$R/raycluster-create-alice.json" "$(cat $S/kuberay.json)"
  allowed true
  [ "$(patch | jq -r '[.[].path] | join(" ")')" = "/spec/headGroupSpec/template/metadata /spec/workerGroupSpecs/0/template/metadata/annotations /spec/workerGroupSpecs/1/template/metadata" ]
  [ "$(patch | jq -r '.[2].value.annotations["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
}

@test "RayCluster: the operator's cluster for a RayJob is left alone (rule 4)" {
  evaluate "$R/raycluster-create-kuberay-operator.json" "$(cat $S/kuberay.json)"
  allowed true
  no_patch
}

@test "RayJob: stamps the cluster spec's templates and the submitter's" {
  evaluate "$R/rayjob-create-alice.json" "$(cat $S/kuberay.json)"
  allowed true
  [ "$(patch_ops)" -eq 4 ]
  [ "$(patch | jq -r '.[] | select(.path == "/spec/submitterPodTemplate/metadata") | .value.annotations["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
}

@test "RayService: stamps the templates under spec.rayClusterConfig" {
  evaluate "$R/rayservice-create-alice.json" "$(cat $S/kuberay.json)"
  allowed true
  [ "$(patch | jq -r '[.[].path | select(startswith("/spec/rayClusterConfig/"))] | length')" -eq 3 ]
}

@test "FlinkDeployment: creates spec.podTemplate with the stamp and stamps the task manager's template" {
  evaluate "$R/flinkdeployment-create-alice.json" "$(cat $S/flink-operator.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/podTemplate") | .value.metadata.annotations["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
  [ "$(patch | jq -r '.[] | select(.path == "/spec/taskManager/podTemplate/metadata") | .value.annotations["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
}

@test "FlinkDeployment: refuses a flinkConfiguration entry that sets the annotation (rule 13)" {
  evaluate "$R/flinkdeployment-create-bob-flinkconf.json" "$(cat $S/flink-operator.json)"
  rejected_with "the spec.flinkConfiguration entry kubernetes.jobmanager.annotations sets the yunikorn.apache.org/user.info annotation"
}

@test "PyTorchJob: stamps every replica role's template" {
  evaluate "$R/pytorchjob-create-alice.json" "$(cat $S/kubeflow-training.json)"
  allowed true
  [ "$(patch | jq -r '[.[].path] | join(" ")')" = "/spec/pytorchReplicaSpecs/Master/template/metadata /spec/pytorchReplicaSpecs/Worker/template/metadata" ]
}

@test "TFJob: replaces bob's forged value in one role and stamps the other" {
  evaluate "$R/tfjob-create-bob-forged.json" "$(cat $S/kubeflow-training.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/tfReplicaSpecs/Worker/template/metadata/annotations/yunikorn.apache.org~1user.info") | .value')" = "$BOB" ]
  [ "$(patch | jq -r '.[] | select(.path == "/spec/tfReplicaSpecs/PS/template/metadata") | .value.annotations["yunikorn.apache.org/user.info"]')" = "$BOB" ]
  [ "$(warnings | wc -l)" -eq 1 ]
}

@test "MPIJob: stamps the launcher's and the workers' templates" {
  evaluate "$R/mpijob-create-alice.json" "$(cat $S/kubeflow-training.json)"
  allowed true
  [ "$(patch_ops)" -eq 2 ]
}

@test "Workflow: creates spec.podMetadata with the stamp and stamps every template" {
  evaluate "$R/workflow-create-alice.json" "$(cat $S/argo-workflows.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/podMetadata") | .value.annotations["yunikorn.apache.org/user.info"]')" = "$ALICE" ]
  [ "$(patch_ops)" -eq 3 ]
}

@test "CronWorkflow: replaces bob's forged templateDefaults value under spec.workflowSpec" {
  evaluate "$R/cronworkflow-create-bob-forged.json" "$(cat $S/argo-workflows.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/workflowSpec/templateDefaults/metadata/annotations/yunikorn.apache.org~1user.info") | .value')" = "$BOB" ]
  [ "$(patch_ops)" -eq 4 ]
}

@test "WorkflowTemplate: refuses a template that names a user (guarded, rule 13)" {
  evaluate "$R/workflowtemplate-create-bob-forged.json" "$(cat $S/argo-workflows.json)"
  rejected_with "the spec.templates[1].metadata.annotations entry yunikorn.apache.org/user.info sets the yunikorn.apache.org/user.info annotation"
}

@test "Workflow: stamps the inline templates of steps and DAG tasks, replacing bob's forged values (rule 11)" {
  evaluate "$R/workflow-create-bob-inline.json" "$(cat $S/argo-workflows.json)"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/templates/0/steps/0/0/inline/metadata/annotations/yunikorn.apache.org~1user.info") | .value')" = "$BOB" ]
  [ "$(patch | jq -r '.[] | select(.path == "/spec/templates/1/dag/tasks/0/inline/metadata/annotations/yunikorn.apache.org~1user.info") | .value')" = "$BOB" ]
  [[ "$(warnings)" == *"replaced with the requester's identity in 2 maps"* ]]
  ! patch | grep -q carol
}

@test "Workflow: refuses a templated annotation key, in both modes and on an unchanged update (keys of a target map)" {
  for mode in replace reject; do
    evaluate "$R/workflow-create-bob-templated-key.json" "$(jq -c --arg m $mode '. + {"onUntrustedAnnotation":$m}' $S/argo-workflows.json)"
    rejected_with "the spec.podMetadata.annotations key {{workflow.parameters.k}} is not a valid annotation key"
  done
  edit workflow-create-bob-templated-key '.operation = "UPDATE" | .oldObject = .object'
  evaluate "$REQ" "$(cat $S/argo-workflows.json)"
  rejected_with "is not a valid annotation key"
}

@test "WorkflowTemplate: refuses any identity in maps that reach other users' pods, even the author's own (rule 13)" {
  evaluate "$R/workflowtemplate-create-alice-identity.json" "$(cat $S/argo-workflows.json)"
  rejected_with "the spec.podMetadata.annotations entry yunikorn.apache.org/user.info sets the yunikorn.apache.org/user.info annotation"
  edit workflowtemplate-create-alice-identity '.object.spec.podMetadata.annotations = {"{{workflow.parameters.k}}": "x"}'
  evaluate "$REQ" "$(cat $S/argo-workflows.json)"
  rejected_with "the spec.podMetadata.annotations entry {{workflow.parameters.k}} is a template key"
  edit workflowtemplate-create-alice-identity '.object.spec.templates[0].steps[0][0] = {"name":"x","inline":{"metadata":{"annotations":{"a":"yunikorn.apache.org/user.info"}}}} | del(.object.spec.podMetadata)'
  evaluate "$REQ" "$(cat $S/argo-workflows.json)"
  rejected_with "the spec.templates[0].steps[0][0].inline.metadata.annotations entry a sets"
}

@test "FlinkDeployment: refuses nested, listed and split forms of a configuration entry that sets the annotation (rule 13)" {
  evaluate "$R/flinkdeployment-create-bob-nested.json" "$(cat $S/flink-operator.json)"
  rejected_with "the spec.flinkConfiguration entry kubernetes.jobmanager.annotations.yunikorn.apache.org/user.info sets the yunikorn.apache.org/user.info annotation"
  forged='yunikorn.apache.org/user.info:{"user":"carol"}'
  for conf in '{"kubernetes.jobmanager":{"annotations":$f}}' '{"kubernetes.jobmanager.annotations":["a:b",$f]}' \
    '{"kubernetes.jobmanager.annotations":{"yunikorn.apache.org/user.info":"{}"}}'; do
    edit flinkdeployment-create-bob-flinkconf ".object.spec.flinkConfiguration = $conf" --arg f "$forged"
    evaluate "$REQ" "$(cat $S/flink-operator.json)"
    rejected_with "sets the yunikorn.apache.org/user.info annotation"
  done
}

@test "PyTorchJob: a map named by two paths is stamped once (overlapping paths)" {
  settings='{"customWorkloads":[{"apiGroup":"kubeflow.org","kind":"PyTorchJob","annotationPaths":["spec.pytorchReplicaSpecs{*}.template>metadata.annotations","spec.pytorchReplicaSpecs.Master.template>metadata.annotations"]}]}'
  edit pytorchjob-create-alice '.object.spec.pytorchReplicaSpecs.Master.template.metadata.annotations = {"yunikorn.apache.org/user.info": "{\"user\":\"carol\"}"} | .userInfo = {"username":"bob","groups":["qa","system:authenticated"]}'
  evaluate "$REQ" "$settings"
  allowed true
  [ "$(patch | jq -r '.[] | select(.path == "/spec/pytorchReplicaSpecs/Master/template/metadata/annotations/yunikorn.apache.org~1user.info") | .value')" = "$BOB" ]
  [ "$(patch | grep -o 'yunikorn.apache.org' | wc -l)" -eq 2 ]
}

@test "SparkApplication: refuses task groups in sparkConf that set the annotation on placeholders, escaped slash included (rule 15)" {
  edit sparkapplication-create-bob-sparkconf '.object.spec.sparkConf = {"spark.kubernetes.driver.annotation.yunikorn.apache.org/task-groups": "[{\"name\":\"tg\",\"minMember\":1,\"annotations\":{\"yunikorn.apache.org\\/user.info\":\"x\"}}]"}'
  evaluate "$REQ" "$(cat $S/spark-operator.json)"
  rejected_with "the yunikorn.apache.org/task-groups annotation sets the yunikorn.apache.org/user.info annotation on placeholder pods"
}

@test "a custom kind not declared in customWorkloads is accepted unchanged" {
  evaluate "$R/sparkapplication-create-bob-forged.json" "$(cat $S/kuberay.json)"
  allowed true
  no_patch
}

@test "refuses customWorkloads that break the path syntax, naming the entry and the path" {
  settings_error '{"customWorkloads":[{"apiGroup":"ray.io","kind":"RayCluster","annotationPaths":["spec.workerGroupSpecs>template[*].metadata.annotations"]}]}' \
    'customWorkloads[0].annotationPaths[0]: "spec.workerGroupSpecs>template[*].metadata.annotations": a wildcard may not follow ">"'
  settings_error '{"customWorkloads":[{"apiGroup":"apps","kind":"Deployment","annotationPaths":["spec.template>metadata.annotations"]}]}' \
    'customWorkloads[0]: apps Deployment is handled by the policy itself and may not be declared'
}

@test "every example's settings are valid" {
  for f in $S/*.json; do
    run "$KWCTL" run --request-path "$R/pod-create-alice.json" --settings-json "$(cat "$f")" "$POLICY"
    echo "$f: $output"
    [ "$status" -eq 0 ]
  done
}

@test "a trusted external that names the user in one map gets that user in every map (rule 11)" {
  edit workflow-create-alice '.userInfo = {"username":"airflow","groups":["system:authenticated"]}
    | .object.spec.podMetadata = {"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\"}"}}'
  evaluate "$REQ" "$(jq -c '. + {"bypassAuth":true,"externalUsers":["^airflow$"]}' $S/argo-workflows.json)"
  allowed true
  [ "$(stamped /spec/templates/0/metadata)" = '{"user":"alice"}' ]
  [ "$(patch | jq '[.[] | select(.value | tostring | contains("airflow"))] | length')" = 0 ]
}

@test "refuses an object that would be larger than 3 MiB once stamped (Cost)" {
  # 1,000 task groups, each stamped with a requester of 100 long group names: about 5 MB once stamped
  edit pod-create-bob-task-groups '.userInfo.groups = [range(100) | "group-\(.)-" + ("x" * 40)]
    | .object.metadata.annotations["yunikorn.apache.org/task-groups"] = ([range(1000) | {}] | tojson)'
  evaluate "$REQ"
  rejected_with "bytes once stamped (1001 annotation maps and task groups), more than the 3 MiB the API server accepts"
}

@test "refuses a Pod whose task groups are more than a 3 MiB answer can hold, before reading them all (Cost)" {
  # 100,000 empty task groups (300 KB): each stamped takes more than 50 bytes; the reading stops at the 62,915th
  edit pod-create-bob-task-groups '.object.metadata.annotations["yunikorn.apache.org/task-groups"] = ([range(100000) | {}] | tojson)'
  evaluate "$REQ"
  rejected_with "more than 62914 task groups, each stamped with at least 50 bytes), more than the 3 MiB the API server accepts"
}

@test "an UPDATE around many templates walks both objects together: unchanged pairs pass, a removed value is restored (Cost, rule 12)" {
  # 20,000 templates in each object, the entrypoint changed; bob removed the value template 3 carried
  edit workflow-create-alice '.operation = "UPDATE" | .userInfo.username = "bob"
    | .object.spec.templates = [range(20000) | {}]
    | .oldObject = (.object | .spec.entrypoint = "before"
      | .spec.templates[3] = {"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\"}"}}})'
  evaluate "$REQ" "$(cat $S/argo-workflows.json)"
  allowed true
  [ "$(patch_ops)" = 1 ]
  [ "$(stamped /spec/templates/3/metadata)" = '{"user":"alice"}' ]
}

@test "refuses a CREATE naming more maps than a 3 MiB answer can hold, before reading them all (Cost)" {
  # 70,000 empty templates (210 KB): each stamped takes more than 50 bytes; the walk stops at the 62,915th
  edit workflow-create-alice '.object.spec.templates = [range(70000) | {}]'
  evaluate "$REQ" "$(cat $S/argo-workflows.json)"
  rejected_with "more than 62914 annotation maps, each stamped with at least 50 bytes), more than the 3 MiB the API server accepts"
}
