package rawjson

import (
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mailru/easyjson/buffer"
	"github.com/mailru/easyjson/jwriter"
	"github.com/tidwall/gjson"
)

// Every function here takes an object Result found by walking the document with gjson from its root, so
// Result.Index is the byte offset of the value in the document.

// Root returns the root object of a document for walking with Child.
func Root(text string) gjson.Result {
	return gjson.Result{Type: gjson.JSON, Raw: text}
}

// IsMissing reports a member that is absent or JSON null: a change creates it either way.
func IsMissing(v gjson.Result) bool { return !v.Exists() || v.Type == gjson.Null }

// Quote encodes s as a JSON string with Go's escaping.
func Quote(s string) string {
	if !needsEscape(s) {
		return `"` + s + `"`
	}
	w := jwriter.Writer{Buffer: buffer.Buffer{Buf: make([]byte, 0, len(s)+16)}}
	w.String(s)
	out := w.Buffer.BuildBytes()
	return unsafe.String(unsafe.SliceData(out), len(out)) // out is ours and never written again
}

// QuotedLen is len(Quote(s)) - 2, the length of s written inside a JSON string, without writing it; s is
// valid UTF-8.
func QuotedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\t' || c == '\r' || c == '\n':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9): // U+2028, U+2029
			n += 3
			i += 2
		}
	}
	return n
}

