# Helpers shared by e2e.bats and e2e-attacks.bats (`load e2e-helpers`): run the policy like `kwctl run` and
# read the one-line AdmissionResponse with jq.
# The constants are used by the .bats files that load this one, and bats' `run` sets output, stderr and
# status: shellcheck, reading this file alone, sees neither.
# shellcheck shell=bash disable=SC2034,SC2154

KWCTL="${KWCTL:-kwctl}"
POLICY="${POLICY:-policy.wasm}"
# The project's host fails the run (--strict) on a log entry policy-server would refuse, and hands the
# policy the request as policy-server does (its default --payload policy-server). kwctl has neither flag.
# OWN_HOST: the project's host runs the policy, and prints the policy's log lines as the policy sent them
# (kwctl prints them in a format of its own).
OWN_HOST=false
HOST_FLAGS=()
# KWCTL_FLAGS: more flags for the real kwctl (--sigstore-trust-config FILE, to run without network).
if [ "$(basename "$KWCTL")" = kwhost ]; then OWN_HOST=true HOST_FLAGS=(--strict); else read -ra HOST_FLAGS <<< "${KWCTL_FLAGS:-}"; fi
R=testdata/requests
ANN='yunikorn.apache.org/user.info'
ALICE='{"user":"alice","groups":["devops","system:authenticated"]}'
BOB='{"user":"bob","groups":["qa","system:authenticated"]}'
EXTERNAL='{"bypassAuth":true,"externalUsers":["^airflow$"],"externalGroups":["^spark-submitters$"]}'
REJECT='{"onUntrustedAnnotation":"reject"}'

# The suites live at the repository's root, where the fixtures and policy.wasm are named from.
setup() {
  cd "$BATS_TEST_DIRNAME" || return 1
  REQ="$BATS_TEST_TMPDIR/request.json"
}

# evaluate REQUEST [SETTINGS]: runs the policy; stdout (the response) in $output, logs in $stderr.
evaluate() {
  local settings="${2:-}"
  [ -n "$settings" ] || settings='{}'
  run --separate-stderr "$KWCTL" run "${HOST_FLAGS[@]}" --request-path "$1" --settings-json "$settings" "$POLICY"
  echo "response: ${output:0:2000}"
  echo "logs: ${stderr:0:2000}"
  [ "$status" -eq 0 ]
}

# edit FIXTURE JQ-FILTER [ARGS...]: writes an edited copy of a fixture to $REQ.
edit() {
  local fixture="$1" filter="$2"
  shift 2
  jq "$@" "$filter" "$R/$fixture.json" >"$REQ"
}

allowed() { [ "$(jq -r .allowed <<<"$output")" = "$1" ]; }
message() { jq -r '.status.message // ""' <<<"$output"; }
code() { jq -r '.status.code // ""' <<<"$output"; }
warnings() { jq -r '(.warnings // [])[]' <<<"$output"; }
patch() { jq -r '.patch // empty' <<<"$output" | base64 -d; }
no_patch() { [ "$(jq -r '.patch // "none"' <<<"$output")" = none ]; }
patch_ops() { patch | jq length; }

# stamped POINTER: the annotation value the patch writes into the metadata at POINTER (e.g. /metadata),
# whether the patch adds the entry, the annotations map or the metadata object.
stamped() {
  patch | jq -r --arg md "$1" '.[] |
    if .path == $md + "/annotations/yunikorn.apache.org~1user.info" then .value
    elif .path == $md + "/annotations" then .value["yunikorn.apache.org/user.info"]
    elif .path == $md then .value.annotations["yunikorn.apache.org/user.info"]
    else empty end'
}

# rejected_with TEXT: refused with code 400 and a message containing TEXT.
rejected_with() {
  allowed false
  [ "$(code)" = 400 ]
  [[ "$(message)" == *"$1"* ]]
}

# raw_payload: hand the policy the request exactly as written (kwhost --payload raw). policy-server and
# kwctl read the request into a typed struct first (a duplicate key collapses to the last one, escapes are
# decoded), so only the project's host can show what the policy does with such bytes.
raw_payload() {
  [[ "$KWCTL" == *kwhost ]] || skip "kwctl re-encodes the request: escaped and duplicate keys do not reach the policy as written"
  HOST_FLAGS+=(--payload raw)
}
