package policy

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// The fuzz targets check properties, not just "no panic". `make fuzz` runs each for a while; plain
// `go test` runs their seed corpora (and every crasher saved under testdata/fuzz) as regression tests.

// seedRequests returns the fixtures' raw bytes.
func seedRequests(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, file := range testdataFiles(f, "requests") {
		out = append(out, file.data)
	}
	return out
}

// FuzzValidate: whatever the payload, the answer is one well-formed response with accepted set; a rejection
// has code 400 and a message; a mutation is a JSON object; identical input gives identical bytes, and
// Evaluator.Validate (the answer written over the payload) gives the same bytes.
func FuzzValidate(f *testing.F) {
	for _, req := range seedRequests(f) {
		for _, settings := range []string{`{}`, rejectSettings, externalSettings, noControllersSettings, fuzzKindSettings} {
			f.Add([]byte(`{"request":` + string(req) + `,"settings":` + settings + `}`))
		}
	}
	f.Add([]byte(`{"request":{"operation":"CREATE","kind":{"kind":"Pod"},"userInfo":{"username":"a"},"object":{"metadata":null}}}`))
	f.Add([]byte(`{"request":{"operation":"UPDATE","kind":{"group":"x.io","kind":"K"},"userInfo":{"username":"a"},` +
		`"object":{"spec":{"groups":[{"template":{}}]}},"oldObject":{"spec":{"groups":[]}}},"settings":` + fuzzKindSettings + `}`))
	logger := NewLogger(io.Discard)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out := validate(payload, logger)
		var resp struct {
			Accepted      *bool           `json:"accepted"`
			Message       string          `json:"message"`
			Code          int             `json:"code"`
			MutatedObject json.RawMessage `json:"mutated_object"`
			Warnings      []string        `json:"warnings"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.Accepted == nil {
			t.Fatalf("not a response: %v\n%s", err, out)
		}
		if !*resp.Accepted && (resp.Code != 400 || resp.Message == "") {
			t.Fatalf("a rejection needs code 400 and a message: %s", out)
		}
		if len(resp.MutatedObject) > 0 && !gjson.ParseBytes(resp.MutatedObject).IsObject() {
			t.Fatalf("mutated_object is not an object: %s", out)
		}
		if again := validate(payload, logger); !bytes.Equal(out, again) {
			t.Fatalf("output differs between runs:\n%s\n%s", out, again)
		}
		checkAnswerOverPayload(t, string(payload), out)
		checkFixedPoint(t, payload, out)
	})
}

// FuzzSettings: validate_settings never fails and answers well-formed JSON, whatever the patterns (deep,
// long, empty-matching); it accepts only settings whose every pattern compiles, is within the compiler's
// limits and does not match the empty string. test/malformed runs the same kind of patterns through
// policy.wasm, where a pattern over the limits would trap.
func FuzzSettings(f *testing.F) {
	deep := func(n int, opening, closing string) string {
		return strings.Repeat(opening, n) + "a" + strings.Repeat(closing, n)
	}
	for _, s := range []string{`{}`, rejectSettings, externalSettings, noControllersSettings, `{"systemUsers":"^a$"}`,
		`{"bypassAuth":true,"externalGroups":["(", ""]}`, `{"x":1}`, `null`, `[]`, `{"legacyUserLabel":null}`,
		`{"systemUsers":" , ^a$ ,"}`, `{"systemUsers":[".*"]}`, `{"legacyUserLabel":"a b","honorLegacyUserLabel":false}`,
		`{"systemUsers":["` + deep(32, "(", ")") + `"]}`, `{"systemUsers":["` + deep(33, "(", ")") + `"]}`,
		`{"systemUsers":"` + deep(110, "(?:", ")") + `"}`, `{"systemUsers":["` + deep(500, "[(", "]") + `"]}`,
		`{"systemUsers":["^` + strings.Repeat("a", 1022) + `$"]}`, `{"systemUsers":["^` + strings.Repeat("a", 5000) + `$"]}`,
		`{"systemUsers":["` + strings.Repeat("(?:a{1000})", 90) + `"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var resp struct {
			Valid   *bool   `json:"valid"`
			Message *string `json:"message"`
		}
		out := ValidateSettings(data)
		if err := json.Unmarshal(out, &resp); err != nil || resp.Valid == nil {
			t.Fatalf("not a settings response: %v\n%s", err, out)
		}
		if *resp.Valid != (resp.Message == nil) {
			t.Fatalf("valid settings carry no message, invalid ones do: %s", out)
		}
		s, problem := CheckSettings(data)
		if problem != "" {
			return
		}
		for _, p := range []*Patterns{&s.SystemUsers, &s.ExternalUsers, &s.ExternalGroups} {
			for _, src := range p.sources {
				re, err := regexp.Compile(src)
				if err != nil || re.MatchString("") || len(src) > maxPatternBytes || groupNesting(src) > maxPatternNesting {
					t.Fatalf("accepted pattern %q: %v", src, err)
				}
			}
		}
		if s.OnUntrustedAnnotation != ModeReplace && s.OnUntrustedAnnotation != ModeReject {
			t.Fatalf("accepted mode %q", s.OnUntrustedAnnotation)
		}
		if s.LegacyUserLabel != "" && labelKeyProblem(s.LegacyUserLabel) != "" {
			t.Fatalf("accepted legacy label %q", s.LegacyUserLabel)
		}
	})
}

// yunikornValue is how the scheduler reads the annotation: encoding/json into its struct, whose keys
// encoding/json matches case-insensitively and whose duplicates it resolves to the last one.
type yunikornValue struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

// FuzzCheckSuppliedValue: whenever the validator accepts a value, encoding/json reads it without error, to
// the same user and groups the validator saw, and there is nothing else in it.
func FuzzCheckSuppliedValue(f *testing.F) {
	for _, v := range []string{aliceValue, bobValue, `{"user":"a"}`, `{"user":"a","groups":[]}`, `{"us\u0065r":"a"}`,
		`{"user":"a","USER":"b"}`, `{"user":"a","user":"b"}`, `null`, `{}`, `{"user":"\ud800"}`, "{\"user\":\"\xff\"}"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		if checkSuppliedValue(value) != "" {
			return
		}
		var read yunikornValue
		if err := json.Unmarshal([]byte(value), &read); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", value, err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(value), &raw); err != nil {
			t.Fatalf("accepted %q: %v", value, err)
		}
		for k := range raw {
			if k != "user" && k != "groups" {
				t.Fatalf("accepted %q with key %q", value, k)
			}
		}
		doc := gjson.Parse(value)
		var groups []string
		doc.Get("groups").ForEach(func(_, g gjson.Result) bool {
			groups = append(groups, g.Str)
			return true
		})
		if read.User == "" || read.User != doc.Get("user").Str {
			t.Fatalf("accepted %q: the scheduler reads user %q, the validator saw %q", value, read.User, doc.Get("user").Str)
		}
		if diff := cmp.Diff(read.Groups, groups, cmpNilEmpty); diff != "" {
			t.Fatalf("accepted %q: groups differ (scheduler -, validator +):\n%s", value, diff)
		}
	})
}

