package policy

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/francoispqt/onelog"
	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// The fuzz targets check properties, not just "no panic". `make fuzz` runs each for a while; plain
// `go test` runs their seed corpora (and every crasher saved under testdata/fuzz) as regression tests.

// seedRequests returns the fixtures' raw bytes.
func seedRequests(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "requests", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// FuzzValidate: whatever the payload, the answer is one well-formed response with accepted set; a rejection
// has code 400 and a message; a mutation is a JSON object; identical input gives identical bytes.
func FuzzValidate(f *testing.F) {
	for _, req := range seedRequests(f) {
		for _, settings := range []string{`{}`, rejectSettings, externalSettings, noControllersSettings} {
			f.Add([]byte(`{"request":` + string(req) + `,"settings":` + settings + `}`))
		}
	}
	f.Add([]byte(`{"request":{"operation":"CREATE","kind":{"kind":"Pod"},"userInfo":{"username":"a"},"object":{"metadata":null}}}`))
	logger := onelog.New(io.Discard, onelog.ALL)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out := Validate(payload, logger)
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
		if again := Validate(payload, logger); !bytes.Equal(out, again) {
			t.Fatalf("output differs between runs:\n%s\n%s", out, again)
		}
	})
}

// FuzzSettings: validate_settings never fails and answers well-formed JSON, whatever the patterns (deep,
// long, empty-matching); it accepts only settings whose every pattern compiles, is within the compiler's
// limits and does not match the empty string. internal/malformed runs the same kind of patterns through
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
		if CheckSuppliedValue(value) != "" {
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

// FuzzStamp: for any object text the policy can read, the splice yields JSON that equals the input except
// for the one annotation, whose value is exactly the stamped one.
func FuzzStamp(f *testing.F) {
	for _, req := range seedRequests(f) {
		if obj := gjson.GetBytes(req, "object"); obj.IsObject() {
			f.Add(obj.Raw, "alice")
		}
	}
	for _, obj := range []string{`{}`, `{"metadata":null}`, `{"metadata":{"annotations":null}}`, `{"metadata":{"annotations":{ }}}`,
		`{"metadata":{"annotations":{"yunikorn.apache.org/user\u002einfo":"x","a":"b"}}}`, ` { "metadata" : { } } `} {
		f.Add(obj, "bob<&>\u2028")
	}
	f.Fuzz(func(t *testing.T, object, user string) {
		var original map[string]any
		if json.Unmarshal([]byte(object), &original) != nil || !gjson.Valid(object) {
			return // the policy refuses payloads that are not valid JSON before it gets here
		}
		tgt, problem := findTarget(gjson.Parse(object), "request.object", podKind, "")
		if problem != "" {
			return
		}
		value := UserInfo{User: user}.Encode()
		stamped := tgt.stamp(value).String()
		var got map[string]any
		if err := json.Unmarshal([]byte(stamped), &got); err != nil {
			t.Fatalf("the splice broke the JSON: %v\n%s", err, stamped)
		}
		setEntry(original, "Pod", "annotations", AnnotationKey, value)
		if diff := cmp.Diff(original, got); diff != "" {
			t.Fatalf("the splice changed more than the annotation (-want +got):\n%s\ninput: %s", diff, object)
		}
	})
}
