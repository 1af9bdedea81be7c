package policy

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// response is the validate answer as the host reads it.
type response struct {
	Accepted      bool            `json:"accepted"`
	Message       string          `json:"message"`
	Code          int             `json:"code"`
	MutatedObject json.RawMessage `json:"mutated_object"`
	Warnings      []string        `json:"warnings"`
}

const (
	aliceValue = `{"user":"alice","groups":["devops","system:authenticated"]}`
	bobValue   = `{"user":"bob","groups":["qa","system:authenticated"]}`
)

// fixture reads testdata/requests/<name>.json as a generic map, for tests to edit.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "requests", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

// testdataFile is a file of testdata/<dir>: its name without ".json", and its bytes.
type testdataFile struct {
	name string
	data []byte
}

// testdataFiles reads every JSON file of testdata/<dir>, in name order; there must be one at least.
func testdataFiles(tb testing.TB, dir string) []testdataFile {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", dir, "*.json"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no files in testdata/%s: %v", dir, err)
	}
	files := make([]testdataFile, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, testdataFile{name: strings.TrimSuffix(filepath.Base(p), ".json"), data: data})
	}
	return files
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// evaluateRaw runs Validate on a raw payload and returns the response and the log lines.
func evaluateRaw(t *testing.T, payload string) (response, string) {
	t.Helper()
	var logs bytes.Buffer
	out := validate([]byte(payload), NewLogger(&logs))
	checkAnswerOverPayload(t, payload, out)
	var resp response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, out)
	}
	checkLogLines(t, logs.String())
	for _, w := range resp.Warnings {
		if len(w) > maxWarningLength {
			t.Errorf("warning of %d characters (at most %d, policy-evaluator's guidance): %s", len(w), maxWarningLength, w)
		}
	}
	if !resp.Accepted && resp.Code != 400 {
		t.Fatalf("a rejection must carry code 400, got %d: %s", resp.Code, out)
	}
	if resp.Accepted && (resp.Message != "" || resp.Code != 0) {
		t.Fatalf("an acceptance carries no message or code: %s", out)
	}
	return resp, logs.String()
}

// maxWarningLength is policy-evaluator's guidance for an admission warning.
const maxWarningLength = 120

// checkLogLines fails t on a log line policy-server would refuse: one JSON object per line with a level
// it knows (it refuses onelog's default "warn") and a string message.
func checkLogLines(t *testing.T, logs string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		var entry struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("log line is not a JSON object: %v: %s", err, line)
			continue
		}
		switch entry.Level {
		case "trace", "debug", "info", "warning", "error":
		default:
			t.Errorf("log level %q is not one policy-server accepts (trace, debug, info, warning, error): %s", entry.Level, line)
		}
		if entry.Message == "" {
			t.Errorf("log line without a message: %s", line)
		}
	}
}

// evaluateReq runs Validate on an AdmissionRequest with settings (a JSON object text, "" for {}).
func evaluateReq(t *testing.T, req map[string]any, settings string) (response, string) {
	t.Helper()
	if settings == "" {
		settings = "{}"
	}
	return evaluateRaw(t, `{"request":`+mustJSON(t, req)+`,"settings":`+settings+`}`)
}

// namedUser is a requester (a userInfo) with the name of its subtest.
type namedUser struct {
	name string
	user map[string]any
}

// path walks a generic JSON value; missing steps give nil.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k] // nil when v is not an object: a nil map reads as empty
	}
	return v
}

// templatePath is where each kind keeps the target metadata, read from the table of kinds.
func templatePath(kind string) []string {
	for _, k := range Kinds() {
		if k.Kind == kind {
			return append(container(&k), "metadata")
		}
	}
	panic("no such kind in the table: " + kind)
}

// container is the path of the object holding a kind's target metadata: nil for a Pod, [spec template] for a
// Deployment.
func container(k *Kind) []string {
	before, _, found := strings.Cut(k.Path, ">")
	if !found {
		before = strings.TrimSuffix(strings.TrimSuffix(k.Path, "metadata.annotations"), ".")
	}
	if before == "" {
		return nil
	}
	return strings.Split(before, ".")
}

// setEntry sets (or with value nil removes) a key of the target metadata's annotations or labels.
func setEntry(obj map[string]any, kind, mapName, key string, value any) {
	md := obj
	for _, k := range templatePath(kind) {
		next, ok := md[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			md[k] = next
		}
		md = next
	}
	m, ok := md[mapName].(map[string]any)
	if !ok {
		m = map[string]any{}
		md[mapName] = m
	}
	if value == nil {
		delete(m, key)
		return
	}
	m[key] = value
}

func object(req map[string]any, field string) map[string]any {
	o, _ := req[field].(map[string]any)
	return o
}

// expectOnly checks that mutated equals the request's object except the one target-metadata entry,
// which must be want (nil: absent). This is the splice's promise: nothing else changes.
func expectOnly(t *testing.T, req map[string]any, resp response, kind, mapName, key string, want any) {
	t.Helper()
	if !resp.Accepted || len(resp.MutatedObject) == 0 {
		t.Fatalf("want an accepted mutation, got %+v", resp)
	}
	var got map[string]any
	if err := json.Unmarshal(resp.MutatedObject, &got); err != nil {
		t.Fatalf("mutated_object is not JSON: %v", err)
	}
	var wantObj map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, object(req, "object"))), &wantObj); err != nil {
		t.Fatal(err)
	}
	setEntry(wantObj, kind, mapName, key, want)
	if diff := cmp.Diff(wantObj, got); diff != "" {
		t.Fatalf("mutated object differs from the expectation (-want +got):\n%s", diff)
	}
}

