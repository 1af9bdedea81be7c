package policy

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
)

// validateOver runs Evaluator.Validate on a copy of payload and reports whether the answer was written over
// that copy; the answer must be the bytes Validate gives.
func validateOver(t *testing.T, payload string) (out []byte, over bool) {
	t.Helper()
	return checkAnswerOverPayload(t, payload, validate([]byte(payload), NewLogger(io.Discard)))
}

// podCreate is a validate payload: alice creates a Pod. The request's keys are in policy-server's order
// (sorted: the object near the start, userInfo last) or, with fixtureOrder, in the fixtures' (userInfo
// before the object); pad adds labels to the Pod before its annotations.
func podCreate(groups []string, pad int, fixtureOrder bool) string {
	labels := make([]string, pad)
	for i := range labels {
		labels[i] = `"label-` + strconv.Itoa(i) + `":"some-value"`
	}
	object := `"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{` + strings.Join(labels, ",") + `},` +
		`"annotations":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	userInfo := `"userInfo":{"groups":["` + strings.Join(groups, `","`) + `"],"username":"alice"}`
	if fixtureOrder {
		return `{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",` +
			userInfo + `,` + object + `},"settings":{}}`
	}
	return `{"request":{"dryRun":false,"kind":{"group":"","kind":"Pod","version":"v1"},"name":"p","namespace":"n",` +
		object + `,"oldObject":null,"operation":"CREATE","uid":"1",` + userInfo + `},"settings":{}}`
}

// The waPC handler's answer to a mutation is written over the request's own buffer: no buffer the size
// of the object. policy-server's payload has the object near its start, and userInfo, whose groups the
// stamp is made of, after it (the groups are copied first).
func TestEvaluatorValidate_WritesTheMutationOverThePayload(t *testing.T) {
	for _, fixtureOrder := range []bool{false, true} {
		for _, pad := range []int{0, 40} {
			out, over := validateOver(t, podCreate([]string{"devops", "system:authenticated"}, pad, fixtureOrder))
			if !over {
				t.Fatalf("the answer went to a buffer of its own: %s", out)
			}
			if !strings.Contains(string(out), `\"groups\":[\"devops\",\"system:authenticated\"]`) {
				t.Fatalf("no stamp in %s", out)
			}
		}
	}
}

// An answer that does not fit in the payload (each of a thousand short groups gains two escapes in the
// stamp) goes to a buffer of its own.
func TestEvaluatorValidate_OwnBufferWhenTheAnswerIsLarger(t *testing.T) {
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = "g" + strconv.Itoa(i)
	}
	if out, over := validateOver(t, podCreate(groups, 0, false)); over {
		t.Fatalf("an answer of %d bytes was written over a payload it does not fit in", len(out))
	}
}

// The same answer fits over a payload whose buffer has room after it (the waPC glue's buffer, kept from
// a larger request): written there, not into a buffer of its own.
func TestEvaluatorValidate_LargerAnswerWrittenIntoTheBuffersRoom(t *testing.T) {
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = "g" + strconv.Itoa(i)
	}
	payload := podCreate(groups, 0, false)
	want := validate([]byte(payload), NewLogger(io.Discard))
	buf := make([]byte, len(payload), 2*len(payload))
	copy(buf, payload)
	out := validateWith(buf, NewLogger(io.Discard), new(Evaluator))
	if !bytes.Equal(out, want) {
		t.Fatalf("Evaluator.Validate answered\n%s\nValidate answered\n%s", out, want)
	}
	if &out[0] != &buf[0] {
		t.Fatalf("an answer of %d bytes went to a buffer of its own though the payload's has %d", len(out), cap(buf))
	}
}

// Answers without a mutation are the response alone, whatever the payload.
func TestEvaluatorValidate_AnswersWithoutMutation(t *testing.T) {
	validateOver(t, `{"request":{"operation":"DELETE"}}`)
	validateOver(t, `{"request":{"operation":"CREATE","kind":{"kind":"Pod"}}}`)
	validateOver(t, `not json`)
}
