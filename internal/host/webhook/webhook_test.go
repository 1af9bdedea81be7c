package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/webhook"
)

// The policy's own requests: what it decides belongs to its tests; these check what the webhook
// makes of the decision.
var (
	podAlice     = filepath.Join(guesttest.RepoRoot(), "testdata", "requests", "pod-create-alice.json")
	podBobForged = filepath.Join(guesttest.RepoRoot(), "testdata", "requests", "pod-create-bob-forged.json")
)

func loadHost(t *testing.T, wasm []byte) *wapchost.Host {
	t.Helper()
	ctx := context.Background()
	h, err := wapchost.Load(ctx, wasm, wapchost.Options{Interruptible: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	return h
}

// server starts the handler behind TLS, as the API server reaches it.
func server(t *testing.T, ev kwctl.Evaluator, opts webhook.Options) *httptest.Server {
	t.Helper()
	h, err := webhook.New(context.Background(), ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// review wraps a bare AdmissionRequest file into the AdmissionReview the API server sends.
func review(t *testing.T, path string) []byte {
	t.Helper()
	req, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + string(req) + `}`)
}

func post(t *testing.T, ts *httptest.Server, body []byte) (int, []byte) {
	t.Helper()
	resp, err := ts.Client().Post(ts.URL+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// answer is the AdmissionReview the webhook sends back.
type answer struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Response   json.RawMessage `json:"response"`
}

func decode(t *testing.T, body []byte) (answer, *kwctl.Response) {
	t.Helper()
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var r kwctl.Response
	if err := json.Unmarshal(a.Response, &r); err != nil {
		t.Fatalf("%v: %s", err, a.Response)
	}
	return a, &r
}

// kwctlAnswer is what `kwctl run` prints for the same request and settings: the webhook must send
// exactly that inside its AdmissionReview.
func kwctlAnswer(t *testing.T, ev kwctl.Evaluator, path, settings string) string {
	t.Helper()
	input, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := kwctl.Run(context.Background(), ev, input, json.RawMessage(settings), kwctl.PayloadRaw)
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.JSON())
}

func TestNew_RefusesInvalidSettingsLikePolicyServer(t *testing.T) {
	host := loadHost(t, guesttest.Guest(t, "internal/host/kwctl/testdata/scripted"))
	_, err := webhook.New(context.Background(), host, webhook.Options{Settings: json.RawMessage(`{"invalid":"queue is required"}`)})
	var se *kwctl.SettingsError
	if !errors.As(err, &se) || err.Error() != "Provided settings are not valid: queue is required" {
		t.Errorf("error = %v, want a *kwctl.SettingsError %q", err, "Provided settings are not valid: queue is required")
	}
}

func TestNew_RefusesTheRealPolicysInvalidSettings(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	_, err := webhook.New(context.Background(), host, webhook.Options{Settings: json.RawMessage(`{"onUntrustedAnnotation":"ignore"}`)})
	if err == nil || !strings.HasPrefix(err.Error(), "Provided settings are not valid: ") {
		t.Errorf("error = %v, want Provided settings are not valid: ...", err)
	}
}

func TestServe_MutationIsAJSONPatchWithTheRequestsUID(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	ts := server(t, host, webhook.Options{})
	code, body := post(t, ts, review(t, podAlice))
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	a, r := decode(t, body)
	if a.APIVersion != "admission.k8s.io/v1" || a.Kind != "AdmissionReview" {
		t.Errorf("apiVersion %q kind %q, want admission.k8s.io/v1 AdmissionReview", a.APIVersion, a.Kind)
	}
	if r.UID != "7f3c0001-1b2a-4c5d-8e9f-0a1b2c3d4e5f" || !r.Allowed || r.PatchType != "JSONPatch" {
		t.Errorf("uid %q allowed %v patchType %q, want the request's uid, allowed, JSONPatch", r.UID, r.Allowed, r.PatchType)
	}
	ops, err := r.PatchOps()
	if err != nil || len(ops) != 1 || ops[0].Op != "add" || !strings.Contains(string(ops[0].Value), `"yunikorn.apache.org/user.info":"{\"user\":\"alice\"`) {
		t.Errorf("patch %s (%v), want one add of the annotation", r.Patch, err)
	}
	if diff := cmp.Diff(kwctlAnswer(t, host, podAlice, "{}"), string(a.Response)); diff != "" {
		t.Errorf("response differs from kwctl's (-kwctl +webhook):\n%s", diff)
	}
}

// Served as policy-server serves a policy with mutating: false, a stamp is a rejection in policy-server's
// words (no code, no patch, the warnings kept), and an answer without a patch passes as it is.
func TestServe_NoMutationsTurnsAPatchIntoARejection(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	ts := server(t, host, webhook.Options{NoMutations: true, PolicyID: "clusterwide-guard"})
	_, body := post(t, ts, review(t, podBobForged))
	a, r := decode(t, body)
	want := "Request rejected by policy clusterwide-guard. The policy attempted to mutate the request, but it is currently configured to not allow mutations."
	if r.Allowed || r.Patch != nil || r.PatchType != "" || r.Status == nil || r.Status.Message == nil || *r.Status.Message != want || r.Status.Code != nil {
		t.Fatalf("want a rejection with policy-server's message, no code and no patch, got %s", a.Response)
	}
	if len(r.Warnings) == 0 {
		t.Errorf("the policy's warning was dropped: %s", a.Response)
	}
	// The request as stored after the policy stamped it: nothing to mutate, accepted.
	var req map[string]any
	if err := json.Unmarshal(review(t, podAlice), &req); err != nil {
		t.Fatal(err)
	}
	_, stamped := post(t, server(t, host, webhook.Options{}), review(t, podAlice))
	_, first := decode(t, stamped)
	ops, err := first.PatchOps()
	if err != nil || len(ops) != 1 {
		t.Fatalf("alice's pod: want one patch operation, got %v (%v)", ops, err)
	}
	object := req["request"].(map[string]any)["object"].(map[string]any)
	metadata := object["metadata"].(map[string]any)
	var value map[string]string
	if err := json.Unmarshal(ops[0].Value, &value); err != nil {
		t.Fatalf("patch value %s: %v", ops[0].Value, err)
	}
	metadata["annotations"] = value
	stored, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	_, body = post(t, ts, stored)
	if a, r := decode(t, body); !r.Allowed || r.Patch != nil || r.Status != nil {
		t.Errorf("alice's stamped pod: want accepted as it is, got %s", a.Response)
	}
}

func TestServe_RejectionCarriesTheStatus(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	settings := `{"onUntrustedAnnotation":"reject"}`
	ts := server(t, host, webhook.Options{Settings: json.RawMessage(settings)})
	_, body := post(t, ts, review(t, podBobForged))
	a, r := decode(t, body)
	if r.Allowed || r.Status == nil || r.Status.Message == nil || r.Status.Code == nil || r.Patch != nil {
		t.Fatalf("want a rejection with message and code and no patch, got %s", a.Response)
	}
	if !strings.Contains(*r.Status.Message, "is not allowed to set the yunikorn.apache.org/user.info annotation") {
		t.Errorf("message %q", *r.Status.Message)
	}
	if diff := cmp.Diff(kwctlAnswer(t, host, podBobForged, settings), string(a.Response)); diff != "" {
		t.Errorf("response differs from kwctl's (-kwctl +webhook):\n%s", diff)
	}
}

func TestServe_WarningsPassThrough(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	ts := server(t, host, webhook.Options{})
	_, body := post(t, ts, review(t, podBobForged))
	a, r := decode(t, body)
	if !r.Allowed || r.PatchType != "JSONPatch" || len(r.Warnings) == 0 {
		t.Fatalf("want the forged value replaced with a warning, got %s", a.Response)
	}
	if diff := cmp.Diff(kwctlAnswer(t, host, podBobForged, "{}"), string(a.Response)); diff != "" {
		t.Errorf("response differs from kwctl's (-kwctl +webhook):\n%s", diff)
	}

	// Whatever the guest says, verbatim, in the AdmissionResponse's warnings.
	scripted := loadHost(t, guesttest.Guest(t, "internal/host/kwctl/testdata/scripted"))
	ts = server(t, scripted, webhook.Options{Settings: json.RawMessage(`{"response":{"accepted":true,"warnings":["first <one>","second"]}}`)})
	_, body = post(t, ts, review(t, podAlice))
	if _, r := decode(t, body); !cmp.Equal(r.Warnings, []string{"first <one>", "second"}) {
		t.Errorf("warnings %q", r.Warnings)
	}
}

func TestServe_ConcurrentRequestsEachGetTheirOwnAnswer(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	ts := server(t, host, webhook.Options{MaxInFlight: 3})
	template := string(review(t, podAlice))
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid := fmt.Sprintf("concurrent-%02d", i)
			body := strings.Replace(template, "7f3c0001-1b2a-4c5d-8e9f-0a1b2c3d4e5f", uid, 1)
			resp, err := ts.Client().Post(ts.URL, "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var a struct{ Response kwctl.Response }
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				errs <- err
				return
			}
			if a.Response.UID != uid || !a.Response.Allowed || a.Response.PatchType != "JSONPatch" {
				errs <- fmt.Errorf("request %s answered %+v", uid, a.Response)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// What policy-server refuses before any policy runs gets its status and its words, in its JSON body.
func TestServe_RefusesWhatPolicyServerRefusesBeforeThePolicyRuns(t *testing.T) {
	host := loadHost(t, guesttest.Guest(t, "internal/host/kwctl/testdata/scripted"))
	ts := server(t, host, webhook.Options{MaxBodyBytes: 4096})
	const (
		syntax = "Failed to parse the request body as JSON: "
		typed  = "Failed to deserialize the JSON body into the target type: "
		head   = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":`
		ids    = `"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"}`
	)
	request := func(members string) string { return head + `{` + ids + members + `}}` }
	// The review is the first level, the request the second: 127 levels parse, 128 do not.
	nested := func(levels int) string {
		return request(`,"operation":"CREATE","userInfo":{},"object":` + strings.Repeat("[", levels-2) + strings.Repeat("]", levels-2))
	}
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
		message                 string
	}{
		{"not JSON", "application/json", `{"apiVersion":`, 400, syntax + "EOF while parsing a value"},
		{"nested 127 deep", "application/json", nested(127), 200, ""},
		{"nested 128 deep", "application/json", nested(128), 400, syntax + "recursion limit exceeded"},
		{"lone surrogate", "application/json", request(`,"operation":"CREATE","userInfo":{},"object":{"a":"\ud800"}`), 400, syntax + "unexpected end of hex escape"},
		{"lone trailing surrogate", "application/json", request(`,"operation":"CREATE","userInfo":{"username":"\udc00"}`), 400, syntax + "lone leading surrogate in hex escape"},
		{"not a review", "application/json", `[1,2]`, 422, typed + "invalid type: an array, expected struct AdmissionReviewRequest"},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 422, typed + "missing field `request`"},
		{"two requests", "application/json", `{"request":{},"request":{}}`, 422, typed + "duplicate field `request`"},
		{"no userInfo", "application/json", request(`,"operation":"CREATE"`), 422, typed + "request: missing field `userInfo`"},
		{"no userInfo on DELETE", "application/json", request(`,"operation":"DELETE"`), 422, typed + "request: missing field `userInfo`"},
		{"userInfo null", "application/json", request(`,"operation":"CREATE","userInfo":null`), 422, typed + "request.userInfo: invalid type: null"},
		{"groups not strings", "application/json", request(`,"operation":"CREATE","userInfo":{"groups":["a",1]}`), 422, typed + "request.userInfo.groups[1]: invalid type"},
		{"no uid", "application/json", head + `{"kind":{}}}`, 422, typed + "request: missing field `uid`"},
		{"two operations", "application/json", request(`,"operation":"CREATE","userInfo":{},"operation":"DELETE"`), 422, typed + "request: duplicate field `operation`"},
		{"two kinds in kind", "application/json", strings.Replace(request(`,"operation":"CREATE","userInfo":{}`), `"kind":"Pod"`, `"kind":"Pod","kind":"Job"`, 1), 422, typed + "request.kind: duplicate field `kind`"},
		{"too large", "application/json", request(`,"x":"` + strings.Repeat("a", 5000) + `"`), 413, "Failed to buffer the request body: length limit exceeded"},
		{"not JSON content", "text/plain", `{}`, 415, "Expected request with `Content-Type: application/json`"},
		{"no content type", "", `{}`, 415, "Expected request with `Content-Type: application/json`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/validate", strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("HTTP %d %s, want %d %q", resp.StatusCode, body, tc.code, tc.message)
			}
			if tc.code == http.StatusOK {
				return
			}
			var answer struct {
				Message string `json:"message"`
				Status  int    `json:"status"`
			}
			if err := json.Unmarshal(body, &answer); err != nil || answer.Status != tc.code || !strings.HasPrefix(answer.Message, tc.message) {
				t.Errorf("body %s (%v), want policy-server's {\"message\": %q..., \"status\": %d}", body, err, tc.message, tc.code)
			}
		})
	}
}

// The stand-in's own refusals, where policy-server would read on: stricter, in plain text.
func TestServe_TheStandInsOwnRefusals(t *testing.T) {
	host := loadHost(t, guesttest.Guest(t, "internal/host/kwctl/testdata/scripted"))
	ts := server(t, host, webhook.Options{})
	request, err := os.ReadFile(podAlice)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, body string
		code               int
		message            string
	}{
		{"v1beta1", http.MethodPost, `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":` + string(request) + `}`, 400, `got apiVersion "admission.k8s.io/v1beta1"`},
		{"no apiVersion", http.MethodPost, `{"request":` + string(request) + `}`, 400, `got apiVersion ""`},
		{"GET", http.MethodGet, ``, 405, "must be POSTed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.URL+"/validate", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.message) {
				t.Errorf("HTTP %d %q, want %d containing %q", resp.StatusCode, body, tc.code, tc.message)
			}
		})
	}
}