func expectAccepted(t *testing.T, resp response) {
	t.Helper()
	if !resp.Accepted || len(resp.MutatedObject) != 0 {
		t.Fatalf("want accepted without mutation, got %+v", resp)
	}
}

func expectRejected(t *testing.T, resp response, messageParts ...string) {
	t.Helper()
	if resp.Accepted {
		t.Fatalf("want rejected, got accepted %+v", resp)
	}
	for _, part := range messageParts {
		if !strings.Contains(resp.Message, part) {
			t.Fatalf("message %q does not contain %q", resp.Message, part)
		}
	}
}

func expectWarning(t *testing.T, resp response, part string) {
	t.Helper()
	for _, w := range resp.Warnings {
		if strings.Contains(w, part) {
			return
		}
	}
	t.Fatalf("no warning contains %q: %q", part, resp.Warnings)
}

// podKind is the Pod's entry of the table.
var podKind = builtin(tableKind("", "Pod"))

// partsString is the text parts write.
func partsString(parts []rawjson.Part) string {
	var out []byte
	for _, p := range parts {
		out = p.AppendTo(out)
	}
	return string(out)
}

// keptEvaluator is the storage of checkAnswerOverPayload's calls, kept from one to the next as the waPC
// handler keeps it: every answer checked is also one given after the evaluations of the checks before.
var keptEvaluator Evaluator

// checkAnswerOverPayload checks that Evaluator.Validate, the waPC handler's entry, answers payload with the bytes
// Validate answered (want), whether it wrote them over the payload or into a buffer of its own, and
// reports which it did. It also checks the same answer from a payload whose buffer has room to spare
// after it, filled with other bytes, as the waPC glue's kept buffer may have (package wapcguest).
func checkAnswerOverPayload(t *testing.T, payload string, want []byte) (out []byte, over bool) {
	t.Helper()
	roomy := append([]byte(payload), bytes.Repeat([]byte{'"'}, len(payload)+64)...)[:len(payload)]
	if spare := validateWith(roomy, NewLogger(io.Discard), &keptEvaluator); !bytes.Equal(spare, want) {
		t.Fatalf("Evaluator.Validate with room after the payload answered\n%s\nValidate answered\n%s", spare, want)
	}
	buf := []byte(payload)
	if out = validateWith(buf, NewLogger(io.Discard), &keptEvaluator); !bytes.Equal(out, want) {
		t.Fatalf("Evaluator.Validate answered\n%s\nValidate answered\n%s", out, want)
	}
	return out, len(out) > 0 && len(buf) > 0 && &out[0] == &buf[0]
}

// validateWith is ev.Validate, logging to logger.
func validateWith(payload []byte, logger *Logger, ev *Evaluator) []byte {
	ev.log = logger
	return ev.Validate(payload)
}

// checkFixedPoint: when out (the answer to payload) carries a mutation, the same request with that
// mutated_object as its object is accepted with no mutation and no warning (SPEC "The answer is a fixed
// point"), which is what lets the module, deployed again without mutations, guard the stored object.
func checkFixedPoint(t *testing.T, payload, out []byte) {
	t.Helper()
	var resp response
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.MutatedObject) == 0 {
		return
	}
	again := withObject(t, payload, resp.MutatedObject)
	var second response
	if err := json.Unmarshal(validate(again, NewLogger(io.Discard)), &second); err != nil {
		t.Fatal(err)
	}
	if !second.Accepted || len(second.MutatedObject) > 0 || len(second.Warnings) > 0 {
		t.Fatalf("the answer is not a fixed point: evaluated again with its mutated_object, accepted %v, message %q, "+
			"warnings %q, mutated_object %s\nfirst answer: %s\npayload: %s", second.Accepted, second.Message,
			second.Warnings, second.MutatedObject, out, payload)
	}
}

// withObject is payload with request.object replaced by object, every other byte as it was (a payload may nest
// deeper than encoding/json decodes).
func withObject(t *testing.T, payload []byte, object json.RawMessage) []byte {
	t.Helper()
	old := gjson.GetBytes(payload, "request.object")
	if !old.IsObject() || old.Index <= 0 {
		t.Fatalf("a mutation of a payload without request.object: %.200s", payload)
	}
	return slices.Concat(payload[:old.Index], object, payload[old.Index+len(old.Raw):])
}

// validate answers a validate payload as a fresh instance does (an Evaluator of its own).
func validate(payload []byte, logger *Logger) []byte {
	return newEvaluator(logger).evaluate(payload).encode()
}

// newEvaluator returns an Evaluator that logs to logger.
func newEvaluator(logger *Logger) *Evaluator { return &Evaluator{log: logger} }

// encode answers with the decision in a buffer of its own.
func (d decision) encode() []byte { return d.encodeOver(nil) }