var cmpNilEmpty = cmp.Comparer(func(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
})

// FuzzStamp: for any object text the policy can read and any requester, the splice yields JSON that equals
// the input except for the one annotation, whose value is exactly the stamp, and is as long as it says.
func FuzzStamp(f *testing.F) {
	for _, req := range seedRequests(f) {
		if obj := gjson.GetBytes(req, "object"); obj.IsObject() {
			f.Add(obj.Raw, "alice", `["devops","system:authenticated"]`)
		}
	}
	for _, obj := range []string{`{}`, `{"metadata":null}`, `{"metadata":{"annotations":null}}`, `{"metadata":{"annotations":{ }}}`,
		`{"metadata":{"annotations":{"yunikorn.apache.org/user\u002einfo":"x","a":"b"}}}`, ` { "metadata" : { } } `} {
		f.Add(obj, "bob<&>\u2028", `[]`)
		f.Add(obj, "carol", `["a\"b", "c<d>","e\u2028"]`)
		f.Add(obj, "dave", `["cn=x,ou=y","é"]`)
	}
	f.Fuzz(func(t *testing.T, object, user, groups string) {
		var original map[string]any
		if json.Unmarshal([]byte(object), &original) != nil || !gjson.Valid(object) || !rawjson.Valid(groups) {
			return // the policy refuses payloads that are not valid JSON before it gets here
		}
		var e evaluation
		e.begin(Settings{}, &request{index: rawjson.Parse(object), object: gjson.Parse(object)}, requester{}, podKind, nil)
		pod, problem := e.walk(&e.now, false, 0)
		if problem != "" {
			return
		}
		r := request{userInfo: gjson.Parse(`{"username":` + rawjson.Quote(user) + `,"groups":` + groups + `}`)}
		r.username, r.groups = r.userInfo.Get("username"), r.userInfo.Get("groups")
		who, problem := readRequester(&r)
		if problem != "" {
			return
		}
		var list []string
		if json.Unmarshal([]byte(groups), &list) == nil && utf8.ValidString(user) && utf8.ValidString(groups) &&
			!strings.ContainsAny(user+strings.Join(list, ""), "\b\f") {
			// Byte for byte what YuniKorn writes (encoding/json), whether the array was copied or re-encoded;
			// but for backspace and form feed, which easyjson writes as \u0008 and \u000c, and encoding/json
			// since Go 1.22 as \b and \f (the same strings once read).
			if want, _ := json.Marshal(upstreamValue{User: user, Groups: list}); stampValue(&who) != string(want) {
				t.Fatalf("stamp for %q in %s (plain %v)\n got %s\nwant %s", user, groups, who.plain, stampValue(&who), want)
			}
		}
		c := e.newChange(1)
		c.edits.set(&pod.targets[0], AnnotationKey, stampJSON(&who))
		stamp, problem := c.edits.result()
		if problem != "" {
			t.Fatal(problem)
		}
		stamped := stamp.String()
		if stamp.Len() != len(stamped) {
			t.Fatalf("the edit says it is %d bytes long, it wrote %d", stamp.Len(), len(stamped))
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(stamped), &got); err != nil {
			t.Fatalf("the splice broke the JSON: %v\n%s", err, stamped)
		}
		setEntry(original, "Pod", "annotations", AnnotationKey, stampValue(&who))
		if diff := cmp.Diff(original, got); diff != "" {
			t.Fatalf("the splice changed more than the annotation (-want +got):\n%s\ninput: %s", diff, object)
		}
	})
}