func TestServe_LogsOneLinePerRequestAndRecordsTheUserInfoAsSent(t *testing.T) {
	host := loadHost(t, guesttest.Policy(t))
	log, record := wapchost.NewLockedBuffer(), wapchost.NewLockedBuffer()
	ts := server(t, host, webhook.Options{Log: log, Record: record})
	post(t, ts, review(t, podAlice))
	post(t, ts, []byte(`nonsense`))

	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 log lines, got %q", lines)
	}
	if want := `CREATE v1 Pod team-a/analytics-7d9f8b6c5-x2x7k by "alice" ["devops" "system:authenticated"] -> allowed, patched (1 op) in `; !strings.Contains(lines[0], want) {
		t.Errorf("log line %q\nwant it to contain %q", lines[0], want)
	}
	if !strings.Contains(lines[1], "-> HTTP 400: Failed to parse the request body as JSON: ") {
		t.Errorf("log line %q", lines[1])
	}

	var entry struct {
		UID, Operation, Kind, Namespace, Name string
		UserInfo                              json.RawMessage
		Allowed                               bool
		Patch                                 []kwctl.PatchOp
	}
	if err := json.Unmarshal(record.Bytes(), &entry); err != nil {
		t.Fatalf("%v: %s", err, record.String())
	}
	var req struct{ UserInfo json.RawMessage }
	raw, _ := os.ReadFile(podAlice)
	_ = json.Unmarshal(raw, &req)
	var want bytes.Buffer
	_ = json.Compact(&want, req.UserInfo)
	if string(entry.UserInfo) != want.String() || entry.Kind != "Pod" || entry.Operation != "CREATE" || !entry.Allowed || len(entry.Patch) != 1 {
		t.Errorf("record %s\nwant userInfo %s", record.String(), want.String())
	}
}

func TestServe_HealthzAnswersOK(t *testing.T) {
	ts := server(t, loadHost(t, guesttest.Guest(t, "internal/host/kwctl/testdata/scripted")), webhook.Options{})
	resp, err := ts.Client().Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP %d", resp.StatusCode)
	}
}

// startFailing starts fine for validate_settings, then fails every instance's start-up, as a module
// whose _start traps would in policy-server.
type startFailing struct{}

func (startFailing) Call(_ context.Context, op string, _ []byte) ([]byte, error) {
	if op == "validate_settings" {
		return []byte(`{"valid":true}`), nil
	}
	return nil, &wapchost.StartError{Phase: "_start", Err: errors.New("wasm error: unreachable")}
}

func TestServe_StartUpFailureIsAnHTTP500WithoutAReview(t *testing.T) {
	ts := server(t, startFailing{}, webhook.Options{})
	code, body := post(t, ts, review(t, "../kwctl/testdata/deployment-create.json"))
	if code != http.StatusInternalServerError || bytes.Contains(body, []byte("AdmissionReview")) ||
		!bytes.Contains(body, []byte("_start")) {
		t.Errorf("HTTP %d %q: want a 500 with no AdmissionReview, so that the webhook's failurePolicy decides", code, body)
	}
}
