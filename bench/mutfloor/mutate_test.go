package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every fixture with a request.object that has metadata is answered with that object plus the
// annotation, as the first member of its annotations, and nothing else changed.
func TestMutate_Fixtures(t *testing.T) {
	files, err := filepath.Glob("../../testdata/requests/*.json")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		request, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(request, &r); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		want := r.Object
		if _, ok := want["metadata"].(map[string]any); !ok {
			continue
		}
		checked++
		t.Run(filepath.Base(file), func(t *testing.T) {
			payload := []byte(`{"request":` + string(request) + `,"settings":{}}`)
			checkAnswer(t, mutate(payload), want)
		})
	}
	if checked < 40 {
		t.Errorf("%d fixtures with request.object.metadata, want every one of testdata/requests but pod-delete", checked)
	}
}

// checkAnswer checks that answer is valid JSON, accepts, and mutates the object want into want plus the
// annotation, as the first member of its metadata.annotations. A fixture that carries the annotation
// already then has it twice, the floor's first: it inserts and reads nothing.
func checkAnswer(t *testing.T, answer []byte, want map[string]any) {
	t.Helper()
	if !json.Valid(answer) {
		t.Fatalf("not JSON: %.300s", answer)
	}
	var a struct {
		Accepted      bool            `json:"accepted"`
		MutatedObject json.RawMessage `json:"mutated_object"`
	}
	if err := json.Unmarshal(answer, &a); err != nil || !a.Accepted {
		t.Fatalf("%v: %.300s", err, answer)
	}
	var raw struct {
		Metadata struct {
			Annotations json.RawMessage `json:"annotations"`
		} `json:"metadata"`
	}
	var got map[string]any
	if err := json.Unmarshal(a.MutatedObject, &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(a.MutatedObject, &got); err != nil {
		t.Fatal(err)
	}
	rest, found := bytes.CutPrefix(raw.Metadata.Annotations, []byte(`{`+annotation))
	if !found {
		t.Fatalf("annotations do not begin with the floor's: %.300s", raw.Metadata.Annotations)
	}
	var others map[string]any
	if err := json.Unmarshal(append([]byte{'{'}, bytes.TrimPrefix(rest, []byte(","))...), &others); err != nil {
		t.Fatalf("the other annotations: %v: %.300s", err, rest)
	}
	wantMetadata := want["metadata"].(map[string]any)
	wantOthers, _ := wantMetadata["annotations"].(map[string]any)
	if wantOthers == nil {
		wantOthers = map[string]any{}
	}
	if !reflect.DeepEqual(others, wantOthers) {
		t.Errorf("the other annotations are %v, want %v", others, wantOthers)
	}
	// The rest of the object: unchanged.
	delete(got["metadata"].(map[string]any), "annotations")
	delete(wantMetadata, "annotations")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mutated_object, annotations aside, differs from the request's object:\n got %v\nwant %v", got, want)
	}
}

// The answer is the same whether it is written over the payload or, when it does not fit, into a buffer of
// its own; objects before and after the answer's own head, strings with brackets and member names in them,
// and whitespace are read alike.
func TestMutate_Shapes(t *testing.T) {
	for _, c := range []struct{ name, payload, want string }{
		{
			"no annotations, empty metadata",
			`{"request":{"object":{"metadata":{}}}}`,
			`{"metadata":{"annotations":{` + annotation + `}}}`,
		}, {
			"no annotations",
			`{"request":{"uid":"a-uid-long-enough-to-move-the-object-left","object":{"metadata":{"name":"p"},"spec":{}}},"settings":{}}`,
			`{"metadata":{"annotations":{` + annotation + `},"name":"p"},"spec":{}}`,
		}, {
			"empty annotations, with whitespace",
			`{ "request" : { "object" : { "metadata" : { "annotations" : { } } } } , "settings" : { } }`,
			`{ "metadata" : { "annotations" : {` + annotation + ` } } }`,
		}, {
			"brackets and names in strings",
			`{"settings":{"request":{"object":{}}},"request":{"uid":"{\"}[","name":"\"object\":{\"metadata\":{}}","object":` +
				`{"a":"}","b":[1,{"metadata":"]"}],"metadata":{"labels":{"x":"{"},"annotations":{"annotations":"c"}},"spec":[true,null,-1.5e3]}}}`,
			`{"a":"}","b":[1,{"metadata":"]"}],"metadata":{"labels":{"x":"{"},"annotations":{` + annotation + `,"annotations":"c"}},"spec":[true,null,-1.5e3]}`,
		}, {
			"long strings with escapes",
			`{"request":{"object":{"s":"0123456789abcdef\"}{[0123456789\\","metadata":{"t":"ab\"cdefghijklmnop\\","annotations":{"k":"v"}}}}}`,
			`{"s":"0123456789abcdef\"}{[0123456789\\","metadata":{"t":"ab\"cdefghijklmnop\\","annotations":{` + annotation + `,"k":"v"}}}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.payload)) {
				t.Fatalf("the payload is not JSON: %s", c.payload)
			}
			want := answerHead + c.want + "}"
			if got := mutate([]byte(c.payload)); string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			roomy := append(make([]byte, 0, 2*len(want)), c.payload...)
			if got := mutate(roomy); string(got) != want {
				t.Errorf("written over the payload: got  %s\nwant %s", got, want)
			} else if &got[0] != &roomy[0] {
				t.Errorf("written into a buffer of its own, with room in the payload's")
			}
		})
	}
}

// With no request.object.metadata object to add to, the floor accepts without a mutation.
func TestMutate_NothingToChange(t *testing.T) {
	for _, payload := range []string{
		``,
		`not JSON`,
		`{}`,
		`{"request":{}}`,
		`{"request":{"operation":"DELETE","object":null,"oldObject":{"metadata":{}}}}`,
		`{"request":{"object":{"kind":"Pod"}}}`,
		`{"request":{"object":{"metadata":null}}}`,
		`{"request":{"object":{"metadata":{"annotations":null}}}}`,
		`{"settings":{"request":{"object":{"metadata":{}}}}}`,
		`{"request":{"object":{"metadata":{}`, // the text ends inside the object
	} {
		if got := mutate([]byte(payload)); string(got) != accepted {
			t.Errorf("%s: %s", payload, got)
		}
	}
}

// A payload cut anywhere is answered with valid JSON (and without an index out of range: the guest traps).
func TestMutate_Truncated(t *testing.T) {
	request, err := os.ReadFile("../../testdata/requests/pod-create-bob-forged.json")
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"request":` + string(request) + `,"settings":{}}`
	mutated := 0
	for n := range len(payload) {
		answer := mutate([]byte(payload[:n]))
		if !json.Valid(answer) {
			t.Fatalf("cut at %d: %.300s", n, answer)
		}
		if strings.Contains(string(answer), "mutated_object") {
			mutated++
		}
	}
	if mutated == 0 {
		t.Error("no cut payload was mutated: every cut after the object should be")
	}
}
