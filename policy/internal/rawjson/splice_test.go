package rawjson

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// An edit that inserts and then removes more than it inserted, written over its own text from the start:
// the insertion pushes the text after it towards the end, over text that is still to be read, unless that
// text is moved first. WriteOver moves the pieces that go towards the start in order and the others in
// reverse order, so every piece is read before anything overwrites it.
func TestEditWriteOver_InsertThenRemove(t *testing.T) {
	buf := []byte(`{"k":1,"a":"0123456789abcdefghij","b":1}`)
	text := View(buf)
	e := Edit{Doc: text, Span: Span{Start: 1, End: 1, Parts: []Part{{Text: `"new":true,`}}},
		More: []Span{{Start: 7, End: 34}}}
	want := `{"new":true,"k":1,"b":1}`
	if e.Len() != len(want) {
		t.Fatalf("Len %d, want %d", e.Len(), len(want))
	}
	if end := e.WriteOver(buf, 0); string(buf[:end]) != want {
		t.Fatalf("wrote %s, want %s", buf[:end], want)
	}
}

// A stamp longer than the text before the object (the object moves towards the end after the stamp, and
// towards the start before it), with parts that are views of the buffer behind the object (the groups,
// escaped): the answer is the one written into a buffer of its own.
func TestEditWriteOver_MovesTextBothWays(t *testing.T) {
	payload := `{"x":1,"object":{"metadata":{"name":"p"},"spec":{"a":"0123456789"}},"groups":["devops","ops"],"pad":"................................................................................"}`
	buf := []byte(payload)
	text := View(buf)
	obj := strings.Index(payload, `{"metadata"`)
	groups := text[strings.Index(payload, `["devops"`):strings.Index(payload, `,"pad"`)]
	doc := text[obj:strings.Index(payload, `,"groups"`)]
	meta := strings.Index(doc, `"name"`)
	e := Edit{Doc: doc, Span: Span{Start: meta, End: meta, Parts: []Part{
		{Text: `"annotations":{"user.info":"{\"groups\":`}, {Text: groups, Quotes: strings.Count(groups, `"`)}, {Text: `}"},`}}}}
	want := "HEAD" + string(e.AppendTo(nil))
	if !strings.Contains(want, `"annotations":{"user.info":"{\"groups\":[\"devops\",\"ops\"]}"},"name":"p"`) {
		t.Fatalf("the test's edit is wrong: %s", want)
	}
	end := e.WriteOver(buf, 4)
	copy(buf, "HEAD")
	if got := string(buf[:end]); got != want {
		t.Fatalf("over the buffer: %s\nown buffer:       %s", got, want)
	}
}

// An edit of thousands of spans (a stamp in every worker group of a RayCluster) is written over its
// buffer with no allocation: where each piece of the text goes is computed as it is moved, not recorded.
func TestEditWriteOver_AllocatesNothing(t *testing.T) {
	group := `{"template":{"metadata":{}}},`
	payload := `{"groups":[` + strings.Repeat(group, 4000) + `{}]}`
	var spans []Span
	for at := strings.Index(payload, `{}}`); at >= 0; {
		spans = append(spans, Span{Start: at + 1, End: at + 1, Parts: []Part{{Text: `"annotations":{"k":"v"}`}}})
		next := strings.Index(payload[at+1:], `{}}`)
		if next < 0 {
			break
		}
		at += 1 + next
	}
	want := string(Edit{Doc: payload, Span: spans[0], More: spans[1:]}.AppendTo(nil))
	buf := make([]byte, len(payload), len(want))
	allocs := testing.AllocsPerRun(3, func() {
		copy(buf, payload)
		e := Edit{Doc: View(buf), Span: spans[0], More: spans[1:]}
		if end := e.WriteOver(buf[:cap(buf)], 0); string(buf[:end]) != want {
			t.Fatalf("wrote %.100s..., want %.100s...", buf[:end], want)
		}
	})
	if allocs != 0 {
		t.Errorf("WriteOver of %d spans allocates %.0f times, want 0", len(spans), allocs)
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
		want := prefix + string(fuzzEdit(bytes.Clone(data), rand.New(rand.NewPCG(seed, uint64(len(data))))).AppendTo(nil))
		if e.Len() != len(want)-at {
			t.Fatalf("Len %d, wrote %d", e.Len(), len(want)-at)
		}
		if at+e.Len() > len(data) {
			return // does not fit: written into a buffer of its own (appendTo, compared above)
		}
		end := e.WriteOver(data, at)
		copy(data, prefix)
		if got := string(data[:end]); got != want {
			t.Fatalf("over the buffer: %q\nown buffer:       %q", got, want)
		}
	})
}

// fuzzEdit builds an edit of a random view of buf: up to four spans in order, each replacing its text
// (possibly none) by up to three parts, each a literal or a view of a random range of buf, escaped or not.
func fuzzEdit(buf []byte, rng *rand.Rand) Edit {
	text := View(buf)
	a := rng.IntN(len(text))
	b := a + rng.IntN(len(text)-a+1)
	e := Edit{Doc: text[a:b]}
	cuts := make([]int, 2*rng.IntN(5))
	for i := range cuts {
		cuts[i] = rng.IntN(len(e.Doc) + 1)
	}
	slices.Sort(cuts)
	for i := 0; i < len(cuts); i += 2 {
		s := Span{Start: cuts[i], End: cuts[i+1]}
		if rng.IntN(3) == 0 {
			s.End = s.Start // an insertion
		}
		for range rng.IntN(4) {
			var p Part
			if rng.IntN(2) == 0 {
				p.Text = `"lit":"` + strings.Repeat("x", rng.IntN(40)) + `",`
			} else {
				from := rng.IntN(len(text))
				p.Text = text[from : from+rng.IntN(len(text)-from+1)]
			}
			if rng.IntN(2) == 0 {
				p.Quotes = strings.Count(p.Text, `"`)
			}
			s.Parts = append(s.Parts, p)
		}
		if i == 0 {
			e.Span = s
		} else {
			e.More = append(e.More, s)
		}
	}
	return e
}

func TestQuotedLen_IsTheLengthQuoteWrites(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "\t\r\n\x01", "<&>", "é\u2028\u2029x", `{"user":"<\"é\u2028>"}`} {
		if got, want := QuotedLen(s), len(Quote(s))-2; got != want {
			t.Errorf("QuotedLen(%q) = %d, Quote writes %d", s, got, want)
		}
	}
}
