package policy

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// validateOver runs ValidateOver on a copy of payload and reports whether the answer was written over
// that copy; the answer must be the bytes Validate gives.
func validateOver(t *testing.T, payload string) (out []byte, over bool) {
	t.Helper()
	return checkValidateOver(t, payload, Validate([]byte(payload), NewLogger(io.Discard)))
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
// of the object. policy-server's payload has the object near its start: the object is moved to the end
// of the buffer first, over userInfo, whose groups the stamp is made of (copied before).
func TestValidateOver_WritesTheMutationOverThePayload(t *testing.T) {
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
func TestValidateOver_OwnBufferWhenTheAnswerIsLarger(t *testing.T) {
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = "g" + strconv.Itoa(i)
	}
	if out, over := validateOver(t, podCreate(groups, 0, false)); over {
		t.Fatalf("an answer of %d bytes was written over a payload it does not fit in", len(out))
	}
}

// Answers without a mutation are the response alone, whatever the payload.
func TestValidateOver_AnswersWithoutMutation(t *testing.T) {
	validateOver(t, `{"request":{"operation":"DELETE"}}`)
	validateOver(t, `{"request":{"operation":"CREATE","kind":{"kind":"Pod"}}}`)
	validateOver(t, `not json`)
}

// An edit that inserts and then removes more than it inserted is shorter than the document, yet written
// over it from the start it would overwrite the text after the insertion before reading it: placeOver
// says no, and the edit still writes the right document elsewhere.
func TestEditPlaceOver_NoWhenTheDocumentWouldBeOverwritten(t *testing.T) {
	buf := []byte(`{"k":1,"a":"0123456789abcdefghij","b":1}`)
	text := unsafe.String(unsafe.SliceData(buf), len(buf))
	e := edit{doc: text, span: span{start: 1, end: 1, parts: []part{{text: `"new":true,`}}},
		more: []span{{start: 7, end: 34}}}
	want := `{"new":true,"k":1,"b":1}`
	if e.Len() != len(want) {
		t.Fatalf("Len %d, want %d", e.Len(), len(want))
	}
	if e.placeOver(buf, 0) {
		t.Fatal("placeOver: yes, want no")
	}
	if out := string(e.appendTo(nil)); out != want {
		t.Fatalf("wrote %s, want %s", out, want)
	}
}

// FuzzEditPlaceOver: for any edit of a document that is a view of a buffer (spans that keep, replace,
// insert and remove text; parts that are literals or views of anywhere in the buffer, some written with
// their quotes escaped), writing it over the buffer after a response head, when placeOver allows it,
// gives the bytes writing it into a buffer of its own gives. A wrong answer here would be a wrong
// identity in the stamp.
func FuzzEditPlaceOver(f *testing.F) {
	f.Add([]byte(`{"kind":"Pod","object":{"metadata":{"annotations":{}}},"userInfo":{"groups":["a","b"]}}`), uint64(1), uint8(35))
	f.Add([]byte(`{"object":{"k":1,"a":"0123456789abcdefghij","b":1},"settings":{}}`), uint64(7), uint8(0))
	f.Add([]byte(`0123456789abcdef["a","b"],"object":{"k":1}}`), uint64(3), uint8(12))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, head uint8) {
		if len(data) < 2 {
			return
		}
		rng := rand.New(rand.NewPCG(seed, uint64(len(data))))
		e, at := fuzzEdit(data, rng), int(head)
		prefix := strings.Repeat("h", at)
		// What the edit writes, from a copy of the buffer nobody writes over.
		want := prefix + string(fuzzEdit(bytes.Clone(data), rand.New(rand.NewPCG(seed, uint64(len(data))))).appendTo(nil))
		if e.Len() != len(want)-at {
			t.Fatalf("Len %d, wrote %d", e.Len(), len(want)-at)
		}
		var got []byte
		if at+e.Len() <= len(data) && e.placeOver(data, at) {
			got = e.appendTo(append(data[:0], prefix...))
		} else {
			got = e.appendTo([]byte(prefix))
		}
		if string(got) != want {
			t.Fatalf("over the buffer: %q\nown buffer:       %q", got, want)
		}
	})
}

// fuzzEdit builds an edit of a random view of buf: up to four spans in order, each replacing its text
// (possibly none) by up to three parts, each a literal or a view of a random range of buf, escaped or not.
func fuzzEdit(buf []byte, rng *rand.Rand) edit {
	text := unsafe.String(unsafe.SliceData(buf), len(buf))
	a := rng.IntN(len(text))
	b := a + rng.IntN(len(text)-a+1)
	e := edit{doc: text[a:b]}
	cuts := make([]int, 2*rng.IntN(5))
	for i := range cuts {
		cuts[i] = rng.IntN(len(e.doc) + 1)
	}
	slices.Sort(cuts)
	for i := 0; i < len(cuts); i += 2 {
		s := span{start: cuts[i], end: cuts[i+1]}
		if rng.IntN(3) == 0 {
			s.end = s.start // an insertion
		}
		for range rng.IntN(4) {
			var p part
			if rng.IntN(2) == 0 {
				p.text = `"lit":"` + strings.Repeat("x", rng.IntN(40)) + `",`
			} else {
				from := rng.IntN(len(text))
				p.text = text[from : from+rng.IntN(len(text)-from+1)]
			}
			if rng.IntN(2) == 0 {
				p.quotes = strings.Count(p.text, `"`)
			}
			s.parts = append(s.parts, p)
		}
		if i == 0 {
			e.span = s
		} else {
			e.more = append(e.more, s)
		}
	}
	return e
}