// FuzzPath: the path parser never fails the module; what it accepts keeps to the syntax (at most 32
// segments, the last a plain name, no wildcard from the creation marker on) and reads back as written.
func FuzzPath(f *testing.F) {
	for _, p := range []string{"spec.driver>annotations", "spec.workerGroupSpecs[*].template>metadata.annotations",
		"spec.pytorchReplicaSpecs{*}.template>metadata.annotations", "spec>podTemplate.metadata.annotations", "a",
		"a>>b", "a[*]", "a{*}.b", "spec.templates[*].steps[*][*].inline>metadata.annotations", "a{*}[*].b", "a[*]{*}[*].b", ">a", "a.", "a..b", "a[*]>b", "a>b[*].c", strings.Repeat("a.", 40) + "b"} {
		f.Add(p, false)
		f.Add(p, true)
	}
	f.Fuzz(func(t *testing.T, text string, guard bool) {
		p, problem := walk.Parse(text, guard, false)
		if problem != "" {
			return
		}
		n := len(p.Segments)
		if n == 0 || n > walk.MaxSegments || p.Segments[n-1].Wild != "" || p.Create < 0 || p.Create > n ||
			guard && p.Create != n || !guard && p.Create == n {
			t.Fatalf("%q: accepted %+v", text, p)
		}
		marker := strings.Contains(text, ">") // else create is where the default puts it: the last segment
		var b strings.Builder
		for i, s := range p.Segments {
			switch {
			case marker && i == p.Create:
				b.WriteString(">")
			case i > 0:
				b.WriteString(".")
			}
			if i >= p.Create && s.Wild != "" {
				t.Fatalf("%q: a wildcard after the marker", text)
			}
			b.WriteString(s.Name)
			b.WriteString(s.Wild)
		}
		if b.String() != text {
			t.Fatalf("%q reads back as %q", text, b.String())
		}
	})
}

// fuzzKindSettings declares one kind with every path form: arrays, maps, the creation marker below the
// root of the spec (two maps created in one object), and a guard map.
const fuzzKindSettings = `{"customWorkloads":[{"apiGroup":"x.io","kind":"K","annotationPaths":["spec.driver>annotations",` +
	`"spec.groups[*].template>metadata.annotations","spec.replicas{*}.template>metadata.annotations",` +
	`"spec>podTemplate.metadata.annotations","spec>other.metadata.annotations",` +
	// overlapping paths: one role's own path beside the wildcard over every role; an array of arrays
	`"spec.replicas.A.template>metadata.annotations","spec.steps[*][*].inline>metadata.annotations",` +
	// paths that ride along with an earlier one from a shared wildcard (each element read once for both)
	`"spec.groups[*]>sidecar.annotations","spec.steps[*][*].other>metadata.annotations"],` +
	`"guardPaths":["spec.conf","spec.steps[*][*].conf","spec.steps[*][*].inline.conf"]}]}`

