package malformed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
	recorded "github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

const (
	annotation  = "yunikorn.apache.org/user.info"
	legacyLabel = "yunikorn.apache.org/username"
	// minCases guards the generators: a refactoring that silently drops a family of cases fails the test.
	minCases = 300
)

// expect is what a case must get beyond the invariants every answer meets.
type expect int

const (
	either   expect = iota // only the invariants: docs/rules.md fixes no decision for this input
	accepted               // the policy does not look here, or the input is fine as it is
	rejected               // the policy needs this and cannot read it: 400 with a message
)

// testCase is one hostile validate payload.
type testCase struct {
	name      string
	payload   []byte
	want      expect
	message   string // a rejection's message must contain it
	unchanged bool   // an acceptance must carry no mutated_object
	// elide is replaced by null in the payload and the answer before they are decoded here: encoding/json
	// refuses nesting deeper than 10,000 levels, which the policy itself must survive.
	elide []byte
	// knownBug marks a case that fails today against docs/rules.md. It is skipped with this text while it fails,
	// and fails once it passes, so that the mark is removed when the bug is fixed.
	knownBug string
}

// TestMalformedInput_NeverTrapsAndAlwaysAnswers runs the corpus through policy.wasm in a fresh instance per
// case, as policy-server does, and checks each answer (judge).
func TestMalformedInput_NeverTrapsAndAlwaysAnswers(t *testing.T) {
	var stdio bytes.Buffer // what TinyGo prints before a trap (a panic's message)
	host, err := wapchost.Load(t.Context(), guesttest.Policy(t), wapchost.Options{Stdio: &stdio, Record: recorded.Recorder()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(t.Context()) })

	cases := corpus(t)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases are named %q", c.name)
		}
		seen[c.name] = true
	}
	if len(cases) < minCases {
		t.Fatalf("the corpus has %d cases, want at least %d", len(cases), minCases)
	}

	var total time.Duration
	var slowest string
	var slowestTime time.Duration
	knownBugs := 0
	for _, c := range cases {
		if c.knownBug != "" {
			knownBugs++
		}
		t.Run(c.name, func(t *testing.T) {
			stdio.Reset()
			began := time.Now()
			out, err := host.Call(t.Context(), "validate", c.payload)
			elapsed := time.Since(began)
			total += elapsed
			if elapsed > slowestTime {
				slowest, slowestTime = c.name, elapsed
			}
			problems := judge(&c, out, err)
			if len(problems) > 0 && stdio.Len() > 0 {
				problems = append(problems, "guest output: "+short(stdio.String()))
			}
			switch {
			case c.knownBug != "" && len(problems) > 0:
				t.Skipf("BUG: %s\n%s", c.knownBug, strings.Join(problems, "\n"))
			case c.knownBug != "":
				t.Errorf("passes now: remove the knownBug mark (%s)", c.knownBug)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
	t.Logf("%d malformed-input cases (%d marked as known bugs), %v in the guest; slowest %q (%v)",
		len(cases), knownBugs, total.Round(time.Millisecond), slowest, slowestTime.Round(time.Millisecond))
}

// corpus generates every case.
func corpus(t *testing.T) []testCase {
	t.Helper()
	fx := loadFixtures(t)
	var cases []testCase
	for _, family := range []func(*testing.T, map[string][]byte) []testCase{
		truncated, wrongTypes, missingMembers, hugeStrings, deepNesting, escapedKeys, duplicateKeys, oddBytes,
	} {
		cases = append(cases, family(t, fx)...)
	}
	return cases
}

// ------------------------------------------------------------------------------------------ the checks

// answer is the guest's validate response, every field optional so that absence can be told apart.
type answer struct {
	Accepted      *bool           `json:"accepted"`
	Message       *string         `json:"message"`
	Code          *int            `json:"code"`
	MutatedObject json.RawMessage `json:"mutated_object"`
	Warnings      []string        `json:"warnings"`
}

// judge lists what is wrong with the guest's answer to c; nothing when it is right.
func judge(c *testCase, out []byte, callErr error) []string {
	var trap *wapchost.TrapError
	var guestErr *wapchost.GuestError
	switch {
	case errors.As(callErr, &trap):
		return []string{"the guest trapped, which policy-server answers as a rejection with code 500: " + short(trap.Error())}
	case errors.As(callErr, &guestErr):
		return []string{"the guest returned a Go error, which policy-server answers as a rejection with code 500: " + short(guestErr.Error())}
	case callErr != nil:
		return []string{"the call failed: " + short(callErr.Error())}
	}
	if c.elide != nil {
		out = bytes.ReplaceAll(out, c.elide, []byte("null"))
	}
	a, err := decodeAnswer(out)
	if err != nil {
		return []string{fmt.Sprintf("the answer is not a validation response (%v): %s", err, short(string(out)))}
	}

	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	message := ""
	if a.Message != nil {
		message = *a.Message
	}
	if a.Code != nil && *a.Code == 500 {
		problem("code 500: %s", short(message))
	}
	if *a.Accepted {
		if a.Code != nil || a.Message != nil {
			problem("an acceptance carries a code or a message: %s", short(string(out)))
		}
	} else {
		if a.Code == nil || *a.Code != 400 {
			problem("a rejection must carry code 400: %s", short(string(out)))
		}
		if message == "" {
			problem("a rejection must say what is wrong: %s", short(string(out)))
		}
		if a.MutatedObject != nil {
			problem("a rejection carries a mutated_object")
		}
	}
	switch {
	case c.want == accepted && !*a.Accepted:
		problem("want accepted, got rejected: %s", short(message))
	case c.want == rejected && *a.Accepted:
		problem("want rejected (%q), got accepted", c.message)
	case c.message != "" && !*a.Accepted && !strings.Contains(message, c.message):
		problem("the message %q does not contain %q", short(message), c.message)
	}
	if c.unchanged && a.MutatedObject != nil {
		problem("want no mutation, got %s", short(string(a.MutatedObject)))
	}
	if a.MutatedObject != nil {
		if err := checkMutation(c, a.MutatedObject); err != nil {
			problem("%v", err)
		}
	}
	return problems
}

func decodeAnswer(out []byte) (answer, error) {
	var a answer
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return a, errors.New("data after the response object")
	}
	if a.Accepted == nil {
		return a, errors.New(`no "accepted"`)
	}
	return a, nil
}

// checkMutation checks that mutated differs from request.object only at the annotation of the target
// metadata, and that the annotation is the requester's stamp (CREATE) or the old object's value (UPDATE,
// docs/rules.md rule 8: restored, or removed when the old template had none).
func checkMutation(c *testCase, mutated json.RawMessage) error {
	payload := c.payload
	if c.elide != nil {
		payload = bytes.ReplaceAll(payload, c.elide, []byte("null"))
	}
	var root map[string]any
	if err := decodeNumbers(payload, &root); err != nil {
		return fmt.Errorf("a mutation of a payload that is not JSON to encoding/json: %w", err)
	}
	req, _ := root["request"].(map[string]any)
	kind, _ := req["kind"].(map[string]any)
	group, _ := kind["group"].(string)
	name, _ := kind["kind"].(string)
	container, ours := templateOf(group, name)
	if !ours {
		return fmt.Errorf("a mutation of a kind the policy does not handle: group %q kind %q", group, name)
	}
	var got any
	if err := decodeNumbers(mutated, &got); err != nil {
		return fmt.Errorf("mutated_object is not JSON: %w", err)
	}
	value, present := annotationOf(got, container)
	oldValue, oldPresent := annotationOf(req["oldObject"], container)
	object := req["object"]
	stripAnnotation(got, container)
	stripAnnotation(object, container)
	if !reflect.DeepEqual(object, got) {
		return fmt.Errorf("mutated_object differs from request.object beyond the target annotation: %s", short(string(mutated)))
	}
	switch req["operation"] {
	case "CREATE":
		if !present {
			return errors.New("a CREATE mutation that does not stamp the annotation")
		}
		return checkStamp(value, req["userInfo"])
	case "UPDATE":
		if present != oldPresent || value != oldValue {
			return fmt.Errorf("an UPDATE mutation must restore the old annotation (%q, present %v), got %q (present %v)",
				short(oldValue), oldPresent, short(value), present)
		}
		return nil
	}
	return fmt.Errorf("a mutation for operation %v", req["operation"])
}

// checkStamp compares a stamp with the requester, both read by encoding/json as YuniKorn reads them.
func checkStamp(value string, userInfo any) error {
	info, _ := userInfo.(map[string]any)
	username, _ := info["username"].(string)
	var groups []string
	list, _ := info["groups"].([]any)
	for _, g := range list {
		s, _ := g.(string)
		groups = append(groups, s)
	}
	var stamp struct {
		User   string   `json:"user"`
		Groups []string `json:"groups"`
	}
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&stamp); err != nil {
		return fmt.Errorf("the stamp %q is not a user.info value: %w", short(value), err)
	}
	if stamp.User != username || !slices.Equal(stamp.Groups, groups) {
		return fmt.Errorf("the stamp names %q %q, want the requester %q %q", short(stamp.User), stamp.Groups, short(username), groups)
	}
	return nil
}

// templateOf is the "target metadata" of docs/rules.md "Words", written out again here rather than taken from the policy: the
// path to the object that holds the pod's metadata.
func templateOf(group, kind string) ([]string, bool) {
	switch {
	case group == "" && kind == "Pod":
		return nil, true
	case group == "batch" && kind == "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template"}, true
	case group == "" && kind == "ReplicationController",
		group == "apps" && slices.Contains([]string{"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"}, kind),
		group == "batch" && kind == "Job":
		return []string{"spec", "template"}, true
	}
	return nil, false
}

