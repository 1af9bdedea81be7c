package corpus_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// minMutations guards the test itself: a corpus with fewer mutating answers would not show the property.
const minMutations = 300

// TestCorpus_EveryMutationIsAFixedPoint: for every recorded call whose answer mutates, the same payload with
// the answer's mutated_object as request.object is accepted with no mutation and no warning, through
// policy.wasm in a fresh instance. This is what a second deployment of the module with mutating: false
// (the examples' guard) sees when nothing changed the object after the policy.
func TestCorpus_EveryMutationIsAFixedPoint(t *testing.T) {
	host, err := wapchost.Load(t.Context(), policyModule(t), wapchost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mutations, failures := 0, 0
	for n, e := range readCorpus(t) {
		var first answer
		if e.Operation != "validate" || json.Unmarshal(e.Response, &first) != nil || len(first.MutatedObject) == 0 {
			continue
		}
		mutations++
		payload, err := withObject(e.Payload, first.MutatedObject)
		if err != nil {
			t.Fatalf("entry %d: %v", n, err)
		}
		out, err := host.Call(t.Context(), "validate", payload)
		var again answer
		if err == nil {
			err = json.Unmarshal(out, &again)
		}
		if err != nil || !again.Accepted || len(again.MutatedObject) > 0 || len(again.Warnings) > 0 {
			failures++
			t.Errorf("entry %d: evaluated again with its own mutated_object: %v %s\npayload: %.400s", n, err, out, payload)
		}
		if failures >= 20 {
			t.Fatal("20 failures: stopping")
		}
	}
	if mutations < minMutations {
		t.Fatalf("the corpus has %d mutating answers, want at least %d", mutations, minMutations)
	}
	t.Logf("%d mutating answers, each a fixed point", mutations)
}

// withObject is payload with request.object replaced by object, every other byte as it was (some payloads
// nest deeper than encoding/json decodes).
func withObject(payload []byte, object json.RawMessage) ([]byte, error) {
	old := gjson.GetBytes(payload, "request.object")
	if !old.IsObject() || old.Index <= 0 {
		return nil, errors.New("a mutating answer to a payload without request.object")
	}
	return slices.Concat(payload[:old.Index], object, payload[old.Index+len(old.Raw):]), nil
}