// FuzzCustomKind: for any object of a declared kind that bob (untrusted) creates, the answer is a 400, or
// an acceptance after which every map the paths name holds bob's identity and nothing else changed (the
// splice of many maps in one pass yields valid JSON), and which the policy accepts again unchanged.
func FuzzCustomKind(f *testing.F) {
	for _, obj := range []string{`{}`, `{"spec":{}}`, `{"spec":null}`, `{"spec":{"driver":{"annotations":null},"groups":[{"template":{}},1,{"template":{"metadata":null}}]}}`,
		`{"spec":{"replicas":{"A":{"template":{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"x","k":"v"}}}},"B":{}}}}`,
		`{"spec":{"podTemplate":null,"other":{"metadata":{}},"conf":{"a":"b"}}}`, ` { "spec" : { "driver" : { } , "podTemplate" : { } } } `,
		`{"spec":{"conf":{"yunikorn.apache.org/user.info":"x"}}}`,
		// nested guard values and steps
		`{"spec":{"conf":{"a":{"b":["c",{"yunikorn.apache.org/user.info":1}]},"{{x}}":"y"},"steps":[[{"inline":{}},{"inline":{"metadata":null}}],[],1,[{"conf":{"k":[[]]}}]]}}`,
		`{"spec":{"replicas":{"A":{"template":{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"x"}}}}},"conf":{"x":{"y":{"z":"yunikorn.apache.org/user.info"}}}}}`,
		`{"spec":{"driver":{"annotations":{"{{k}}":"v","yunikorn.apache.org/task-groups":"[{\"annotations\":{\"yunikorn.apache.org\\/user.info\":1}}]"}}}}`,
		// riders: sidecars beside templates, other beside inline, bad input in a rider before its leader's
		`{"spec":{"groups":[{"template":{},"sidecar":{}},{"sidecar":null},{"sidecar":{"annotations":{"k":"v"}}}],"steps":[[{"inline":{"conf":{"a":"b"}},"other":{}}]]}}`,
		`{"spec":{"groups":[{"sidecar":1},{"template":{"metadata":2}}]}}`} {
		f.Add(obj)
	}
	logger := NewLogger(io.Discard)
	stamp := UserInfo{User: "bob"}.Encode()
	payload := func(object string) []byte {
		return []byte(`{"request":{"operation":"CREATE","kind":{"group":"x.io","version":"v1","kind":"K"},` +
			`"userInfo":{"username":"bob"},"object":` + object + `},"settings":` + fuzzKindSettings + `}`)
	}
	settings, _ := CheckSettings([]byte(fuzzKindSettings))
	kind, _ := settings.customKind("x.io", "K")
	f.Fuzz(func(t *testing.T, object string) {
		if !rawjson.Valid(object) || !gjson.Parse(object).IsObject() {
			return
		}
		checkRidersWalkAsAlone(t, object, kind)
		out := validate(payload(object), logger)
		checkAnswerOverPayload(t, string(payload(object)), out)
		checkFixedPoint(t, payload(object), out)
		var resp response
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("not a response: %v\n%s", err, out)
		}
		result, accepted := acceptedResult(t, resp, object)
		if !accepted {
			return
		}
		if len(resp.MutatedObject) > 0 {
			// nothing else changed: without the annotation in the named maps, the objects agree (maps the
			// policy created are empty once the annotation is gone).
			var before, after any
			_ = json.Unmarshal([]byte(object), &before)
			_ = json.Unmarshal([]byte(result), &after)
			if diff := cmp.Diff(withoutAnnotation(before), withoutAnnotation(after), cmpEmptyAsMissing); diff != "" {
				t.Fatalf("the splice changed more than the annotations (-before +after):\n%s", diff)
			}
		}
		w := walk.Walker{Index: rawjson.Parse(result), Field: "request.object", Entry: AnnotationKey}
		for i := range kind.annotations {
			if problem := w.Walk(rawjson.Root(result), &kind.annotations[i]); problem.Found() {
				t.Fatalf("accepted, but the result is bad input: %s\n%s", walkProblemText(problem, "K"), result)
			}
		}
		for i := range w.Refs {
			if ref, value := &w.Refs[i], w.Refs[i].Value().Result(result); value.Str != stamp {
				t.Fatalf("%s holds %q after bob's CREATE, want bob's identity:\n%s", w.Places.Key(ref), value.Raw, result)
			}
		}
	})
}

// withoutAnnotation drops the annotation key from every object in v.
func withoutAnnotation(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != AnnotationKey {
				out[k] = withoutAnnotation(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutAnnotation(e)
		}
		return out
	}
	return v
}

// cmpEmptyAsMissing treats a member holding an empty object, nested empty objects or null as absent.
var cmpEmptyAsMissing = cmp.Transformer("prune", func(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if !emptyTree(v) {
			out[k] = v
		}
	}
	return out
})

func emptyTree(v any) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, e := range m {
		if !emptyTree(e) {
			return false
		}
	}
	return true
}