func walk(v any, path []string) map[string]any {
	m, _ := v.(map[string]any)
	for _, k := range path {
		m, _ = m[k].(map[string]any)
	}
	return m
}

func annotationOf(object any, container []string) (string, bool) {
	metadata, _ := walk(object, container)["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	v, ok := annotations[annotation].(string)
	return v, ok
}

// stripAnnotation removes the annotation, and the annotations and metadata maps it leaves empty (a stamp
// creates them when they are missing or null).
func stripAnnotation(object any, container []string) {
	c := walk(object, container)
	if c == nil {
		return
	}
	metadata, isMap := c["metadata"].(map[string]any)
	if !isMap {
		if c["metadata"] == nil {
			delete(c, "metadata")
		}
		return
	}
	if annotations, isMap := metadata["annotations"].(map[string]any); isMap {
		delete(annotations, annotation)
		if len(annotations) == 0 {
			delete(metadata, "annotations")
		}
	} else if metadata["annotations"] == nil {
		delete(metadata, "annotations")
	}
	if len(metadata) == 0 {
		delete(c, "metadata")
	}
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// short keeps failure output readable when a case carries megabytes.
func short(s string) string {
	const limit = 300
	if len(s) <= limit {
		return s
	}
	return s[:limit] + fmt.Sprintf("... (%d bytes)", len(s))
}

// ---------------------------------------------------------------------------------- building payloads

// edit replaces the value at path (from the payload's root: "request", "object", ...; a number indexes a
// list) with raw, which need not be valid JSON; a nil raw deletes the member.
type edit struct {
	path []string
	raw  []byte
}

func set(raw string, path ...string) edit { return edit{path: path, raw: []byte(raw)} }
func del(path ...string) edit             { return edit{path: path} }

// at joins path segments, for the long paths below.
func at(prefix []string, keys ...string) []string {
	return append(slices.Clip(prefix), keys...)
}

var (
	request     = []string{"request"}
	object      = at(request, "object")
	oldObject   = at(request, "oldObject")
	userInfo    = at(request, "userInfo")
	metadata    = at(object, "metadata")
	annotations = at(metadata, "annotations")
	template    = at(object, "spec", "template")
	tmplMeta    = at(template, "metadata")
	tmplAnn     = at(tmplMeta, "annotations")
	jobTemplate = at(object, "spec", "jobTemplate")
	settings    = []string{"settings"}
)

// build returns {"request":<fixture>,"settings":<settingsJSON>} with the edits applied.
func build(t *testing.T, fixture []byte, settingsJSON string, edits ...edit) []byte {
	t.Helper()
	if settingsJSON == "" {
		settingsJSON = "{}"
	}
	var req, s any
	if err := decodeNumbers(fixture, &req); err != nil {
		t.Fatal(err)
	}
	if err := decodeNumbers([]byte(settingsJSON), &s); err != nil {
		t.Fatal(err)
	}
	root := map[string]any{"request": req, "settings": s}
	raws := map[string][]byte{}
	for i, e := range edits {
		parent, key := parentOf(t, root, e.path)
		placeholder := "@@raw-" + strconv.Itoa(i) + "@@"
		if e.raw != nil {
			raws[strconv.Quote(placeholder)] = e.raw
		}
		switch p := parent.(type) {
		case map[string]any:
			if e.raw == nil {
				delete(p, key)
			} else {
				p[key] = placeholder
			}
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(p) || e.raw == nil {
				t.Fatalf("cannot edit %v", e.path)
			}
			p[i] = placeholder
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	for placeholder, raw := range raws {
		out = bytes.Replace(out, []byte(placeholder), raw, 1)
	}
	return out
}

// parentOf walks to the container of the last path element, creating objects that are missing or null.
func parentOf(t *testing.T, root any, path []string) (parent any, key string) {
	t.Helper()
	cur := root
	for _, k := range path[:len(path)-1] {
		switch c := cur.(type) {
		case map[string]any:
			if c[k] == nil {
				c[k] = map[string]any{}
			}
			cur = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(c) {
				t.Fatalf("no list item %q in %v", k, path)
			}
			cur = c[i]
		default:
			t.Fatalf("%v: %q is not an object or a list", path, k)
		}
	}
	return cur, path[len(path)-1]
}

func loadFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(guesttest.RepoRoot(), "testdata", "requests", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	fx := map[string][]byte{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fx[strings.TrimSuffix(filepath.Base(file), ".json")] = bytes.TrimSpace(data)
	}
	return fx
}

func sortedNames(fx map[string][]byte) []string {
	names := make([]string, 0, len(fx))
	for name := range fx {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// hand-written payloads
const (
	podKind    = `"kind":{"group":"","version":"v1","kind":"Pod"}`
	deployKind = `"kind":{"group":"apps","version":"v1","kind":"Deployment"}`
	cronKind   = `"kind":{"group":"batch","version":"v1","kind":"CronJob"}`
	create     = `"operation":"CREATE"`
	update     = `"operation":"UPDATE"`
	asBob      = `"userInfo":{"username":"bob","groups":["qa","system:authenticated"]}`
	asRSC      = `"userInfo":{"username":"system:serviceaccount:kube-system:replicaset-controller","groups":["system:serviceaccounts"]}`
	asAirflow  = `"userInfo":{"username":"airflow","groups":["system:authenticated"]}`
	forged     = `"{\"user\":\"alice\"}"`
	external   = `{"bypassAuth":true,"externalUsers":["^airflow$"]}`
	reject     = `{"onUntrustedAnnotation":"reject"}`
)

// payload wraps the members of an AdmissionRequest and a settings object.
func payload(members, settingsJSON string) []byte {
	return []byte(`{"request":{` + members + `},"settings":` + settingsJSON + `}`)
}

// podByBob is a CREATE of a Pod by bob with the given object text.
func podByBob(object string) []byte {
	return payload(create+","+podKind+","+asBob+`,"object":`+object, "{}")
}

// ---------------------------------------------------------------------------------------- the families

// truncated cuts every fixture's payload at many offsets (never valid JSON), and cuts the fixture itself
// inside a well-formed payload (sometimes valid JSON by accident: any decision, but a well-formed one).
func truncated(t *testing.T, fx map[string][]byte) []testCase {
	t.Helper()
	var cases []testCase
	for _, name := range sortedNames(fx) {
		whole := build(t, fx[name], "")
		for _, off := range cutOffsets(whole, 16) {
			cases = append(cases, testCase{
				name:    fmt.Sprintf("truncated/%s/payload at %d of %d", name, off, len(whole)),
				payload: whole[:off:off], want: rejected, message: "the validate payload is not valid JSON",
			})
		}
		for _, off := range cutOffsets(fx[name], 8) {
			cases = append(cases, testCase{
				name:    fmt.Sprintf("truncated/%s/request at %d of %d", name, off, len(fx[name])),
				payload: []byte(`{"request":` + string(fx[name][:off]) + `,"settings":{}}`),
				want:    either,
			})
		}
	}
	return cases
}

// cutOffsets returns n evenly spread offsets in [0, len(data)), plus the offsets just after the first
// backslash (inside an escape) and just before the last byte.
func cutOffsets(data []byte, n int) []int {
	offsets := make([]int, 0, n+2)
	for i := range n {
		offsets = append(offsets, i*len(data)/n)
	}
	if i := bytes.IndexByte(data, '\\'); i >= 0 {
		offsets = append(offsets, i+1)
	}
	offsets = append(offsets, len(data)-1)
	slices.Sort(offsets)
	return slices.Compact(offsets)
}

// typedValue is a JSON value of one type, to put where the policy expects another.
type typedValue struct{ name, raw, jsonType string }

var typedValues = []typedValue{
	{"null", "null", "null"},
	{"true", "true", "bool"},
	{"false", "false", "bool"},
	{"zero", "0", "number"},
	{"negative float", "-1.5e3", "number"},
	{"1e999", "1e999", "number"},
	{"string", `"x"`, "string"},
	{"empty string", `""`, "string"},
	{"empty list", "[]", "list"},
	{"list", `["x",{"a":1}]`, "list"},
	{"empty object", "{}", "object"},
	{"object", `{"a":"b"}`, "object"},
}

// outcome is the expectation for one value at one path.
type outcome struct {
	want      expect
	message   string
	unchanged bool
}

func rejectedWith(message string) outcome { return outcome{want: rejected, message: message} }

var (
	acceptance     = outcome{want: accepted}
	plainAccepting = outcome{want: accepted, unchanged: true}
)

// typedPath is a path the policy reads (or deliberately does not), the JSON type it reads there, and what
// every other type gets; overrides (by value name) win, also for values of the right type.
type typedPath struct {
	fixture   string
	settings  string
	path      []string
	right     string
	wrong     outcome
	overrides map[string]outcome
	knownBugs map[string]string // by value name
}

// wrongTypes puts every JSON type at every path the policy reads, and at some it must not read.
func wrongTypes(t *testing.T, fx map[string][]byte) []testCase {
	t.Helper()
	const (
		pod       = "pod-create-bob-forged"
		deploy    = "deployment-create-bob-forged"
		cron      = "cronjob-create-alice"
		legacy    = "pod-create-legacy-label"
		podUpd    = "pod-update-annotation-change"
		deployUpd = "deployment-update-bob-template"
	)
	nullAccepted := map[string]outcome{"null": acceptance}
	patterns := func(key string) map[string]outcome {
		return map[string]outcome{
			"null":         acceptance,
			"string":       acceptance, // "x": a one-pattern list
			"empty string": acceptance, // "" is an empty list, as YuniKorn reads a single string
			"empty list":   acceptance,
			"list":         rejectedWith(key + ": item 1 must be a string"),
		}
	}
	annotationIsNotAString := `request.object.metadata.annotations["` + annotation + `"] must be a string`
	paths := []typedPath{
		{fixture: pod, path: request, right: "object", wrong: rejectedWith(`no "request" object`)},
		{fixture: pod, path: at(request, "operation"), right: "string", wrong: rejectedWith("request.operation is missing")},
		{fixture: pod, path: at(request, "kind"), right: "object", wrong: plainAccepting},
		{fixture: pod, path: at(request, "kind", "group"), right: "string", wrong: plainAccepting, overrides: nullAccepted},
		{fixture: deploy, path: at(request, "kind", "group"), right: "string", wrong: plainAccepting},
		{fixture: pod, path: at(request, "kind", "kind"), right: "string", wrong: plainAccepting},
		{fixture: pod, path: userInfo, right: "object", wrong: rejectedWith("request.userInfo is missing")},
		{fixture: pod, path: at(userInfo, "username"), right: "string", wrong: rejectedWith("request.userInfo.username is missing or empty"),
			overrides: map[string]outcome{"empty string": rejectedWith("request.userInfo.username is missing or empty")}},
		{fixture: pod, path: at(userInfo, "groups"), right: "list", wrong: rejectedWith("request.userInfo.groups must be a list of strings"),
			overrides: map[string]outcome{"null": acceptance, "empty list": acceptance}},
		{fixture: pod, path: at(userInfo, "groups", "0"), right: "string", wrong: rejectedWith("request.userInfo.groups must be a list of strings")},
		{fixture: pod, path: at(userInfo, "extra"), right: "object", wrong: acceptance},
		{fixture: pod, path: object, right: "object", wrong: rejectedWith("request.object is missing or not an object")},
		{fixture: pod, path: metadata, right: "object", wrong: rejectedWith("request.object.metadata must be an object"), overrides: nullAccepted},
		{fixture: pod, path: annotations, right: "object", wrong: rejectedWith("request.object.metadata.annotations must be an object of strings"), overrides: nullAccepted},
		{fixture: pod, path: at(annotations, annotation), right: "string", wrong: rejectedWith(annotationIsNotAString)},
		{fixture: legacy, path: at(metadata, "labels"), right: "object", wrong: rejectedWith("request.object.metadata.labels must be an object of strings"), overrides: nullAccepted},
		{fixture: legacy, path: at(metadata, "labels", legacyLabel), right: "string", wrong: rejectedWith(`request.object.metadata.labels["` + legacyLabel + `"] must be a string`)},
		// Rule 14 reads the labels (the application ID) whether legacy handling is on or off.
		{fixture: legacy, settings: `{"legacyUserLabel":""}`, path: at(metadata, "labels"), right: "object", wrong: rejectedWith("request.object.metadata.labels must be an object of strings"), overrides: nullAccepted},
		{fixture: pod, path: at(metadata, "labels", "applicationId"), right: "string", wrong: rejectedWith(`request.object.metadata.labels["applicationId"] must be a string`)},
		// What the policy does not read: a Pod's spec and status, the request's other members, a workload's own metadata.
		{fixture: pod, path: at(object, "spec"), right: "object", wrong: acceptance},
		{fixture: pod, path: at(object, "status"), right: "object", wrong: acceptance},
		{fixture: pod, path: at(object, "kind"), right: "string", wrong: acceptance},
		{fixture: pod, path: at(metadata, "name"), right: "string", wrong: acceptance},
		{fixture: pod, path: at(request, "uid"), right: "string", wrong: acceptance},
		{fixture: pod, path: at(request, "resource"), right: "object", wrong: acceptance},
		{fixture: pod, path: at(request, "subResource"), right: "string", wrong: acceptance},
		{fixture: pod, path: at(request, "dryRun"), right: "bool", wrong: acceptance},
		{fixture: pod, path: at(request, "options"), right: "object", wrong: acceptance},
		{fixture: pod, path: oldObject, right: "object", wrong: acceptance}, // a CREATE has no old object to read
		{fixture: deploy, path: metadata, right: "object", wrong: acceptance},
		// Workload templates.
		{fixture: deploy, path: at(object, "spec"), right: "object", wrong: rejectedWith("request.object.spec is missing or not an object: a Deployment needs a pod template")},
		{fixture: deploy, path: template, right: "object", wrong: rejectedWith("request.object.spec.template is missing or not an object: a Deployment needs a pod template")},
		{fixture: deploy, path: tmplMeta, right: "object", wrong: rejectedWith("request.object.spec.template.metadata must be an object"), overrides: nullAccepted},
		{fixture: deploy, path: tmplAnn, right: "object", wrong: rejectedWith("request.object.spec.template.metadata.annotations must be an object of strings"), overrides: nullAccepted},
		{fixture: deploy, path: at(tmplAnn, annotation), right: "string", wrong: rejectedWith(`request.object.spec.template.metadata.annotations["` + annotation + `"] must be a string`)},
		{fixture: deploy, path: at(tmplMeta, "labels"), right: "object", wrong: rejectedWith("request.object.spec.template.metadata.labels must be an object of strings"), overrides: nullAccepted},
		{fixture: cron, path: jobTemplate, right: "object", wrong: rejectedWith("request.object.spec.jobTemplate is missing or not an object: a CronJob needs a pod template")},
		{fixture: cron, path: at(jobTemplate, "spec"), right: "object", wrong: rejectedWith("request.object.spec.jobTemplate.spec is missing or not an object")},
		{fixture: cron, path: at(jobTemplate, "spec", "template"), right: "object", wrong: rejectedWith("request.object.spec.jobTemplate.spec.template is missing or not an object")},
		{fixture: cron, path: at(jobTemplate, "spec", "template", "metadata"), right: "object", wrong: rejectedWith("request.object.spec.jobTemplate.spec.template.metadata must be an object"), overrides: nullAccepted},
		// UPDATE: the old object.
		{fixture: podUpd, path: oldObject, right: "object", wrong: rejectedWith("request.oldObject is missing")},
		{fixture: podUpd, path: at(oldObject, "metadata"), right: "object", wrong: rejectedWith("request.oldObject.metadata must be an object"),
			overrides: map[string]outcome{"null": rejectedWith("annotation cannot be changed once the pod exists")}},
		{fixture: podUpd, path: at(oldObject, "metadata", "annotations"), right: "object", wrong: rejectedWith("request.oldObject.metadata.annotations must be an object of strings"),
			overrides: map[string]outcome{"null": rejectedWith("annotation cannot be changed once the pod exists")}},
		{fixture: podUpd, path: at(oldObject, "metadata", "annotations", annotation), right: "string", wrong: rejectedWith(`request.oldObject.metadata.annotations["` + annotation + `"] must be a string`)},
		{fixture: podUpd, path: annotations, right: "object", wrong: rejectedWith("request.object.metadata.annotations must be an object of strings"),
			overrides: map[string]outcome{"null": rejectedWith("annotation cannot be changed once the pod exists")}},
		{fixture: deployUpd, path: at(oldObject, "spec", "template"), right: "object", wrong: rejectedWith("request.oldObject.spec.template is missing or not an object")},
		{fixture: deployUpd, path: at(oldObject, "spec", "template", "metadata", "annotations"), right: "object",
			wrong: rejectedWith("request.oldObject.spec.template.metadata.annotations must be an object of strings"), overrides: nullAccepted},
		// Settings.
		{fixture: pod, path: settings, right: "object", wrong: rejectedWith("the policy settings are not valid: settings must be a JSON object"), overrides: nullAccepted},
		{fixture: pod, path: at(settings, "bypassAuth"), right: "bool", wrong: rejectedWith("the policy settings are not valid: bypassAuth: must be true or false"), overrides: nullAccepted},
		{fixture: pod, path: at(settings, "bypassControllers"), right: "bool", wrong: rejectedWith("the policy settings are not valid: bypassControllers: must be true or false"), overrides: nullAccepted},
		{fixture: pod, path: at(settings, "systemUsers"), right: "patterns", wrong: rejectedWith("systemUsers: must be a list of regular expressions"), overrides: patterns("systemUsers")},
		{fixture: pod, path: at(settings, "externalUsers"), right: "patterns", wrong: rejectedWith("externalUsers: must be a list of regular expressions"), overrides: patterns("externalUsers")},
		{fixture: pod, path: at(settings, "externalGroups"), right: "patterns", wrong: rejectedWith("externalGroups: must be a list of regular expressions"), overrides: patterns("externalGroups")},
		{fixture: pod, path: at(settings, "onUntrustedAnnotation"), right: "string", wrong: rejectedWith("onUntrustedAnnotation: must be a string"),
			overrides: map[string]outcome{"null": acceptance, "string": rejectedWith(`onUntrustedAnnotation: "x" is not a valid mode`), "empty string": rejectedWith(`onUntrustedAnnotation: "" is not a valid mode`)}},
		{fixture: pod, path: at(settings, "legacyUserLabel"), right: "string", wrong: rejectedWith("legacyUserLabel: must be a string"), overrides: nullAccepted},
		{fixture: pod, path: at(settings, "logDecisions"), right: "bool", wrong: rejectedWith("the policy settings are not valid: logDecisions: must be true or false"), overrides: nullAccepted},
		{fixture: pod, path: at(settings, "bypassauth"), right: "none", wrong: rejectedWith(`unknown key "bypassauth"`)},
	}
	var cases []testCase
	for _, p := range paths {
		name := p.fixture
		if p.settings != "" {
			name += " " + p.settings
		}
		for _, v := range typedValues {
			o, ok := p.overrides[v.name]
			if !ok {
				if v.jsonType == p.right {
					continue
				}
				o = p.wrong
			}
			cases = append(cases, testCase{
				name:    fmt.Sprintf("wrong type/%s/%s = %s", name, strings.Join(p.path, "."), v.name),
				payload: build(t, fx[p.fixture], p.settings, set(v.raw, p.path...)),
				want:    o.want, message: o.message, unchanged: o.unchanged, knownBug: p.knownBugs[v.name],
			})
		}
	}
	return cases
}

// missingMembers deletes what the policy reads, one member at a time.
func missingMembers(t *testing.T, fx map[string][]byte) []testCase {
	t.Helper()
	var cases []testCase
	for _, m := range []struct {
		fixture string
		path    []string
		o       outcome
	}{
		{"pod-create-bob-forged", request, rejectedWith(`no "request" object`)},
		{"pod-create-bob-forged", at(request, "operation"), rejectedWith("request.operation is missing")},
		{"pod-create-bob-forged", at(request, "kind"), plainAccepting},
		{"pod-create-bob-forged", at(request, "kind", "group"), acceptance}, // "" is the core group
		{"pod-create-bob-forged", at(request, "kind", "kind"), plainAccepting},
		{"pod-create-bob-forged", userInfo, rejectedWith("request.userInfo is missing")},
		{"pod-create-bob-forged", at(userInfo, "username"), rejectedWith("request.userInfo.username is missing or empty")},
		{"pod-create-bob-forged", at(userInfo, "groups"), acceptance},
		{"pod-create-bob-forged", object, rejectedWith("request.object is missing or not an object")},
		{"pod-create-bob-forged", metadata, acceptance},
		{"pod-create-bob-forged", annotations, acceptance},
		{"pod-create-bob-forged", settings, acceptance},
		{"pod-delete", object, plainAccepting},
		{"pod-delete", userInfo, plainAccepting},
		{"pod-update-annotation-change", oldObject, rejectedWith("request.oldObject is missing")},
		{"pod-update-annotation-change", annotations, rejectedWith("cannot be changed once the pod exists")},
		{"pod-update-annotation-change", at(oldObject, "metadata"), rejectedWith("cannot be changed once the pod exists")},
		{"deployment-create-bob-forged", at(object, "spec"), rejectedWith("request.object.spec is missing or not an object")},
		{"deployment-create-bob-forged", template, rejectedWith("request.object.spec.template is missing or not an object")},
		{"deployment-create-bob-forged", tmplMeta, acceptance},
		{"cronjob-create-alice", jobTemplate, rejectedWith("request.object.spec.jobTemplate is missing or not an object")},
		{"deployment-update-bob-template", at(oldObject, "spec"), rejectedWith("request.oldObject.spec is missing or not an object")},
		{"deployment-update-bob-template", tmplAnn, acceptance}, // bob removed alice's annotation: restored
	} {
		cases = append(cases, testCase{
			name:    fmt.Sprintf("missing/%s/%s", m.fixture, strings.Join(m.path, ".")),
			payload: build(t, fx[m.fixture], "", del(m.path...)),
			want:    m.o.want, message: m.o.message, unchanged: m.o.unchanged,
		})
	}
	return cases
}

// hugeStrings puts 1 MiB and 4 MiB strings where the policy reads, copies or reports them.
func hugeStrings(t *testing.T, fx map[string][]byte) []testCase {
	t.Helper()
	var cases []testCase
	for _, size := range []int{1 << 20, 4 << 20} {
		mib := fmt.Sprintf("%d MiB", size>>20)
		long := strings.Repeat("a", size)
		quoted := strconv.Quote(long)
		value := jsonString(`{"user":"` + long + `"}`)
		add := func(name string, payload []byte, o outcome) {
			cases = append(cases, testCase{name: "huge/" + mib + " " + name, payload: payload, want: o.want, message: o.message, unchanged: o.unchanged})
		}
		stamped := acceptance // an object stamped beyond 3 MiB is refused (the bounded answer)
		if size > 3<<20 {
			stamped = rejectedWith("bytes once stamped (1 annotation maps and task groups), more than the 3 MiB the API server accepts")
		}
		add("username", build(t, fx["pod-create-alice"], "", set(quoted, at(userInfo, "username")...)), stamped)
		add("group", build(t, fx["pod-create-alice"], "", set(`[`+quoted+`]`, at(userInfo, "groups")...)), stamped)
		add("forged value replaced", build(t, fx["pod-create-bob-forged"], "", set(value, at(annotations, annotation)...)), acceptance)
		add("forged value rejected", build(t, fx["pod-create-bob-forged"], reject, set(value, at(annotations, annotation)...)),
			rejectedWith("is not allowed to set the "+annotation))
		add("username in reject mode", build(t, fx["pod-create-bob-forged"], reject, set(quoted, at(userInfo, "username")...)),
			rejectedWith("user aaaa"))
		add("trusted valid value", build(t, fx["pod-create-replicaset-controller"], "", set(value, at(annotations, annotation)...)), plainAccepting)
		add("trusted invalid value", build(t, fx["pod-create-replicaset-controller"], "",
			set(jsonString(`{"user":"a","junk":"`+long+`"}`), at(annotations, annotation)...)), rejectedWith(`unknown key "junk"`))
		add("legacy label", build(t, fx["pod-create-legacy-label"], "", set(quoted, at(metadata, "labels", legacyLabel)...)), stamped)
		add("another annotation's key", build(t, fx["pod-create-alice"], "", set(`"v"`, at(annotations, long)...)), stamped)
		add("unrelated field", build(t, fx["pod-create-alice"], "", set(quoted, at(object, "spec", "x-huge")...)), stamped)
		add("template value restored", build(t, fx["deployment-update-bob-template"], "", set(value, at(tmplAnn, annotation)...)), acceptance)
		add("unchanged pod value", build(t, fx["pod-update-label-change"], "",
			set(value, at(annotations, annotation)...), set(value, at(oldObject, "metadata", "annotations", annotation)...)), plainAccepting)
		add("changed pod value", build(t, fx["pod-update-label-change"], "", set(value, at(annotations, annotation)...)),
			rejectedWith("cannot be changed once the pod exists"))
		add("pattern", build(t, fx["pod-create-bob-forged"], "", set(`["^`+long+`$"]`, at(settings, "systemUsers")...)),
			rejectedWith("systemUsers[0]: the pattern is "+strconv.Itoa(size+2)+" bytes long, over the limit of 1,024 bytes"))
	}
	// Thousands of groups: a long list rather than a long string (~300 KB). The guest's time grows faster than
	// the list (TinyGo's garbage collector): ~0.1 s for 20,000 groups, ~0.5 s for 40,000, seconds for 100,000.
	groups := make([]string, 20_000)
	for i := range groups {
		groups[i] = strconv.Quote("group-" + strconv.Itoa(i))
	}
	cases = append(cases, testCase{
		name:    "huge/20000 groups",
		payload: build(t, fx["pod-create-alice"], "", set("["+strings.Join(groups, ",")+"]", at(userInfo, "groups")...)),
		want:    accepted,
	})
	return cases
}

// jsonString encodes s as a JSON string literal.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// deepNesting nests arrays and objects where the policy does not look, where it does, and inside a supplied
// value.
func deepNesting(t *testing.T, fx map[string][]byte) []testCase {
	t.Helper()
	var cases []testCase
	for _, depth := range []int{100, 1000, 1500, 9000, 10_000, 100_000} {
		arrays := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		objects := []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
		for _, d := range []struct {
			name    string
			payload []byte
			nested  []byte
			o       outcome
		}{
			{"arrays in an unrelated field", build(t, fx["pod-create-alice"], "", set(string(arrays), at(object, "spec", "x")...)), arrays, acceptance},
			{"objects in an unrelated field", build(t, fx["pod-create-alice"], "", set(string(objects), at(object, "spec", "x")...)), objects, acceptance},
			{"arrays in metadata", build(t, fx["pod-create-bob-forged"], "", set(string(arrays), at(metadata, "x")...)), arrays, acceptance},
			{"objects in metadata", build(t, fx["pod-create-bob-forged"], "", set(string(objects), at(metadata, "x")...)), objects, acceptance},
			{"arrays as annotations", build(t, fx["pod-create-alice"], "", set(string(arrays), annotations...)), arrays,
				rejectedWith("request.object.metadata.annotations must be an object of strings")},
			{"arrays in userInfo.extra", build(t, fx["pod-create-alice"], "", set(string(arrays), at(userInfo, "extra", "x")...)), arrays, acceptance},
			{"arrays in an old pod", build(t, fx["pod-update-label-change"], "", set(string(arrays), at(oldObject, "spec", "x")...)), arrays, plainAccepting},
			// The item is a list, not a regular expression: a 400 that names the settings.
			{"arrays in settings", build(t, fx["pod-create-alice"], "", set(string(arrays), at(settings, "systemUsers")...)), arrays,
				rejectedWith("the policy settings are not valid: ")},
		} {
			cases = append(cases, testCase{
				name:    fmt.Sprintf("deep/%d %s", depth, d.name),
				payload: d.payload, want: d.o.want, message: d.o.message, unchanged: d.o.unchanged,
				elide: d.nested,
			})
		}
		// Inside a value a trusted controller supplies: a string to the payload, JSON to the validator.
		value := jsonString(`{"user":"a","groups":` + string(arrays) + `}`)
		cases = append(cases, testCase{
			name:    fmt.Sprintf("deep/%d arrays in a trusted value", depth),
			payload: build(t, fx["pod-create-replicaset-controller"], "", set(value, at(annotations, annotation)...)),
			want:    rejected, message: `"groups" must be a list of strings`,
		}, testCase{
			name:    fmt.Sprintf("deep/%d arrays in an untrusted value", depth),
			payload: build(t, fx["pod-create-bob-forged"], "", set(value, at(annotations, annotation)...)),
			want:    accepted, // replaced without being parsed
		})
	}
	return cases
}

// escapeAll writes every byte of an ASCII string as a \u escape.
func escapeAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

// escapedKeys writes the keys the policy reads with JSON escapes: the same keys (docs/rules.md "Words": stamp).
func escapedKeys(*testing.T, map[string][]byte) []testCase {
	withAnnotation := func(key string) string {
		return `{"metadata":{"name":"p","annotations":{"` + key + `":` + forged + `,"other":"x"}}}`
	}
	cases := []testCase{
		{name: "metadata as met\\u0061data", payload: podByBob(`{"met\u0061data":{"annotations":{"` + annotation + `":` + forged + `}}}`)},
		{name: "annotations as annot\\u0061tions", payload: podByBob(`{"metadata":{"annot\u0061tions":{"` + annotation + `":` + forged + `}}}`)},
		{name: "annotation key with \\/ and \\u002e", payload: podByBob(withAnnotation(`yunikorn.apache.org\/user\u002einfo`))},
		{name: "annotation key with \\u002E", payload: podByBob(withAnnotation(`yunikorn.apache.org/user\u002Einfo`))},
		{name: "annotation key fully escaped", payload: podByBob(withAnnotation(escapeAll(annotation)))},
		{name: "every key fully escaped", payload: podByBob(`{"` + escapeAll("metadata") + `":{"` + escapeAll("annotations") + `":{"` + escapeAll(annotation) + `":` + forged + `}}}`)},
		{name: "annotation value escaped", payload: podByBob(`{"metadata":{"annotations":{"` + annotation + `":"\u007b\"user\":\"alice\"\u007d"}}}`)},
		{name: "workload path keys escaped", payload: payload(create+","+deployKind+","+asBob+
			`,"object":{"sp\u0065c":{"t\u0065mplate":{"metad\u0061ta":{"annotations":{"`+annotation+`":`+forged+`}}}}}`, "{}")},
		{name: "jobTemplate escaped", payload: payload(create+","+cronKind+","+asBob+
			`,"object":{"spec":{"job\u0054emplate":{"spec":{"template":{"metadata":{"annotations":{"`+annotation+`":`+forged+`}}}}}}}`, "{}")},
		{name: "request members escaped", payload: []byte(`{"\u0072equest":{"\u006fperation":"CREATE","k\u0069nd":{"gr\u006fup":"","k\u0069nd":"Pod"},` +
			`"user\u0049nfo":{"usern\u0061me":"bob","gr\u006fups":["qa"]},"\u006fbject":{"metadata":{"annotations":{"` + annotation + `":` + forged + `}}}},"settings":{}}`)},
		{name: "settings key escaped", payload: payload(create+","+podKind+","+asBob+`,"object":`+withAnnotation(annotation), `{"onUntrusted\u0041nnotation":"reject"}`),
			want: rejected, message: "is not allowed to set the " + annotation},
		{name: "settings member escaped", payload: []byte(`{"request":{` + create + "," + podKind + "," + asBob + `,"object":` + withAnnotation(annotation) +
			`},"settin\u0067s":{"onUntrustedAnnotation":"reject"}}`), want: rejected, message: "is not allowed to set the " + annotation},
		{name: "operation value escaped", payload: payload(`"operation":"CR\u0045ATE",`+podKind+","+asBob+`,"object":{}`, "{}")},
		{name: "kind value escaped", payload: payload(create+`,"kind":{"group":"","kind":"P\u006fd"},`+asBob+`,"object":{}`, "{}")},
		{name: "group value escaped", payload: payload(create+`,"kind":{"group":"\u0061pps","kind":"Deployment"},`+asBob+`,"object":{"spec":{"template":{}}}`, "{}")},
		{name: "username escaped", payload: payload(create+","+podKind+`,"userInfo":{"username":"\u0062ob\u003c\u2028"},"object":{}`, "{}")},
		{name: "username as a surrogate pair", payload: payload(create+","+podKind+`,"userInfo":{"username":"\ud83d\ude00"},"object":{}`, "{}")},
		{name: "username as a lone surrogate", payload: payload(create+","+podKind+`,"userInfo":{"username":"\ud800x"},"object":{}`, "{}")},
		{name: "username with \\u0000", payload: payload(create+","+podKind+`,"userInfo":{"username":"bob\u0000"},"object":{}`, "{}")},
		{name: "legacy label key escaped, trusted", payload: payload(create+","+podKind+","+asAirflow+
			`,"object":{"metadata":{"labels":{"yunikorn.apache.org\/usern\u0061me":"alice"}}}`, external), want: accepted, unchanged: true},
		{name: "trusted value keys escaped", payload: payload(create+","+podKind+","+asRSC+
			`,"object":{"metadata":{"annotations":{"`+annotation+`":"{\"\\u0075ser\":\"alice\"}"}}}`, "{}"), want: accepted, unchanged: true},
		{name: "trusted value with user twice, once escaped", payload: payload(create+","+podKind+","+asRSC+
			`,"object":{"metadata":{"annotations":{"`+annotation+`":"{\"user\":\"bob\",\"\\u0075ser\":\"alice\"}"}}}`, "{}"),
			want: rejected, message: `the key "user" occurs more than once`},
		// Not the annotation: a stamp is added beside them.
		{name: "key with a trailing \\u0000", payload: podByBob(withAnnotation(annotation + `\u0000`))},
		{name: "key in upper case", payload: podByBob(withAnnotation(strings.ToUpper(annotation)))},
		{name: "key with a one-dot leader", payload: podByBob(withAnnotation(`yunikorn.apache.org/user\u2024info`))},
		{name: "key with a trailing space", payload: podByBob(withAnnotation(annotation + " "))},
	}
	for i := range cases {
		cases[i].name = "escaped/" + cases[i].name
		if cases[i].want == either {
			cases[i].want = accepted
		}
	}
	return cases
}

// duplicateKeys repeats every key the policy reads: each is refused, since readers disagree on which
// occurrence counts (policy-server's own decoding never sends them, other hosts may).
func duplicateKeys(*testing.T, map[string][]byte) []testCase {
	const twice = "more than once"
	ann := func(v string) string { return `"` + annotation + `":` + v }
	cases := []testCase{
		{name: "metadata", payload: podByBob(`{"metadata":{},"metadata":{"annotations":{` + ann(forged) + `}}}`), want: rejected, message: `request.object.metadata occurs ` + twice},
		{name: "metadata, once escaped", payload: podByBob(`{"metadata":{},"met\u0061data":{}}`), want: rejected, message: twice},
		{name: "annotations", payload: podByBob(`{"metadata":{"annotations":{},"annotations":{` + ann(forged) + `}}}`), want: rejected, message: twice},
		{name: "annotation", payload: podByBob(`{"metadata":{"annotations":{` + ann(`"{\"user\":\"bob\"}"`) + `,` + ann(forged) + `}}}`), want: rejected, message: twice},
		{name: "annotation, once escaped", payload: podByBob(`{"metadata":{"annotations":{` + ann(`"{\"user\":\"bob\"}"`) + `,"yunikorn.apache.org/user\u002einfo":` + forged + `}}}`), want: rejected, message: twice},
		{name: "labels", payload: podByBob(`{"metadata":{"labels":{},"labels":{"` + legacyLabel + `":"alice"}}}`), want: rejected, message: twice},
		{name: "legacy label", payload: podByBob(`{"metadata":{"labels":{"` + legacyLabel + `":"bob","` + legacyLabel + `":"alice"}}}`), want: rejected, message: twice},
		{name: "spec", payload: payload(create+","+deployKind+","+asBob+`,"object":{"spec":{"template":{}},"spec":{"template":{}}}`, "{}"), want: rejected, message: twice},
		{name: "template", payload: payload(create+","+deployKind+","+asBob+`,"object":{"spec":{"template":{},"template":{}}}`, "{}"), want: rejected, message: twice},
		{name: "jobTemplate", payload: payload(create+","+cronKind+","+asBob+`,"object":{"spec":{"jobTemplate":{},"jobTemplate":{}}}`, "{}"), want: rejected, message: twice},
		{name: "old metadata", payload: payload(update+","+podKind+","+asBob+`,"object":{},"oldObject":{"metadata":{},"metadata":{}}`, "{}"), want: rejected,
			message: `request.oldObject.metadata occurs ` + twice},
		{name: "template annotation in an update", payload: payload(update+","+deployKind+","+asBob+
			`,"object":{"spec":{"template":{"metadata":{"annotations":{`+ann(forged)+`,`+ann(forged)+`}}}}},"oldObject":{"spec":{"template":{}}}`, "{}"),
			want: rejected, message: twice},
		{name: "settings key", payload: payload(create+","+podKind+","+asBob+`,"object":{}`, `{"bypassControllers":true,"bypassControllers":false}`), want: rejected,
			message: `the policy settings are not valid: the key "bypassControllers" occurs more than once`},
		// The request's own members and the payload's: each is read by the decision (docs/rules.md "Bad input").
		{name: "operation", payload: payload(create+`,"operation":"DELETE",`+podKind+","+asBob+`,"object":{}`, "{}"), want: rejected, message: "request.operation occurs " + twice},
		{name: "kind", payload: payload(create+","+podKind+`,"kind":{"group":"","kind":"ConfigMap"},`+asBob+`,"object":{}`, "{}"), want: rejected, message: "request.kind occurs " + twice},
		{name: "kind.kind", payload: payload(create+`,"kind":{"group":"","kind":"ConfigMap","kind":"Pod"},`+asBob+`,"object":{}`, "{}"), want: rejected, message: "request.kind.kind occurs " + twice},
		{name: "userInfo", payload: payload(create+","+podKind+","+asBob+`,"userInfo":{"username":"alice"},"object":{}`, "{}"), want: rejected, message: "request.userInfo occurs " + twice},
		{name: "username", payload: payload(create+","+podKind+`,"userInfo":{"username":"bob","username":"alice"},"object":{}`, "{}"), want: rejected, message: "request.userInfo.username occurs " + twice},
		{name: "groups", payload: payload(create+","+podKind+`,"userInfo":{"username":"bob","groups":["a"],"groups":["b"]},"object":{}`, "{}"), want: rejected, message: "request.userInfo.groups occurs " + twice},
		{name: "object", payload: payload(create+","+podKind+","+asBob+`,"object":{},"object":{"metadata":{"annotations":{`+ann(forged)+`}}}`, "{}"), want: rejected, message: "request.object occurs " + twice},
		{name: "oldObject", payload: payload(update+","+podKind+","+asBob+`,"object":{},"oldObject":{},"oldObject":{"metadata":{"annotations":{`+ann(forged)+`}}}`, "{}"), want: rejected, message: "request.oldObject occurs " + twice},
		{name: "request", payload: []byte(`{"request":{` + create + "," + podKind + "," + asBob + `,"object":{}},"request":{"operation":"DELETE"},"settings":{}}`), want: rejected, message: "request occurs " + twice},
		{name: "settings", payload: []byte(`{"request":{` + create + "," + podKind + "," + asBob + `,"object":{"metadata":{"annotations":{` + ann(forged) + `}}}},"settings":{},"settings":` + reject + `}`), want: rejected, message: "settings occurs " + twice},
	}
	for i := range cases {
		cases[i].name = "duplicate/" + cases[i].name
	}
	return cases
}

// oddBytes: invalid UTF-8, byte order marks, numbers outside float64, JSON extensions, trailing garbage and
// payloads that are not an object at all.
func oddBytes(t *testing.T, fx map[string][]byte) []testCase {
	t.Helper()
	pod := fx["pod-create-alice"]
	forgedPod := fx["pod-create-bob-forged"]
	valid := build(t, pod, "")
	var cases []testCase
	add := func(name string, payload []byte, o outcome) {
		cases = append(cases, testCase{name: name, payload: payload, want: o.want, message: o.message, unchanged: o.unchanged})
	}
	notJSON := rejectedWith("the validate payload is not valid JSON")

	for _, b := range []struct{ name, bytes string }{
		{"0xff", "\xff"}, {"overlong slash", "\xc0\xaf"}, {"UTF-16 surrogate", "\xed\xa0\x80"}, {"cut sequence", "\xe2\x82"}, {"NUL byte", "\x00"},
	} {
		inString := `"a` + b.bytes + `b"`
		add("utf-8/"+b.name+" in the username", build(t, pod, "", set(inString, at(userInfo, "username")...)), acceptance)
		add("utf-8/"+b.name+" in a group", build(t, pod, "", set(`[`+inString+`]`, at(userInfo, "groups")...)), acceptance)
		add("utf-8/"+b.name+" in a forged value", build(t, forgedPod, "", set(inString, at(annotations, annotation)...)), acceptance)
		add("utf-8/"+b.name+" in a trusted value", build(t, fx["pod-create-replicaset-controller"], "",
			set(`"{\"user\":`+inString[:len(inString)-1]+`\"}"`, at(annotations, annotation)...)), outcome{})
		add("utf-8/"+b.name+" in an annotation key", build(t, pod, "", set(`"v"`, at(annotations, "k"+b.bytes)...)), acceptance)
		add("utf-8/"+b.name+" in an unrelated string", build(t, pod, "", set(inString, at(object, "spec", "x")...)), acceptance)
		add("utf-8/"+b.name+" outside strings", bytes.Replace(valid, []byte(`"object":`), []byte(`"object":`+b.bytes), 1), notJSON)
	}
	// A raw NUL or newline inside a string is a control character: not JSON.
	for i := range cases {
		if strings.Contains(cases[i].name, "NUL byte") && !strings.HasSuffix(cases[i].name, "outside strings") &&
			!strings.HasSuffix(cases[i].name, "annotation key") { // the key goes through json.Marshal: \u0000
			cases[i].want, cases[i].message, cases[i].unchanged = rejected, "the validate payload is not valid JSON", false
		}
	}

	const bom = "\xef\xbb\xbf"
	add("bom/before the payload", append([]byte(bom), valid...), notJSON)
	add("bom/UTF-16 before the payload", append([]byte("\xfe\xff"), valid...), notJSON)
	add("bom/before the request", bytes.Replace(valid, []byte(`{"request":`), []byte(`{"request":`+bom), 1), notJSON)
	add("bom/in the username", build(t, pod, "", set(`"`+bom+`alice"`, at(userInfo, "username")...)), acceptance)
	add("bom/before the annotation key", build(t, forgedPod, "", del(at(annotations, annotation)...), set(forged, at(annotations, bom+annotation)...)), acceptance)
	add("bom/before a forged value", build(t, forgedPod, "", set(`"`+bom+`{\"user\":\"alice\"}"`, at(annotations, annotation)...)), acceptance)
	add("bom/before a trusted value", build(t, fx["pod-create-replicaset-controller"], "", set(`"`+bom+`{\"user\":\"alice\"}"`, at(annotations, annotation)...)),
		rejectedWith("it is not valid JSON"))

	for _, n := range []string{"NaN", "Infinity", "-Infinity", "01", "+1", ".5", "1.", "0x10", "1e", "--1"} {
		add("number/"+n+" in an unrelated field", build(t, pod, "", set(n, at(object, "spec", "x")...)), notJSON)
	}
	for _, n := range []string{"1e999", "-1e999", "1e-999", "123456789012345678901234567890", "-0", "0.0e0", "1E+2"} {
		add("number/"+n+" in an unrelated field", build(t, pod, "", set(n, at(object, "spec", "x")...)), acceptance)
		add("number/"+n+" as the operation", build(t, pod, "", set(n, at(request, "operation")...)), rejectedWith("request.operation is missing"))
		add("number/"+n+" as bypassAuth", build(t, pod, "", set(n, at(settings, "bypassAuth")...)), rejectedWith("bypassAuth: must be true or false, not a number"))
	}

	for _, g := range []struct{ name, tail string }{
		{"a letter", "x"}, {"a brace", "}"}, {"another object", "{}"}, {"a NUL byte", "\x00"}, {"a comma", ","},
		{"a comment", "// done"}, {"a second payload", string(valid)}, {"a BOM", bom},
	} {
		add("trailing/"+g.name, append(slices.Clip(valid), g.tail...), notJSON)
	}
	add("trailing/whitespace", append(slices.Clip(valid), " \t\r\n"...), acceptance)
	add("leading/whitespace", append([]byte(" \t\r\n"), valid...), acceptance)

	for _, p := range []struct{ name, payload, message string }{
		{"empty", "", "not valid JSON"},
		{"a space", " ", "not valid JSON"},
		{"a newline", "\n", "not valid JSON"},
		{"null", "null", `no "request" object`},
		{"true", "true", `no "request" object`},
		{"a number", "0", `no "request" object`},
		{"a string", `"request"`, `no "request" object`},
		{"a list", `[{"request":{}}]`, `no "request" object`},
		{"an empty object", "{}", `no "request" object`},
		{"request null", `{"request":null}`, `no "request" object`},
		{"request empty", `{"request":{}}`, "request.operation is missing"},
		{"single quotes", `{'request':{}}`, "not valid JSON"},
		{"unquoted key", `{request:{}}`, "not valid JSON"},
		{"a comment", `{"request":{} /* c */}`, "not valid JSON"},
		{"a trailing comma", `{"request":{"operation":"CREATE",}}`, "not valid JSON"},
		{"a raw newline in a string", "{\"request\":{\"operation\":\"CRE\nATE\"}}", "not valid JSON"},
		{"a raw tab in a string", "{\"request\":{\"operation\":\"CRE\tATE\"}}", "not valid JSON"},
		{"an unknown escape", `{"request":{"operation":"CRE\xATE"}}`, "not valid JSON"},
		{"a short \\u escape", `{"request":{"operation":"\u12"}}`, "not valid JSON"},
		{"an escape at the end", `{"request":{"operation":"\`, "not valid JSON"},
		{"a lone brace", "{", "not valid JSON"},
		{"a lone bracket", "[", "not valid JSON"},
		{"a key without value", `{"request"}`, "not valid JSON"},
	} {
		add("not an object/"+p.name, []byte(p.payload), rejectedWith(p.message))
	}
	return cases
}

// TestJudge_FindsWhatIsWrong checks the checker: each broken answer must be reported.
func TestJudge_FindsWhatIsWrong(t *testing.T) {
	c := testCase{payload: podByBob(`{"metadata":{"name":"p"},"spec":{"x":1}}`)}
	stamp := jsonString(`{"user":"bob","groups":["qa","system:authenticated"]}`)
	good := `{"accepted":true,"mutated_object":{"metadata":{"annotations":{"` + annotation + `":` + stamp + `},"name":"p"},"spec":{"x":1}}}`
	if problems := judge(&c, []byte(good), nil); len(problems) != 0 {
		t.Fatalf("a right answer was judged wrong: %q", problems)
	}
	for _, tc := range []struct {
		name string
		out  string
		err  error
	}{
		{"trap", "", &wapchost.TrapError{Operation: "validate", Err: errors.New("unreachable")}},
		{"guest error", "", &wapchost.GuestError{Operation: "validate", Message: "boom"}},
		{"not JSON", `{"accepted":true`, nil},
		{"no accepted", `{"message":"x","code":400}`, nil},
		{"unknown field", `{"accepted":true,"patch":"x"}`, nil},
		{"trailing data", `{"accepted":true} {}`, nil},
		{"code 500", `{"accepted":false,"message":"internal","code":500}`, nil},
		{"rejection without message", `{"accepted":false,"code":400}`, nil},
		{"rejection without code", `{"accepted":false,"message":"x"}`, nil},
		{"acceptance with a message", `{"accepted":true,"message":"x"}`, nil},
		{"mutation beyond the annotation", strings.Replace(good, `"x":1`, `"x":2`, 1), nil},
		{"stamp of somebody else", strings.Replace(good, `bob`, `alice`, 1), nil},
		{"stamp with unknown keys", strings.Replace(good, `\"user\"`, `\"user\":\"bob\",\"uid\"`, 1), nil},
		{"mutation without stamp", `{"accepted":true,"mutated_object":{"metadata":{"name":"p"},"spec":{"x":1}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if problems := judge(&c, []byte(tc.out), tc.err); len(problems) == 0 {
				t.Fatalf("%s was not reported", tc.out)
			}
		})
	}
	t.Run("expectations", func(t *testing.T) {
		for _, tc := range []struct {
			c   testCase
			out string
		}{
			{testCase{payload: c.payload, want: rejected}, good},
			{testCase{payload: c.payload, want: accepted}, `{"accepted":false,"message":"no","code":400}`},
			{testCase{payload: c.payload, want: rejected, message: "yes"}, `{"accepted":false,"message":"no","code":400}`},
			{testCase{payload: c.payload, want: accepted, unchanged: true}, good},
		} {
			if problems := judge(&tc.c, []byte(tc.out), nil); len(problems) == 0 {
				t.Errorf("%+v: %s was not reported", tc.c.want, tc.out)
			}
		}
	})
	t.Run("update restores", func(t *testing.T) {
		u := testCase{payload: payload(update+","+podKind+","+asBob+`,"object":{"metadata":{}},"oldObject":{"metadata":{"annotations":{"`+annotation+`":"old"}}}`, "{}")}
		if problems := judge(&u, []byte(`{"accepted":true,"mutated_object":{"metadata":{"annotations":{"`+annotation+`":"old"}}}}`), nil); len(problems) != 0 {
			t.Fatalf("a restore was judged wrong: %q", problems)
		}
		if problems := judge(&u, []byte(`{"accepted":true,"mutated_object":{"metadata":{"annotations":{"`+annotation+`":"new"}}}}`), nil); len(problems) == 0 {
			t.Fatal("a wrong restore was not reported")
		}
	})
}
