package corpus_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/policyserver"
)

// TestCorpus_PolicyServerDecidesAsRecorded replays every recorded validate call through Kubewarden's real
// policy-server (POLICY_SERVER, with the annotated module POLICY_SERVER_POLICY and the flags
// POLICY_SERVER_FLAGS), each with its settings under a policy id of its own, and wants the recorded decision:
// allowed, message, code, warnings, and the answer's patch applied to the request's object giving the recorded
// mutated object. What policy-server answers before the policy runs (an HTTP error for a review its typed
// AdmissionReview refuses) is counted and listed, not compared: those requests never reach the policy there.
func TestCorpus_PolicyServerDecidesAsRecorded(t *testing.T) {
	bin, module := os.Getenv("POLICY_SERVER"), os.Getenv("POLICY_SERVER_POLICY")
	if bin == "" || module == "" {
		t.Skip("POLICY_SERVER and POLICY_SERVER_POLICY (the module kwctl annotate wrote) are not set")
	}
	if !filepath.IsAbs(module) { // as given at the repository's root, where the docs run `go test ./test/corpus`
		module = filepath.Join("..", "..", module)
	}
	module, err := filepath.Abs(module)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(module); err != nil {
		t.Fatalf("POLICY_SERVER_POLICY: %v (a relative path is taken from the repository's root)", err)
	}
	type call struct {
		n        int
		request  json.RawMessage
		id       string
		recorded answer
	}
	var calls []call
	ids := map[string]string{} // settings text -> policy id
	unvalidated := 0           // calls whose settings no recorded validate_settings call accepted
	policies := map[string]any{}
	entries := readCorpus(t)
	valid := map[string]bool{} // settings the policy's validate_settings accepted: the only ones policy-server runs with
	for _, e := range entries {
		if e.Operation == "validate_settings" && bytes.Contains(e.Response, []byte(`"valid":true`)) {
			valid[string(e.Payload)] = true
		}
	}
	for n, e := range entries {
		var p struct {
			Request  json.RawMessage `json:"request"`
			Settings json.RawMessage `json:"settings"`
		}
		var a answer
		if e.Operation != "validate" || json.Unmarshal(e.Payload, &p) != nil || len(p.Request) == 0 || json.Unmarshal(e.Response, &a) != nil {
			continue
		}
		settings := string(p.Settings)
		if settings == "" || settings == "null" {
			settings = "{}"
		}
		if !valid[settings] {
			unvalidated++
			continue
		}
		id, ok := ids[settings]
		if !ok {
			id = "s" + strconv.Itoa(len(ids))
			ids[settings] = id
			policies[id] = map[string]any{"module": "file://" + module, "allowedToMutate": true, "settings": json.RawMessage(settings)}
		}
		calls = append(calls, call{n, p.Request, id, a})
	}
	url := startPolicyServer(t, bin, policies)

	client := &http.Client{Timeout: 30 * time.Second}
	before := map[string]int{} // policy-server's own answers, by status and message
	var settingsRefused, decided, resolved int
	for _, c := range calls {
		review := append(append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":`), c.request...), '}')
		resp, err := client.Post(url+c.id, "application/json", bytes.NewReader(review))
		if err != nil { // a connection policy-server closed after refusing a body over its limit: once more, on a new one
			client.CloseIdleConnections()
			resp, err = client.Post(url+c.id, "application/json", bytes.NewReader(review))
		}
		if err != nil {
			// policy-server drops the connection of a body over its limit without an answer
			before[fmt.Sprintf("no answer (%d bytes): %.60v", len(review), err)]++
			client.CloseIdleConnections()
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("entry %d: %v", c.n, err)
		}
		if resp.StatusCode != http.StatusOK {
			before[fmt.Sprintf("HTTP %d %.80s", resp.StatusCode, body)]++
			continue
		}
		var got struct {
			Response struct {
				Allowed bool   `json:"allowed"`
				Patch   []byte `json:"patch"`
				Status  *struct {
					Message string `json:"message"`
					Code    int    `json:"code"`
				} `json:"status"`
				Warnings []string `json:"warnings"`
			} `json:"response"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("entry %d: policy-server's answer %.200s: %v", c.n, body, err)
		}
		r, want := got.Response, c.recorded
		if r.Status != nil && strings.Contains(r.Status.Message, "settings are invalid") {
			settingsRefused++ // policy-server checked these settings at start-up; the recorded call did not
			continue
		}
		decided++
		var problems []string
		if r.Allowed != want.Accepted {
			problems = append(problems, fmt.Sprintf("allowed %v, recorded %v", r.Allowed, want.Accepted))
		}
		if !want.Accepted && (r.Status == nil || r.Status.Message != want.Message || (want.Code != 0 && r.Status.Code != want.Code)) {
			problems = append(problems, fmt.Sprintf("status %+v, recorded %q code %d", r.Status, want.Message, want.Code))
		}
		if !slices.Equal(r.Warnings, want.Warnings) {
			problems = append(problems, fmt.Sprintf("warnings %q, recorded %q", r.Warnings, want.Warnings))
		}
		if want.Accepted {
			if problem := samePatched(c.request, r.Patch, want.MutatedObject); problem != "" {
				problems = append(problems, problem)
			}
		}
		if len(problems) > 0 && hasDuplicateMembers(c.request) {
			resolved++ // policy-server kept the last copy of each duplicated member; the recorded call saw them all
			continue
		}
		if len(problems) > 0 {
			t.Errorf("entry %d (%.120s...): %s", c.n, c.request, strings.Join(problems, "; "))
		}
	}
	t.Logf("%d validate calls left out (settings no recorded validate_settings call accepted); ", unvalidated)
	t.Logf("%d validate calls with %d settings: %d decided by the policy as recorded, %d with duplicated members that policy-server "+
		"resolved (last copy wins) before the policy, %d refused by policy-server's settings check, %d answered by policy-server itself:",
		len(calls), len(ids), decided-resolved, resolved, settingsRefused, len(calls)-decided-settingsRefused)
	for _, k := range slices.Sorted(maps.Keys(before)) {
		t.Logf("  %4d  %s", before[k], k)
		if !strings.HasPrefix(k, "HTTP 400 ") && !strings.HasPrefix(k, "HTTP 413 ") && !strings.HasPrefix(k, "HTTP 422 ") && !strings.HasPrefix(k, "no answer (") {
			t.Errorf("policy-server answered %q itself: not one of the refusals it makes before a policy runs", k)
		}
	}
	if decided < minEntries/4 {
		t.Errorf("only %d of %d calls reached the policy", decided, len(calls))
	}
}

// hasDuplicateMembers reports whether an object of the JSON text holds a member name twice.
func hasDuplicateMembers(text []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(text))
	var walk func() bool // reads one value; true when a duplicate was met
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				key, _ := dec.Token()
				name, _ := key.(string)
				if seen[name] || walk() {
					return true
				}
				seen[name] = true
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if walk() {
					return true
				}
			}
			_, _ = dec.Token()
		}
		return false
	}
	return walk()
}

// answer is the policy's recorded ValidationResponse.
type answer struct {
	Accepted      bool            `json:"accepted"`
	MutatedObject json.RawMessage `json:"mutated_object"`
	Message       string          `json:"message"`
	Code          int             `json:"code"`
	Warnings      []string        `json:"warnings"`
}

// startPolicyServer starts policy-server with policies on loopback and returns its /validate/ URL; it is
// stopped by its PID when the test ends.
func startPolicyServer(t *testing.T, bin string, policies map[string]any) string {
	t.Helper()
	data, err := json.Marshal(policies)
	if err != nil {
		t.Fatal(err)
	}
	port := 24000
	if p, err := strconv.Atoi(os.Getenv("PS_PORT")); err == nil {
		port = p
	}
	s, err := policyserver.Start(policyserver.Options{Binary: bin, Policies: data, Dir: t.TempDir(), Port: port,
		Flags: append([]string{"--continue-on-errors"}, strings.Fields(os.Getenv("POLICY_SERVER_FLAGS"))...), Ready: 180 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.URL
}

// samePatched applies patch to the request's object and compares the result with the recorded mutated
// object (as JSON values); without a recorded mutation, the answer must carry no patch.
func samePatched(request json.RawMessage, patch []byte, mutated json.RawMessage) string {
	if len(mutated) == 0 || string(mutated) == "null" {
		if len(patch) > 0 {
			return fmt.Sprintf("a patch %s, recorded no mutation", patch)
		}
		return ""
	}
	var req struct {
		Object any `json:"object"`
	}
	var want any
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(mutated, &want); err != nil {
		return "the recorded mutated object: " + err.Error()
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return fmt.Sprintf("the patch %q: %v", patch, err)
	}
	doc := req.Object
	for _, op := range ops {
		var err error
		if doc, err = applyOp(doc, op.Op, op.Path, op.Value); err != nil {
			return fmt.Sprintf("the patch %s: %v", patch, err)
		}
	}
	if !reflect.DeepEqual(doc, want) {
		got, _ := json.Marshal(doc)
		return fmt.Sprintf("the patched object differs from the recorded one:\n got %.300s\nwant %.300s", got, mutated)
	}
	return ""
}

// applyOp applies one RFC 6902 add, replace or remove (what policy-server's diff writes) to doc.
func applyOp(doc any, op, path string, value any) (any, error) {
	if path == "" {
		if op == "remove" {
			return nil, nil
		}
		return value, nil
	}
	tokens := strings.Split(path[1:], "/")
	for i, tok := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	var set func(cur any, tokens []string) (any, error)
	set = func(cur any, tokens []string) (any, error) {
		tok := tokens[0]
		switch c := cur.(type) {
		case map[string]any:
			if len(tokens) > 1 {
				child, ok := c[tok]
				if !ok {
					return nil, fmt.Errorf("%s: no member %q", path, tok)
				}
				v, err := set(child, tokens[1:])
				c[tok] = v
				return c, err
			}
			switch op {
			case "add", "replace":
				c[tok] = value
			case "remove":
				delete(c, tok)
			default:
				return nil, fmt.Errorf("%s: operation %q", path, op)
			}
			return c, nil
		case []any:
			i, err := strconv.Atoi(tok)
			if tok == "-" {
				i, err = len(c), nil
			}
			if err != nil || i < 0 || i > len(c) {
				return nil, fmt.Errorf("%s: no element %q", path, tok)
			}
			if len(tokens) > 1 {
				if i == len(c) {
					return nil, fmt.Errorf("%s: no element %q", path, tok)
				}
				v, err := set(c[i], tokens[1:])
				c[i] = v
				return c, err
			}
			if op != "add" && i == len(c) {
				return nil, fmt.Errorf("%s: no element %q", path, tok)
			}
			switch op {
			case "add":
				return slices.Insert(c, i, value), nil
			case "replace":
				c[i] = value
			case "remove":
				return slices.Delete(c, i, i+1), nil
			default:
				return nil, fmt.Errorf("%s: operation %q", path, op)
			}
			return c, nil
		}
		return nil, fmt.Errorf("%s: %q is in neither an object nor an array", path, tok)
	}
	return set(doc, tokens)
}

// The comparison the replay rests on: a patch that gives the recorded object passes, one that does not fails.
func TestSamePatched_ComparesThePatchedObject(t *testing.T) {
	request := json.RawMessage(`{"object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]}}}`)
	mutated := json.RawMessage(`{"metadata":{"name":"p","annotations":{"a/b":"x"}},"spec":{"containers":[{"name":"a"},{"name":"b"}]}}`)
	good := []byte(`[{"op":"add","path":"/metadata/annotations","value":{"a/b":"x"}},{"op":"add","path":"/spec/containers/1","value":{"name":"b"}}]`)
	if problem := samePatched(request, good, mutated); problem != "" {
		t.Errorf("a patch giving the recorded object: %s", problem)
	}
	for _, bad := range []string{
		`[{"op":"add","path":"/metadata/annotations","value":{"a~1b":"x"}}]`,
		`[{"op":"replace","path":"/spec/containers/1","value":{"name":"b"}}]`,
		`[{"op":"move","from":"/a","path":"/b"}]`,
	} {
		if samePatched(request, []byte(bad), mutated) == "" {
			t.Errorf("%s passed", bad)
		}
	}
	if samePatched(request, nil, nil) != "" || samePatched(request, good, nil) == "" {
		t.Error("no recorded mutation: no patch passes, a patch fails")
	}
	if !hasDuplicateMembers([]byte(`{"a":{"b":[{"c":1,"c":2}]}}`)) || hasDuplicateMembers([]byte(`{"a":{"c":1},"b":{"c":1}}`)) {
		t.Error("hasDuplicateMembers")
	}
}