// FuzzCustomKindUpdate: whatever bob (untrusted) sends as an UPDATE of a declared kind, once accepted every
// map that was in the old object holds its old value, and every new map bob's identity.
func FuzzCustomKindUpdate(f *testing.F) {
	a := `{"` + AnnotationKey + `":"alice"}`
	for _, pair := range [][2]string{
		{`{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":"bob"}}}}`, `{"spec":{"driver":{"annotations":` + a + `}}}`},
		{`{"spec":{"groups":[{"template":{}},{"template":{"metadata":{"annotations":` + a + `}}}]}}`, `{"spec":{"groups":[{"template":{"metadata":{"annotations":` + a + `}}}]}}`},
		{`{"spec":{"driver":{}}}`, `{"spec":{"driver":{"annotations":` + a + `},"podTemplate":{"metadata":{"annotations":` + a + `}}}}`},
		{`{"spec":{"conf":{"x":"` + AnnotationKey + `"}}}`, `{"spec":{"conf":{"x":"` + AnnotationKey + `"}}}`},
		// walked together: arrays of other lengths, members in another order or only in one object, maps
		// missing from both, bad input in the old object only, riders, an array of arrays
		{`{"spec":{"groups":[{},{ },{"template":null},{"template":{"metadata":{}}},{}],"steps":[[{"inline":{}}],[]]}}`,
			`{"spec":{"groups":[{},{"template":{"metadata":{"annotations":` + a + `}}},{"sidecar":{}}],"steps":[[{"inline":{},"other":{}},{}]]}}`},
		{`{"spec":{"replicas":{"A":{"template":{}},"B":{}}}}`, `{"spec":{"replicas":{"B":{},"A":{"template":{"metadata":{"annotations":` + a + `}}}}}}`},
		{`{"spec":{"replicas":{"A":{"template":{}}}}}`, `{"spec":{"replicas":{"A":{"template":{}},"C":{"template":{"metadata":3}}}}}`},
		{`{"spec":{"groups":[{}],"driver":{}}}`, `{"spec":{"groups":[{},{"template":{"metadata":{"annotations":[]}}}],"driver":null}}`},
		{`{"spec":{"groups":[{"template":{"metadata":{"annotations":` + a + `}}}]}}`, `{"spec":{"groups":{"x":1},"replicas":[]}}`},
		{`{"spec":{"groups":[{"sidecar":{"annotations":{}}}],"replicas":{"A":{},"A":{}}}}`, `{"spec":{"groups":[{"sidecar":1}]}}`},
	} {
		f.Add(pair[0], pair[1])
	}
	logger := NewLogger(io.Discard)
	stamp := UserInfo{User: "bob"}.Encode()
	settings, _ := CheckSettings([]byte(fuzzKindSettings))
	kind, _ := settings.customKind("x.io", "K")
	maps := func(t *testing.T, doc string) map[string]gjson.Result {
		t.Helper()
		w := walk.Walker{Index: rawjson.Parse(doc), Field: "request.object", Entry: AnnotationKey}
		out := map[string]gjson.Result{}
		for i := range kind.annotations {
			if problem := w.Walk(rawjson.Root(doc), &kind.annotations[i]); problem.Found() {
				t.Fatalf("accepted, but bad input: %s\n%s", walkProblemText(problem, "K"), doc)
			}
		}
		for i := range w.Refs {
			out[w.Places.Key(&w.Refs[i])] = w.Refs[i].Value().Result(doc)
		}
		return out
	}
	f.Fuzz(func(t *testing.T, object, old string) {
		if !rawjson.Valid(object) || !gjson.Parse(object).IsObject() || !rawjson.Valid(old) || !gjson.Parse(old).IsObject() {
			return
		}
		payload := []byte(`{"request":{"operation":"UPDATE","kind":{"group":"x.io","version":"v1","kind":"K"},` +
			`"userInfo":{"username":"bob"},"object":` + object + `,"oldObject":` + old + `},"settings":` + fuzzKindSettings + `}`)
		checkUnchangedAround(t, payload, kind)
		checkRidersWalkAsAlone(t, object, kind)
		checkWalkedTogetherAsApart(t, payload)
		out := validate(payload, logger)
		checkFixedPoint(t, payload, out)
		var resp response
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		result, accepted := acceptedResult(t, resp, object)
		if !accepted {
			return
		}
		before := maps(t, old)
		for key, v := range maps(t, result) {
			if was, paired := before[key]; paired {
				if !sameEntry(was, v) {
					t.Fatalf("%s holds %s, it held %s before bob's update:\n%s", key, v.Raw, was.Raw, result)
				}
			} else if v.Str != stamp {
				t.Fatalf("new map %s holds %s after bob's update, want bob's identity:\n%s", key, v.Raw, result)
			}
		}
	})
}

// acceptedResult checks a custom kind's answer: a rejection carries code 400 and a message; an acceptance
// gives the object as it is afterwards (the mutated object, or object itself), which must be JSON.
func acceptedResult(t *testing.T, resp response, object string) (string, bool) {
	t.Helper()
	if !resp.Accepted {
		if resp.Code != 400 || resp.Message == "" {
			t.Fatalf("a rejection needs code 400 and a message: %+v", resp)
		}
		return "", false
	}
	result := object
	if len(resp.MutatedObject) > 0 {
		result = string(resp.MutatedObject)
	}
	if !rawjson.Valid(result) {
		t.Fatalf("the splice broke the JSON:\n%s\ninput: %s", result, object)
	}
	return result, true
}

