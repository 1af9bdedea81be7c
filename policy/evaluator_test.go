package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// emptied empties a record's room and zeroes what the last evaluation kept there, whether it hands the room
// back or, with too little, a slice of its own.
func TestEvaluatorRecords_EmptiedZeroesWhatWasKept(t *testing.T) {
	if s := emptied[*string](nil, 0); len(s) != 0 {
		t.Fatalf("nothing emptied: %v", s)
	}
	word := "kept"
	first := append(emptied[*string](nil, 4), &word, &word, &word)
	again := emptied(first, 3)
	if len(again) != 0 || unsafe.SliceData(again) != unsafe.SliceData(first) {
		t.Fatalf("emptied with room: length %d, same room %v; want 0 and the room kept",
			len(again), unsafe.SliceData(again) == unsafe.SliceData(first))
	}
	if slices.ContainsFunc(first, func(p *string) bool { return p != nil }) {
		t.Fatalf("emptied left what the last evaluation kept: %v", first)
	}
	again = append(again, &word, &word)
	larger := emptied(again, 5)
	if len(larger) != 0 || cap(larger) != 5 || unsafe.SliceData(larger) == unsafe.SliceData(first) {
		t.Fatalf("emptied without room: length %d, capacity %d; want 0 and 5, in room of its own", len(larger), cap(larger))
	}
	if slices.ContainsFunc(first[:cap(first)], func(p *string) bool { return p != nil }) {
		t.Fatalf("emptied without room left what the last evaluation kept: %v", first[:cap(first)])
	}
}

// One storage for every evaluation, as a kept instance has: each answer, and each log line, is the one a
// fresh instance gives, whatever was evaluated before (larger requests with more targets, refusals that
// ended with changes half made, bad input, another kind's paths).
func TestEvaluatorRecords_EveryAnswerIsAFreshInstances(t *testing.T) {
	payloads := keptPayloads(t)
	var storage Evaluator
	for round, order := range [][]string{payloads, reversed(payloads)} {
		for i, payload := range order {
			var freshLog, keptLog bytes.Buffer
			want := validate([]byte(payload), NewLogger(&freshLog))
			buf := make([]byte, len(payload), 2*len(payload)) // room, as the guest's buffer may have
			copy(buf, payload)
			got := validateWith(buf, NewLogger(&keptLog), &storage)
			if !bytes.Equal(got, want) || keptLog.String() != freshLog.String() {
				t.Fatalf("round %d, payload %d (%.200s...): after the others\n%s\n%s\nfresh\n%s\n%s",
					round, i, payload, got, keptLog.String(), want, freshLog.String())
			}
		}
	}
}

// keptPayloads is every request fixture with no settings and with each example's settings (in replace
// and in reject mode), and beside them requests larger than any fixture: a RayCluster of many worker
// groups, stamped or refused, and an UPDATE that restores them all.
func keptPayloads(t *testing.T) []string {
	t.Helper()
	settings := []string{`{}`, `{"onUntrustedAnnotation":"reject"}`}
	for _, f := range testdataFiles(t, "settings") {
		s := string(f.data)
		settings = append(settings, s, strings.Replace(s, "{", `{"onUntrustedAnnotation":"reject",`, 1))
	}
	var payloads []string
	for _, f := range testdataFiles(t, "requests") {
		req := fixture(t, f.name)
		for _, s := range settings {
			payloads = append(payloads, `{"request":`+mustJSON(t, req)+`,"settings":`+s+`}`)
		}
	}
	kuberay := settings[slices.IndexFunc(settings, func(s string) bool { return strings.Contains(s, `"RayCluster"`) })]
	for _, groups := range []int{300, 40} {
		create := workerGroups(t, fixture(t, "raycluster-create-alice"), groups, bobValue)
		update := workerGroups(t, fixture(t, "raycluster-create-alice"), groups, aliceValue)
		update["operation"], update["oldObject"] = "UPDATE", create["object"]
		for _, s := range []string{kuberay, strings.Replace(kuberay, "{", `{"onUntrustedAnnotation":"reject",`, 1)} {
			for _, req := range []map[string]any{create, update} {
				payloads = append(payloads, `{"request":`+mustJSON(t, req)+`,"settings":`+s+`}`)
			}
		}
	}
	return append(payloads, `{"request":{"operation":"CREATE","kind":{"kind":"Pod"},"object":[]},"settings":{}}`, `not JSON`)
}

// workerGroups gives a RayCluster request n worker groups, every other one with value as its annotation
// (the first without: it is stamped before the second is refused or replaced).
func workerGroups(t *testing.T, req map[string]any, n int, value string) map[string]any {
	t.Helper()
	spec := path(req, "object", "spec").(map[string]any)
	first := mustJSON(t, spec["workerGroupSpecs"].([]any)[0])
	groups := make([]any, n)
	for i := range groups {
		var g map[string]any
		if err := json.Unmarshal([]byte(first), &g); err != nil {
			t.Fatal(err)
		}
		g["groupName"] = fmt.Sprintf("workers-%d", i)
		if i%2 == 1 {
			g["template"].(map[string]any)["metadata"] = map[string]any{"annotations": map[string]any{AnnotationKey: value}}
		}
		groups[i] = g
	}
	spec["workerGroupSpecs"] = groups
	return req
}

