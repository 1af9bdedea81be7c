package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost/guesttest"
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
	wasm := guesttest.Guest(t, "internal/wapchost/testdata/exit", "-ldflags=-X main.code=3")
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
