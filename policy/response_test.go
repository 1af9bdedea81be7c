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
// of the object. policy-server's payload has the object near its start, and userInfo, whose groups the
// stamp is made of, after it (the groups are copied first).
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

// An edit that inserts and then removes more than it inserted, written over its own text from the start:
// the insertion pushes the text after it towards the end, over text that is still to be read, unless that
// text is moved first. writeOver moves the pieces that go towards the start in order and the others in
// reverse order, so every piece is read before anything overwrites it.
func TestEditWriteOver_InsertThenRemove(t *testing.T) {
	buf := []byte(`{"k":1,"a":"0123456789abcdefghij","b":1}`)
	text := unsafe.String(unsafe.SliceData(buf), len(buf))
	e := edit{doc: text, span: span{start: 1, end: 1, parts: []part{{text: `"new":true,`}}},
		more: []span{{start: 7, end: 34}}}
	want := `{"new":true,"k":1,"b":1}`
	if e.Len() != len(want) {
		t.Fatalf("Len %d, want %d", e.Len(), len(want))
	}
	if end := e.writeOver(buf, 0); string(buf[:end]) != want {
		t.Fatalf("wrote %s, want %s", buf[:end], want)
	}
}

// A stamp longer than the text before the object (the object moves towards the end after the stamp, and
// towards the start before it), with parts that are views of the buffer behind the object (the groups,
// escaped): the answer is the one written into a buffer of its own.
func TestEditWriteOver_MovesTextBothWays(t *testing.T) {
	payload := `{"x":1,"object":{"metadata":{"name":"p"},"spec":{"a":"0123456789"}},"groups":["devops","ops"],"pad":"................................................................................"}`
	buf := []byte(payload)
	text := unsafe.String(unsafe.SliceData(buf), len(buf))
	obj := strings.Index(payload, `{"metadata"`)
	groups := text[strings.Index(payload, `["devops"`):strings.Index(payload, `,"pad"`)]
	doc := text[obj:strings.Index(payload, `,"groups"`)]
	meta := strings.Index(doc, `"name"`)
	e := edit{doc: doc, span: span{start: meta, end: meta, parts: []part{
		{text: `"annotations":{"user.info":"{\"groups\":`}, {text: groups, quotes: strings.Count(groups, `"`)}, {text: `}"},`}}}}
	want := "HEAD" + string(e.appendTo(nil))
	if !strings.Contains(want, `"annotations":{"user.info":"{\"groups\":[\"devops\",\"ops\"]}"},"name":"p"`) {
		t.Fatalf("the test's edit is wrong: %s", want)
	}
	end := e.writeOver(buf, 4)
	copy(buf, "HEAD")
	if got := string(buf[:end]); got != want {
		t.Fatalf("over the buffer: %s\nown buffer:       %s", got, want)
	}
}

// FuzzEditWriteOver: for any edit of a document that is a view of a buffer (spans that keep, replace,
// insert and remove text; parts that are literals or views of anywhere in the buffer, some written with
// their quotes escaped), writing it over the buffer after a response head, when it fits, gives the bytes
// writing it into a buffer of its own gives. A wrong answer here would be a wrong identity in the stamp.
func FuzzEditWriteOver(f *testing.F) {
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
		if at+e.Len() > len(data) {
			return // does not fit: written into a buffer of its own (appendTo, compared above)
		}
		end := e.writeOver(data, at)
		copy(data, prefix)
		if got := string(data[:end]); got != want {
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
