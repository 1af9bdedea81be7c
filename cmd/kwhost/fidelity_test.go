package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// The host answers each failure the way policy-server 1.31 does (README "Development": the local host).
// The fidelity guest misbehaves as its settings tell it to.

// fidelityGuest builds the guest (guesttest caches the build) and returns the module's path.
func fidelityGuest(t *testing.T) string {
	t.Helper()
	return guestFile(t, "cmd/kwhost/testdata/fidelity")
}

// runHost runs `kwhost run` on the deployment fixture with extra flags.
func runHost(t *testing.T, module string, flags ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args := append([]string{"run", "--request-path", deployment}, flags...)
	code = kwhost(append(args, module), nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

func response(t *testing.T, stdout string) kwctl.Response {
	t.Helper()
	var r kwctl.Response
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one AdmissionResponse: %v\n%s", err, stdout)
	}
	return r
}

func TestFidelity_WarnLevelFailsUnderStrict(t *testing.T) {
	module := fidelityGuest(t)
	code, stdout, stderr := runHost(t, module, "--strict", "--settings-json", `{"mode":"warn"}`)
	if code != exitStrict || !strings.Contains(stderr, `unknown level "warn"`) || !strings.Contains(stderr, "ERROR (--strict)") {
		t.Errorf("exit %d, stderr %q: want exit %d and a loud error naming the level", code, stderr, exitStrict)
	}
	if !response(t, stdout).Allowed {
		t.Errorf("the answer is still printed: %s", stdout)
	}
	// Without --strict: the same complaint, as a warning, and exit 0 (kwctl's exit code).
	if code, _, stderr := runHost(t, module, "--settings-json", `{"mode":"warn"}`); code != kwctl.ExitOK || !strings.Contains(stderr, "WARNING") {
		t.Errorf("without --strict: exit %d, stderr %q", code, stderr)
	}
	// policy-server's own spelling passes.
	if code, _, stderr := runHost(t, module, "--strict", "--settings-json", `{"mode":"warning"}`); code != kwctl.ExitOK || strings.Contains(stderr, "would refuse") {
		t.Errorf("level warning: exit %d, stderr %q", code, stderr)
	}
}

func TestFidelity_TrapIsA500GuestCallFailure(t *testing.T) {
	code, stdout, _ := runHost(t, fidelityGuest(t), "--settings-json", `{"mode":"panic"}`)
	r := response(t, stdout)
	if code != kwctl.ExitOK || r.Allowed || r.Status == nil || *r.Status.Code != 500 ||
		!strings.HasPrefix(*r.Status.Message, "internal server error: Guest call failure:") {
		t.Errorf("exit %d, response %s: want allowed false, code 500, 'internal server error: Guest call failure:'", code, stdout)
	}
}

func TestFidelity_TimeoutIsPolicyServersAnswer(t *testing.T) {
	code, stdout, _ := runHost(t, fidelityGuest(t), "--policy-timeout", "300ms", "--settings-json", `{"mode":"spin"}`)
	r := response(t, stdout)
	if code != kwctl.ExitOK || r.Allowed || r.Status == nil || *r.Status.Code != 500 || *r.Status.Message != kwctl.InterruptedMessage {
		t.Errorf("exit %d, response %s: want code 500 %q", code, stdout, kwctl.InterruptedMessage)
	}
}

func TestFidelity_TheAnswerIsReadAsPolicyServerReadsIt(t *testing.T) {
	// encoding/json matches member names case-insensitively and would read "Accepted" as accepted.
	_, stdout, _ := runHost(t, fidelityGuest(t), "--settings-json", `{"mode":"answer-case"}`)
	if r := response(t, stdout); !r.Allowed {
		t.Errorf("response %s: \"Accepted\" is an unknown member for serde, accepted stays true", stdout)
	}
	// encoding/json keeps the last of two members; serde refuses the answer.
	_, stdout, _ = runHost(t, fidelityGuest(t), "--settings-json", `{"mode":"answer-twice"}`)
	if r := response(t, stdout); r.Allowed || r.Status == nil || *r.Status.Code != 500 ||
		!strings.Contains(*r.Status.Message, "duplicate field `accepted`") {
		t.Errorf("response %s: want a 500 for a member given twice", stdout)
	}
}

func TestFidelity_StartUpFailureExitsNonZero(t *testing.T) {
	wasm := guesttest.Guest(t, "internal/host/wapchost/testdata/exit", "-ldflags=-X main.code=3")
	module := filepath.Join(t.TempDir(), "exit.wasm")
	if err := os.WriteFile(module, wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runHost(t, module)
	if code != kwctl.ExitStart || stdout != "" || !strings.Contains(stderr, "_start") {
		t.Errorf("exit %d, stdout %q, stderr %q: want exit %d, no answer, and the failing phase named", code, stdout, stderr, kwctl.ExitStart)
	}
}

func TestFidelity_PolicyServerPayloadIsTheDefault(t *testing.T) {
	module := fidelityGuest(t)
	_, stdout, _ := runHost(t, module, "--settings-json", `{"mode":"echo","b":1,"a":null}`)
	got := *response(t, stdout).Status.Message
	want := `"settings":{"a":null,"b":1,"mode":"echo"}}`
	if !strings.HasPrefix(got, `{"request":{"dryRun":false,"kind":{"group":"apps","kind":"Deployment","version":"v1"},"name":`) || !strings.HasSuffix(got, want) {
		t.Errorf("payload %s: want policy-server's form (sorted keys, compact)", got)
	}
	_, stdout, _ = runHost(t, module, "--payload", "raw", "--settings-json", `{"mode":"echo"}`)
	raw, _ := os.ReadFile(deployment)
	if got := *response(t, stdout).Status.Message; got != `{"request":`+string(bytes.TrimSpace(raw))+`,"settings":{"mode":"echo"}}` {
		t.Errorf("--payload raw: the request is not as written: %.200s", got)
	}
}

func TestFidelity_ModuleURIs(t *testing.T) {
	module := fidelityGuest(t)
	if code, stdout, stderr := runHost(t, "file://"+module); code != kwctl.ExitOK || !response(t, stdout).Allowed {
		t.Errorf("file:// URI: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr := runHost(t, "registry://ghcr.io/example/policy:v1")
	if code != kwctl.ExitUsage || !strings.Contains(stderr, "kwctl pull") {
		t.Errorf("registry:// URI: exit %d, stderr %q: want exit %d and a pointer to kwctl pull", code, stderr, kwctl.ExitUsage)
	}
}

// policy-server loads only a module `kwctl annotate` has written; kwctl run takes both, and so does run.
func TestFidelity_ServeRefusesAModuleWithoutKubewardensProtocolVersion(t *testing.T) {
	plain := fidelityGuest(t)
	args := func(module string, extra ...string) []string {
		return append([]string{"serve", "--policy", module, "--cert-file", "unused.crt", "--key-file", "unused.key"}, extra...)
	}
	for name, module := range map[string]string{
		"no metadata":         plain,
		"no protocol version": withMetadata(t, plain, `{"rules":[],"mutating":true}`),
	} {
		got := runKwhost("", args(module)...)
		if got.code != kwctl.ExitStart || !strings.Contains(got.stderr, kwctl.ErrMissingProtocolVersion.Error()) {
			t.Errorf("%s: exit %d, stderr %q: want exit %d and policy-server's words", name, got.code, got.stderr, kwctl.ExitStart)
		}
	}
	// Past the module, serve stops at the certificate: the module was accepted.
	for name, a := range map[string][]string{
		"annotated":           args(annotated(t, plain)),
		"--allow-unannotated": args(plain, "--allow-unannotated"),
	} {
		if got := runKwhost("", a...); got.code != kwctl.ExitUsage || !strings.Contains(got.stderr, "cannot load the serving certificate") {
			t.Errorf("%s: exit %d, stderr %q: want the module accepted", name, got.code, got.stderr)
		}
	}
	if code, stdout, stderr := runHost(t, plain); code != kwctl.ExitOK || !response(t, stdout).Allowed {
		t.Errorf("run of the plain module: exit %d, stderr %q", code, stderr)
	}
}

// fidelityReview is an AdmissionReview for the fidelity guest with the request's members after uid,
// kind and resource.
func fidelityReview(members string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		members + `}}`
}

// What policy-server answers before the policy runs (measured with policy-server 1.36.0-beta.1, README
// "Development"): serve gives the same status, and policy-server's message in its JSON body.
func TestFidelity_ServeAnswersWhatPolicyServerAnswersBeforeThePolicy(t *testing.T) {
	h := startServe(t, "--policy", annotated(t, fidelityGuest(t)))
	for _, tc := range []struct {
		name, body string
		code       int
		message    string
	}{
		{"no userInfo", fidelityReview(`"operation":"CREATE","object":{}`), 422,
			"Failed to deserialize the JSON body into the target type: request: missing field `userInfo`"},
		{"nested deeper than 128", fidelityReview(`"operation":"CREATE","userInfo":{},"object":` + strings.Repeat("[", 126) + strings.Repeat("]", 126)), 400,
			"Failed to parse the request body as JSON: recursion limit exceeded"},
		{"lone surrogate", fidelityReview(`"operation":"CREATE","userInfo":{"username":"\udc00"}`), 400,
			"Failed to parse the request body as JSON: lone leading surrogate in hex escape"},
		{"duplicate operation", fidelityReview(`"operation":"CREATE","userInfo":{},"operation":"DELETE"`), 422,
			"Failed to deserialize the JSON body into the target type: request: duplicate field `operation`"},
	} {
		code, body := h.post(t, tc.body)
		var answer struct {
			Message string `json:"message"`
			Status  int    `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &answer); code != tc.code || err != nil || answer.Status != tc.code || !strings.HasPrefix(answer.Message, tc.message) {
			t.Errorf("%s: HTTP %d %s, want %d {\"message\":%q...}", tc.name, code, body, tc.code, tc.message)
		}
	}
}

// Inside userInfo (k8s-openapi's UserInfo) and object (a serde_json map), policy-server keeps the last of
// duplicate members, silently: the policy sees one, re-serialised.
func TestFidelity_ServeHandsThePolicyTheLastOfDuplicateMembers(t *testing.T) {
	h := startServe(t, "--policy", annotated(t, fidelityGuest(t)), "--settings-json", `{"mode":"echo"}`)
	code, body := h.post(t, fidelityReview(`"operation":"CREATE",`+
		`"userInfo":{"username":"mallory","groups":["admins"],"username":"alice"},`+
		`"object":{"metadata":{"name":"p","annotations":{"a":"1","a":"2"}},"metadata":{"name":"q"}}`))
	var answer struct {
		Response kwctl.Response `json:"response"`
	}
	if err := json.Unmarshal([]byte(body), &answer); code != http.StatusOK || err != nil || answer.Response.Status == nil {
		t.Fatalf("HTTP %d %s (%v)", code, body, err)
	}
	want := `"object":{"metadata":{"name":"q"}},"operation":"CREATE",` +
		`"resource":{"group":"","resource":"pods","version":"v1"},"uid":"u1","userInfo":{"groups":["admins"],"username":"alice"}}`
	if got := *answer.Response.Status.Message; !strings.Contains(got, want) {
		t.Errorf("the policy saw %s\nwant it to contain %s", got, want)
	}
}