// checkWalkedTogetherAsApart checks the paired walk of an UPDATE's two objects: the answer is the one that
// walking each object by itself gives, byte for byte.
// The same holds for a trusted requester (a controller).
func checkWalkedTogetherAsApart(t *testing.T, payload []byte) {
	t.Helper()
	trusted := bytes.Replace(payload, []byte(`"userInfo":{"username":"bob"}`), []byte(`"userInfo":{"username":"ctrl"}`), 1)
	trusted = bytes.Replace(trusted, []byte(`"settings":{`), []byte(`"settings":{"systemUsers":["^ctrl$"],`), 1)
	for _, p := range [][]byte{payload, trusted} {
		together := newEvaluator(NewLogger(io.Discard)).evaluate(slices.Clone(p)).encode()
		alone, walkedApart := decidedApart(slices.Clone(p))
		if walkedApart && !bytes.Equal(together, alone) {
			t.Fatalf("walked together:\n%s\nwalked apart:\n%s\nrequest: %s", together, alone, p)
		}
	}
}

// decidedApart answers an UPDATE of a declared kind as the policy does, but for walking each object by itself
// where the policy walks them together; walkedApart is false for a request the policy walks apart anyway.
func decidedApart(payload []byte) (answer []byte, walkedApart bool) {
	e, _ := newEvaluator(NewLogger(io.Discard)).prepare(payload)
	if e == nil || e.req.operation.Str != opUpdate || !e.kind.isDeclared() || e.untouched() {
		return nil, false
	}
	now, was, refusal, stopped := e.updateMapsApart(false, false, 0)
	if stopped {
		return refusal.encode(), true
	}
	return e.updateOver(&now, &was).encode(), true
}

// checkUnchangedAround checks what lets an UPDATE skip walking the old object: when unchangedAround says
// so, the old object's walk finds the same maps (concrete paths, places, bytes) as the new object's.
func checkUnchangedAround(t *testing.T, payload []byte, kind *CustomWorkload) {
	t.Helper()
	text := string(payload)
	var r request
	readRequest(rawjson.Parse(text), &r)
	var e evaluation
	e.begin(Settings{}, &r, requester{}, declared("K", kind), nil)
	now, problem := e.walk(&e.now, false, 0)
	if problem != "" || !e.unchangedAround(&now) {
		return
	}
	was, problem := e.walk(&e.was, false, 0)
	if problem != "" {
		t.Fatalf("unchanged around every map, but the old object is bad input: %s\n%s", problem, payload)
	}
	same := func(what string, a, b []walk.Ref, aPlaces, bPlaces *walk.Places) {
		if len(a) != len(b) {
			t.Fatalf("unchanged around every map, but the old object has %d %s, the new %d:\n%s", len(b), what, len(a), payload)
		}
		for i := range a {
			if aPlaces.Key(&a[i]) != bPlaces.Key(&b[i]) || !sameBytes(now.doc, a[i].Map(), was.doc, b[i].Map()) ||
				!sameBytes(now.doc, a[i].Value(), was.doc, b[i].Value()) || !sameBytes(now.doc, a[i].Old(), was.doc, b[i].Old()) {
				t.Fatalf("unchanged around every map, but %s %s differs in the old object:\n%s", what, aPlaces.Key(&a[i]), payload)
			}
		}
	}
	same("targets", now.targets, was.targets, &now.places, &was.places)
	same("guard maps", now.guard, was.guard, &now.guardPlaces, &was.guardPlaces)
}