func reversed(list []string) []string {
	out := slices.Clone(list)
	slices.Reverse(out)
	return out
}

// The evaluation's records are made in the storage: after a large request, one no larger makes them in
// the same storage.
func TestEvaluatorRecords_ARequestNoLargerReusesTheRecords(t *testing.T) {
	settings, err := os.ReadFile(filepath.Join("..", "testdata", "settings", "kuberay.json"))
	if err != nil {
		t.Fatal(err)
	}
	req := workerGroups(t, fixture(t, "raycluster-create-alice"), 300, bobValue)
	payload := `{"request":` + mustJSON(t, req) + `,"settings":` + string(settings) + `}`
	var storage Evaluator
	validateWith([]byte(payload), NewLogger(io.Discard), &storage)
	refs, keys, sets := unsafe.SliceData(storage.evaluation.now.targets.Refs), unsafe.SliceData(storage.evaluation.now.targets.Places.Values),
		unsafe.SliceData(storage.evaluation.edits.writes)
	if refs == nil || keys == nil || sets == nil {
		t.Fatal("the evaluation kept no records")
	}
	validateWith([]byte(strings.Replace(payload, `"workers-1"`, `"workers-x"`, 1)), NewLogger(io.Discard), &storage)
	if unsafe.SliceData(storage.evaluation.now.targets.Refs) != refs || unsafe.SliceData(storage.evaluation.now.targets.Places.Values) != keys ||
		unsafe.SliceData(storage.evaluation.edits.writes) != sets {
		t.Errorf("a request like the last one made its records in storage of their own")
	}
}

// Once an answer is written, the storage holds nothing of the request: its views of the payload and the
// settings read from it would otherwise keep a buffer the caller replaces alive through the next
// evaluation.
func TestEvaluatorRecords_ForgetsTheRequestOnceAnswered(t *testing.T) {
	var storage Evaluator
	for _, payload := range keptPayloads(t) {
		validateWith([]byte(payload), NewLogger(io.Discard), &storage)
		if !reflect.DeepEqual(storage.request, request{}) {
			t.Fatalf("after %.200s...: the storage still holds the request: %+v", payload, storage.request)
		}
		// The engines keep the room their records took (emptied), and nothing else.
		e := storage.evaluation
		for _, ws := range []*objectWalks{&e.now, &e.was} {
			for _, w := range []*walk.Walker{&ws.targets, &ws.guards} {
				if len(w.Refs) != 0 || len(w.Places.Values) != 0 || len(w.Places.Names) != 0 {
					t.Fatalf("after %.200s...: a walker still holds records: %+v", payload, w)
				}
				*w = walk.Walker{}
			}
		}
		e.edits.writes, e.edits.sites, e.edits.spans = nil, nil, nil
		e.now.field, e.was.field = "", "" // names, not views of the payload
		if !reflect.DeepEqual(e, evaluation{}) {
			t.Fatalf("after %.200s...: the evaluation still holds the request: %+v", payload, e)
		}
	}
}

// A storage reserved for requests of 4 KB (main reserves it at start-up) makes a small request's
// records, a Pod stamp's and a Deployment's, in the storage reserved: none in storage of their own (the
// index's records: rawjson's TestRecords_ReservedHoldsADocumentOfItsSize).
func TestEvaluatorRecords_ReservedHoldsASmallRequestsRecords(t *testing.T) {
	for _, name := range []string{"pod-create-alice", "deployment-create-alice"} {
		var storage Evaluator
		storage.Reserve(4 << 10)
		type kept struct{ refs, keys, sets, groups, spans unsafe.Pointer }
		arrays := func() kept {
			return kept{unsafe.Pointer(unsafe.SliceData(storage.evaluation.now.targets.Refs)), unsafe.Pointer(unsafe.SliceData(storage.evaluation.now.targets.Places.Values)),
				unsafe.Pointer(unsafe.SliceData(storage.evaluation.edits.writes)), unsafe.Pointer(unsafe.SliceData(storage.evaluation.edits.sites)),
				unsafe.Pointer(unsafe.SliceData(storage.evaluation.edits.spans))}
		}
		reserved := arrays()
		payload := `{"request":` + mustJSON(t, fixture(t, name)) + `,"settings":{}}`
		if len(payload) > 4<<10 {
			t.Fatalf("%s: %d bytes, more than the storage is reserved for", name, len(payload))
		}
		answer := validateWith([]byte(payload), NewLogger(io.Discard), &storage)
		if !bytes.Contains(answer, []byte(`"mutated_object"`)) {
			t.Fatalf("%s: not stamped: %.300s", name, answer)
		}
		if got := arrays(); got != reserved {
			t.Errorf("%s: records made in storage of their own: %+v, reserved %+v", name, got, reserved)
		}
	}
}