// needsEscape reports whether Go's encoding/json would escape anything in s (or replace invalid UTF-8).
func needsEscape(s string) bool {
	for i := range len(s) {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

// RemoveMember returns doc without obj[key] and one separating comma.
func RemoveMember(x *Index, doc string, obj gjson.Result, key string) Edit {
	k, v, _ := x.member(obj, key)
	if !v.Exists() {
		return Edit{Doc: doc}
	}
	start, end := k.Index, v.Index+len(v.Raw)
	if after := skipSpace(doc, end); after < len(doc) && doc[after] == ',' {
		end = after + 1
	} else if before := skipSpaceBack(doc, start); before > 0 && doc[before-1] == ',' {
		start = before - 1
	}
	return Edit{Doc: doc, Span: Span{Start: start, End: end}}
}

// Edit is Doc with its Span replaced, and each of More (after it, in order, not overlapping) too; it is
// written straight into the response, never assembled on its own.
type Edit struct {
	Doc string
	Span
	More []Span
}

// Span is one replacement of doc[start:end] by the concatenation of parts.
type Span struct {
	Start, End int
	Parts      []Part
}

// Part is a piece of the text written in place of a span: Text as it is, or, when Quotes > 0, Text with
// each of its Quotes quotes escaped as \", so that a payload's array of strings is written inside a
// string without a copy.
type Part struct {
	Text   string
	Quotes int
}

// Texts appends each of ss to parts, as a part written as it is.
func Texts(parts []Part, ss ...string) []Part {
	for _, s := range ss {
		parts = append(parts, Part{Text: s})
	}
	return parts
}

// AppendTo appends the part's JSON text to out. WriteOver relies on it writing within out's capacity,
// from len(out) to len(out)+len(text)+quotes, whenever that capacity is enough.
func (p Part) AppendTo(out []byte) []byte {
	if p.Quotes == 0 {
		return append(out, p.Text...)
	}
	return appendQuotesEscaped(out, p.Text, p.Quotes)
}

// appendQuotesEscaped appends s, which holds quotes quotes, with each quote escaped as \", eight bytes at
// a time: each word is stored whole, then written again from its first quote on.
func appendQuotesEscaped(out []byte, s string, quotes int) []byte {
	n := len(out)
	buf := slices.Grow(out, len(s)+quotes)[:n+len(s)+quotes]
	i := 0
	// A word stored at n stays within what this part writes: s[i:] becomes at least len(s)-i >= 8 bytes.
	for i+8 <= len(s) {
		w := load64(s, i)
		store64(buf, n, w)
		if m := hasByte(w, '"'); m != 0 {
			k := firstFlagged(m)
			buf[n+k], buf[n+k+1] = '\\', '"'
			i, n = i+k+1, n+k+2
			continue
		}
		i, n = i+8, n+8
	}
	for ; i < len(s); i++ {
		if s[i] == '"' {
			buf[n] = '\\'
			n++
		}
		buf[n] = s[i]
		n++
	}
	return buf[:n]
}

// Changed reports whether the edit holds a document (the zero edit means "no mutation").
func (e Edit) Changed() bool { return e.Doc != "" }

// Len is the length of the edited document.
func (e Edit) Len() int {
	n := len(e.Doc) + e.delta()
	for _, s := range e.More {
		n += s.delta()
	}
	return n
}

func (s Span) delta() int {
	n := s.Start - s.End
	for _, p := range s.Parts {
		n += len(p.Text) + p.Quotes
	}
	return n
}

// String returns the edited document, in one allocation.
func (e Edit) String() string {
	out := e.AppendTo(make([]byte, 0, e.Len()))
	return unsafe.String(unsafe.SliceData(out), len(out)) // out is ours and never written again
}

// AppendTo appends the edited document to out.
func (e Edit) AppendTo(out []byte) []byte {
	at := 0
	for k := range e.spanCount() {
		s := e.span(k)
		out = append(out, e.Doc[at:s.Start]...)
		for _, p := range s.Parts {
			out = p.AppendTo(out)
		}
		at = s.End
	}
	return append(out, e.Doc[at:]...)
}

// WriteOver writes the edited document into buf at offset at, buf being the payload the document was read
// from (or any buffer), and returns the offset after it. The caller has checked that it fits
// (at+e.Len() <= len(buf)); no byte of the document is read after it was overwritten.
func (e *Edit) WriteOver(buf []byte, at int) int {
	b := unsafe.String(unsafe.SliceData(buf), len(buf))
	for k := range e.spanCount() {
		parts := e.span(k).Parts // the decision's own: a copy replaces the view for the writing
		for j := range parts {
			if OffsetIn(b, parts[j].Text) >= 0 {
				parts[j].Text = strings.Clone(parts[j].Text)
			}
		}
	}
	// The kept text moves in two passes with memmove semantics: the pieces that move towards the start, in
	// order (each lands before every later piece's text), then those that move towards the end, in reverse
	// (each lands after every earlier one's); the parts last. Offsets are computed, not recorded.
	last := e.spanCount()
	base := OffsetIn(b, e.Doc) // where the document's text is in buf (-1: elsewhere, read in any order)
	o := at
	for k := 0; k <= last; k++ {
		p := e.keptAt(k)
		if base < 0 || o <= base+p.from {
			copy(buf[o:], e.Doc[p.from:p.to])
		}
		if o += p.to - p.from; k < last {
			o += e.span(k).written()
		}
	}
	end := o
	for k := last; k >= 0 && base >= 0; k-- {
		p := e.keptAt(k)
		if o -= p.to - p.from; o > base+p.from {
			copy(buf[o:], e.Doc[p.from:p.to])
		}
		if k > 0 {
			o -= e.span(k - 1).written()
		}
	}
	o = at
	for k := range last {
		p := e.keptAt(k)
		o += p.to - p.from
		for _, part := range e.span(k).Parts {
			o += len(part.AppendTo(buf[o:o])) // within buf: the caller checked that the document fits
		}
	}
	return end
}

// kept is the text doc[from:to] an edit keeps between two spans (or before the first, or after the last).
type kept struct{ from, to int }

// keptAt returns the text kept before span k, or after the last span for k = spanCount().
func (e *Edit) keptAt(k int) kept {
	p := kept{to: len(e.Doc)}
	if k > 0 {
		p.from = e.span(k - 1).End
	}
	if k < e.spanCount() {
		p.to = e.span(k).Start
	}
	return p
}

// written is the length of the text s writes in place of its own.
func (s *Span) written() int { return s.delta() + s.End - s.Start }

// spanCount is the number of the edit's spans: its Span and each of More.
func (e *Edit) spanCount() int { return len(e.More) + 1 }

// span returns the edit's span k in document order: its Span for 0, then More[k-1].
func (e *Edit) span(k int) *Span {
	if k == 0 {
		return &e.Span
	}
	return &e.More[k-1]
}