// FuzzLeaves: the leaf reader (rule 13) and the task-groups reader (rule 15) never fail the module, on
// any valid JSON and on any text; a leaf's key starts with its prefix, and a string value that holds the
// annotation key is found by both.
func FuzzLeaves(f *testing.F) {
	for _, s := range []string{`{"a":{"b":[1,"x",{"c":null}]}}`, `[]`, `"s"`, `{"yunikorn.apache.org\/user.info":{}}`,
		`[{"annotations":{"yunikorn.apache.org\u002fuser.info":"x"}}]`, `not json "yunikorn.apache.org/user.info`, `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tg := readTaskGroups(text, "")
		named := tg.notPlain != "" || tg.elsewhere || tg.inGroups
		if !rawjson.Valid(text) {
			return
		}
		found := false
		rawjson.EachLeaf(text, "p", func(l rawjson.Leaf) bool {
			if !strings.HasPrefix(l.Key, "p") {
				t.Fatalf("leaf key %q lacks its prefix", l.Key)
			}
			found = found || l.IsString && strings.Contains(l.Text, AnnotationKey)
			return true
		})
		if found && !named {
			t.Fatalf("a leaf's text names the annotation but the strings do not: %s", text)
		}
	})
}

// FuzzTaskGroups (rules 15 and 16): whatever task-groups value an untrusted requester sends with a Pod, an
// accepted answer's value, decoded as YuniKorn decodes it (encoding/json into k8shim's TaskGroup fields),
// gives groups that each carry the pod's user.info value; and nothing traps.
func FuzzTaskGroups(f *testing.F) {
	for _, s := range []string{`[{"name":"a"}]`, `[{"name":"a","annotations":null},{}]`, `[{"ANNOTATIONS":{"a":"b"}}]`,
		`[{"annotations":{"yunikorn.apache.org\/user.info":"x"}}]`, `[{"annotationſ":{}}]`, `[{"annotations":{"a":"b","a":"c"}}]`,
		`[{"labels":{"applicationId":"x"}}]`, `{"a":1}`, `[1,"x",null]`, `[{"annotations":{"k":"\u2028<"}}]`, `[{"a":"\ud800"}]`, `[null]`, `[{"name":"a"},null]`} {
		f.Add(s)
	}
	base := `{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"a",` +
		`"userInfo":{"username":"bob","groups":["qa"]},"object":{"metadata":{"annotations":{"` + TaskGroupsKey + `":%s}}}},"settings":{}}`
	const bob = `{"user":"bob","groups":["qa"]}`
	f.Fuzz(func(t *testing.T, groups string) {
		payload := strings.Replace(base, "%s", rawjson.Quote(groups), 1)
		out := validate([]byte(payload), NewLogger(io.Discard))
		checkFixedPoint(t, []byte(payload), out)
		var resp response
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("%v", err)
		}
		if !resp.Accepted {
			return
		}
		answered := groups
		if len(resp.MutatedObject) > 0 {
			var obj struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(resp.MutatedObject, &obj); err != nil {
				t.Fatalf("%v", err)
			}
			answered = obj.Metadata.Annotations[TaskGroupsKey]
		}
		var decoded []k8shimTaskGroup
		if json.Unmarshal([]byte(answered), &decoded) != nil {
			return // YuniKorn makes no placeholders from a value it cannot decode
		}
		for i, g := range decoded {
			if g.Annotations[AnnotationKey] != bob {
				t.Fatalf("accepted %q; YuniKorn's group %d carries %q", answered, i, g.Annotations[AnnotationKey])
			}
			for k := range g.Labels {
				if k == AnnotationKey || isApplicationIDKey(k) {
					t.Fatalf("accepted %q; YuniKorn's group %d has the label %q", answered, i, k)
				}
			}
		}
	})
}

// FuzzRule14b: an untrusted UPDATE of a Pod is accepted only when both YuniKorn readings of its
// application ID are the same in the old and the new pod.
func FuzzRule14b(f *testing.F) {
	f.Add("a", "", "", "", "a", "", "", "")
	f.Add("", "x", "", "", "", "", "x", "")
	f.Add("", "", "", "s", "", "", "", "t")
	f.Fuzz(func(t *testing.T, oldLabel, oldAnnotation, oldApp, oldSpark, newLabel, newAnnotation, newApp, newSpark string) {
		for _, s := range []string{oldLabel, oldAnnotation, oldApp, oldSpark, newLabel, newAnnotation, newApp, newSpark} {
			if !utf8.ValidString(s) {
				return // JSON would carry U+FFFD instead
			}
		}
		pod := func(label, annotation, app, spark string) (map[string]any, [2]string) {
			labels, annotations := map[string]any{}, map[string]any{AnnotationKey: bobValue}
			set := func(m map[string]any, k, v string) {
				if v != "-" {
					m[k] = v
				}
			}
			set(labels, appIDKey, label)
			set(annotations, appIDKey, annotation)
			set(labels, applicationIDKey, app)
			set(labels, sparkAppSelector, spark)
			first := func(vs ...string) string {
				for _, v := range vs {
					if v != "-" && v != "" {
						return v
					}
				}
				return ""
			}
			return map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}},
				[2]string{first(label, annotation, app, spark), first(annotation, app, spark)}
		}
		now, nowIDs := pod(newLabel, newAnnotation, newApp, newSpark)
		was, wasIDs := pod(oldLabel, oldAnnotation, oldApp, oldSpark)
		req := map[string]any{"uid": "1", "kind": map[string]any{"group": "", "version": "v1", "kind": "Pod"}, "operation": "UPDATE",
			"namespace": "a", "userInfo": map[string]any{"username": "bob", "groups": []string{"qa", "system:authenticated"}}, "object": now, "oldObject": was}
		data, err := json.Marshal(map[string]any{"request": req, "settings": map[string]any{}})
		if err != nil {
			return
		}
		var resp response
		if err := json.Unmarshal(validate(data, NewLogger(io.Discard)), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Accepted != (nowIDs == wasIDs) {
			t.Fatalf("old IDs %q, new IDs %q: accepted %v (%s)", wasIDs, nowIDs, resp.Accepted, resp.Message)
		}
	})
}

// checkRidersWalkAsAlone: walking paths along with each other finds what walking each alone finds (the same
// maps at the same places, or the same first problem).
func checkRidersWalkAsAlone(t *testing.T, doc string, kind *CustomWorkload) {
	t.Helper()
	for _, paths := range [][]walk.Path{kind.annotations, kind.guards} {
		x := rawjson.Parse(doc)
		together := walk.Walker{Index: x, Field: "request.object", Entry: AnnotationKey}
		alone := walk.Walker{Index: x, Field: "request.object", Entry: AnnotationKey}
		got, want := together.WalkAll(rawjson.Root(doc), paths), walk.Problem{}
		for i := range paths { // one path at a time: none rides along with another
			if want = alone.WalkAll(rawjson.Root(doc), paths[i:i+1]); want.Found() {
				break
			}
		}
		if got != want {
			t.Fatalf("walked together: %+v, alone: %+v\n%s", got, want, doc)
		}
		if got.Found() {
			continue
		}
		a, b := walk.InDocumentOrder(together.Refs), walk.InDocumentOrder(alone.Refs)
		if len(a) != len(b) {
			t.Fatalf("walked together: %d maps, alone: %d\n%s", len(a), len(b), doc)
		}
		for i := range a {
			if together.Places.Key(&a[i]) != alone.Places.Key(&b[i]) || a[i].Where != b[i].Where || a[i].Entry != b[i].Entry ||
				len(a[i].RestSegments()) != len(b[i].RestSegments()) {
				t.Fatalf("walked together, map %d is %s, alone %s\n%s", i, together.Places.Key(&a[i]), alone.Places.Key(&b[i]), doc)
			}
		}
	}
}

// FuzzFixedPoint: every answer with a mutation is a fixed point (SPEC "The answer is a fixed point"): CREATE
// and UPDATE of a Pod, a workload, a CronJob and a declared custom kind, with a user.info value, task groups
// and a legacy label of any text or none ("-"), in both modes, for an untrusted, a trusted and an
// allow-listed requester.
func FuzzFixedPoint(f *testing.F) {
	const groups = `[{"name":"g","minMember":1,"annotations":{"a":"b"},"labels":{"applicationId":"x"}}]`
	for kind := range uint8(4) {
		for who := range uint8(3) {
			f.Add(kind, false, who, false, "-", "-", "-", "-")
			f.Add(kind, true, who, true, bobValue, groups, "alice", aliceValue)
			f.Add(kind, false, who, true, aliceValue, groups, "-", "-")
			f.Add(kind, true, who, false, "-", `[{"name":"g","annotations":{"yunikorn.apache.org/user.info":"x"}}]`, "bob", "-")
		}
	}
	logger := NewLogger(io.Discard)
	f.Fuzz(func(t *testing.T, kind uint8, update bool, who uint8, reject bool, value, taskGroups, legacy, oldValue string) {
		meta := func(value string) map[string]any {
			annotations, labels := map[string]any{"team": "a"}, map[string]any{"app": "x"}
			if value != "-" {
				annotations[AnnotationKey] = value
			}
			if taskGroups != "-" {
				annotations[TaskGroupsKey] = taskGroups
			}
			if legacy != "-" {
				labels["yunikorn.apache.org/username"] = legacy
			}
			return map[string]any{"annotations": annotations, "labels": labels}
		}
		object := func(value string) (map[string]any, map[string]any) {
			pod := map[string]any{"metadata": meta(value), "spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}
			switch kind % 4 {
			case 0:
				return map[string]any{"group": "", "version": "v1", "kind": "Pod"}, pod
			case 1:
				return map[string]any{"group": "apps", "version": "v1", "kind": "Deployment"}, map[string]any{"spec": map[string]any{"template": pod}}
			case 2:
				return map[string]any{"group": "batch", "version": "v1", "kind": "CronJob"},
					map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": pod}}}}
			default:
				return map[string]any{"group": "x.io", "version": "v1", "kind": "K"},
					map[string]any{"spec": map[string]any{"driver": map[string]any{"annotations": meta(value)["annotations"]}, "podTemplate": pod}}
			}
		}
		var settings map[string]any
		if err := json.Unmarshal([]byte(fuzzKindSettings), &settings); err != nil {
			t.Fatal(err)
		}
		if reject {
			settings["onUntrustedAnnotation"] = "reject"
		}
		user := []string{"bob", "system:serviceaccount:kube-system:replicaset-controller", "airflow"}[who%3]
		if who%3 == 2 {
			settings["bypassAuth"], settings["externalUsers"] = true, []string{"^airflow$"}
		}
		kindOf, obj := object(value)
		req := map[string]any{"uid": "1", "kind": kindOf, "namespace": "a", "operation": "CREATE", "object": obj,
			"userInfo": map[string]any{"username": user, "groups": []string{"qa", "system:authenticated"}}}
		if update {
			_, req["oldObject"] = object(oldValue)
			req["operation"] = "UPDATE"
		}
		payload, err := json.Marshal(map[string]any{"request": req, "settings": settings})
		if err != nil {
			return
		}
		checkFixedPoint(t, payload, validate(payload, logger))
	})
}
