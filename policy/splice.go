package policy

import (
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mailru/easyjson/buffer"
	"github.com/mailru/easyjson/jwriter"
	"github.com/tidwall/gjson"
)

// The mutation is a splice of the raw JSON text (docs/rules.md "Host protocol"): a typed decode and re-encode
// would drop fields such as `replicas: 0` or `allowPrivilegeEscalation: false`, and the host's diff would
// then remove them from the object. Every function here takes an object Result found by walking the
// document with gjson from its root, so Result.Index is the byte offset of the value in the document.

// docRoot returns the root object of a document for walking with member.
func docRoot(text string) gjson.Result {
	return gjson.Result{Type: gjson.JSON, Raw: text}
}

// isMissing reports a member that is absent or JSON null: both mean "create it" (docs/rules.md "Words": stamp).
func isMissing(v gjson.Result) bool { return !v.Exists() || v.Type == gjson.Null }

// jsonString encodes s as a JSON string with Go's escaping.
func jsonString(s string) string {
	if !needsEscape(s) {
		return `"` + s + `"`
	}
	w := jwriter.Writer{Buffer: buffer.Buffer{Buf: make([]byte, 0, len(s)+16)}}
	w.String(s)
	out := w.Buffer.BuildBytes()
	return unsafe.String(unsafe.SliceData(out), len(out)) // out is ours and never written again
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

// setMember returns doc with obj[key] set to the JSON text made of valueParts: the existing value's bytes
// are replaced, or the member is inserted first in the object. Nothing else in doc changes.
func setMember(x *jsonIndex, doc string, obj gjson.Result, key string, valueParts []part) edit {
	_, old, _ := x.member(obj, key)
	return putMember(x, doc, obj, key, old, valueParts)
}

// putMember is setMember for a caller that already holds obj[key] (old, absent when there is none).
func putMember(x *jsonIndex, doc string, obj gjson.Result, key string, old gjson.Result, valueParts []part) edit {
	if old.Exists() {
		return edit{doc: doc, span: span{start: old.Index, end: old.Index + len(old.Raw), parts: valueParts}}
	}
	open := obj.Index + 1 // just after '{'
	parts := append(texts(make([]part, 0, len(valueParts)+3), jsonString(key), ":"), valueParts...)
	if x.hasMembers(obj) {
		parts = texts(parts, ",")
	}
	return edit{doc: doc, span: span{start: open, end: open, parts: parts}}
}

// setPath sets the nested member path (the last element is the key, the rest are objects) below obj to
// valueJSON, creating the objects that are missing or null. The caller has checked that present ones are
// objects.
func setPath(x *jsonIndex, doc string, obj gjson.Result, path []string, valueJSON string) edit {
	for i, key := range path[:len(path)-1] {
		_, next, _ := x.member(obj, key)
		if isMissing(next) {
			// {"b":{"c":value}} for the rest of the path [b c].
			parts := make([]part, 0, 3*len(path))
			for _, k := range path[i+1:] {
				parts = texts(parts, "{", jsonString(k), ":")
			}
			parts = texts(parts, valueJSON, strings.Repeat("}", len(path)-i-1))
			return setMember(x, doc, obj, key, parts)
		}
		obj = next
	}
	return setMember(x, doc, obj, path[len(path)-1], texts(nil, valueJSON))
}

// removeMember returns doc without obj[key] and one separating comma.
func removeMember(x *jsonIndex, doc string, obj gjson.Result, key string) edit {
	k, v, _ := x.member(obj, key)
	if !v.Exists() {
		return edit{doc: doc}
	}
	start, end := k.Index, v.Index+len(v.Raw)
	if after := skipSpace(doc, end); after < len(doc) && doc[after] == ',' {
		end = after + 1
	} else if before := skipSpaceBack(doc, start); before > 0 && doc[before-1] == ',' {
		start = before - 1
	}
	return edit{doc: doc, span: span{start: start, end: end}}
}

// edit is a document with doc[start:end] replaced by parts, and with each of more (after it, in order, not
// overlapping) applied too. It is kept in pieces, and written straight into the response, so that a large
// object is not copied once more on its way out.
type edit struct {
	doc string
	span
	more []span
}

// span is one replacement of doc[start:end] by the concatenation of parts.
type span struct {
	start, end int
	parts      []part
}

// part is a piece of the JSON text written in place of a span: text as it is, or, when quotes > 0, text
// written inside a JSON string, each of its quotes (quotes is how many there are) escaped as \". The
// second kind is the requester's groups array in the stamp (stampJSON), spliced straight from the
// payload: for a user in 20,000 groups a copy would be ~750 KB more memory, and a heap growth with it.
type part struct {
	text   string
	quotes int
}

// texts appends each of ss to parts, as a part written as it is.
func texts(parts []part, ss ...string) []part {
	for _, s := range ss {
		parts = append(parts, part{text: s})
	}
	return parts
}

// appendTo appends the part's JSON text to out. writeOver relies on it writing within out's capacity,
// from len(out) to len(out)+len(text)+quotes, whenever that capacity is enough.
func (p part) appendTo(out []byte) []byte {
	if p.quotes == 0 {
		return append(out, p.text...)
	}
	return appendQuotesEscaped(out, p.text, p.quotes)
}

// appendQuotesEscaped appends s, which holds quotes quotes, with each quote escaped as \". The stamp of a
// user in 20,000 groups is 40,000 quotes in ~750 KB, so it goes eight bytes at a time: each word is
// stored whole, and from its first quote on it is written again (TinyGo's strings.IndexByte reads a byte
// at a time, and an append per group is a runtime call).
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

// changed reports whether the edit holds a document (the zero edit means "no mutation").
func (e edit) changed() bool { return e.doc != "" }

// Len is the length of the edited document.
func (e edit) Len() int {
	n := len(e.doc) + e.delta()
	for _, s := range e.more {
		n += s.delta()
	}
	return n
}

func (s span) delta() int {
	n := s.start - s.end
	for _, p := range s.parts {
		n += len(p.text) + p.quotes
	}
	return n
}

// String returns the edited document, in one allocation.
func (e edit) String() string {
	out := e.appendTo(make([]byte, 0, e.Len()))
	return unsafe.String(unsafe.SliceData(out), len(out)) // out is ours and never written again
}

// appendTo appends the edited document to out.
func (e edit) appendTo(out []byte) []byte {
	at := 0
	for i := -1; i < len(e.more); i++ {
		s := e.spanAt(i)
		out = append(out, e.doc[at:s.start]...)
		for _, p := range s.parts {
			out = p.appendTo(out)
		}
		at = s.end
	}
	return append(out, e.doc[at:]...)
}

// writeOver writes the edited document into buf at offset at, where buf is the payload the document was
// read from (or any buffer), and returns the offset after it; the caller has checked that it fits
// (at+e.Len() <= len(buf)) and writes the rest of the response around it afterwards. The pieces of the
// document that are views of buf are moved without being read after anything overwrote them: first the
// pieces that move towards the start, in order (each one's destination ends before the text of every
// later piece), then those that move towards the end, in reverse order (each one's destination starts
// after the text of every earlier piece), each with memmove semantics; the parts are written last, from
// copies when they are views of buf (a stamp's groups). One move of the object, wherever the stamp goes.
func (e *edit) writeOver(buf []byte, at int) int {
	b := unsafe.String(unsafe.SliceData(buf), len(buf))
	for i := -1; i < len(e.more); i++ {
		parts := e.spanAt(i).parts // the decision's own: a copy replaces the view for the writing
		for j := range parts {
			if offsetIn(b, parts[j].text) >= 0 {
				parts[j].text = strings.Clone(parts[j].text)
			}
		}
	}
	// The pieces of the document between the spans, and where each goes.
	pieces := make([]piece, 0, len(e.more)+2)
	o, pos := at, 0
	for i := -1; i < len(e.more); i++ {
		s := e.spanAt(i)
		pieces = append(pieces, piece{from: pos, to: s.start, at: o})
		o += s.end - pos + s.delta()
		pos = s.end
	}
	pieces = append(pieces, piece{from: pos, to: len(e.doc), at: o})
	base := offsetIn(b, e.doc) // where the document's text is in buf (-1: elsewhere, read in any order)
	for _, p := range pieces {
		if base < 0 || p.at <= base+p.from {
			copy(buf[p.at:], e.doc[p.from:p.to])
		}
	}
	for k := len(pieces) - 1; k >= 0 && base >= 0; k-- {
		if p := pieces[k]; p.at > base+p.from {
			copy(buf[p.at:], e.doc[p.from:p.to])
		}
	}
	for i := -1; i < len(e.more); i++ {
		p := pieces[i+1]
		o := p.at + p.to - p.from
		for _, part := range e.spanAt(i).parts {
			o += len(part.appendTo(buf[o:o])) // within buf: the caller checked that the document fits
		}
	}
	last := pieces[len(pieces)-1]
	return last.at + last.to - last.from
}

// piece is the text doc[from:to] of an edited document, written at offset at.
type piece struct{ from, to, at int }

// spanAt returns the edit's span i, -1 being the first.
func (e *edit) spanAt(i int) *span {
	if i < 0 {
		return &e.span
	}
	return &e.more[i]
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func skipSpaceBack(s string, i int) int {
	for i > 0 && isSpace(s[i-1]) {
		i--
	}
	return i
}

// isSpace reports JSON whitespace: one comparison for the bytes of text, a bit test for the rest.
func isSpace(c byte) bool {
	return c <= ' ' && uint64(1)<<c&(1<<' '|1<<'\t'|1<<'\n'|1<<'\r') != 0
}

// edits collects changes to the maps walker found in one document, so that every target is spliced in
// one pass: settings refuse paths whose maps nest (annotationPath.inside) and a map is one target however
// many paths name it, so the changes touch disjoint bytes, except where two maps are created below the
// same missing object or inserted into the same object; those are merged into one span. The text of a
// change is the same for every target whose missing segments and value are the same (the stamp, below
// each of 16,000 templates): it is made once and shared by their spans.
type edits struct {
	doc   string
	index *jsonIndex // of the document doc is part of, or nil
	sets  []setOp
	more  []span // removals
}

// setOp sets the annotation below obj, creating rest (rest[0] is old in obj: absent or null; with no
// rest, old is the value to replace, or absent) to value.
type setOp struct {
	obj   jspan
	rest  []segment
	old   jspan
	value []part
}

// set sets the annotation in the map ref names to valueJSON, creating the map (and what is missing above
// it, below the deepest object that exists) when needed.
func (e *edits) set(ref *cref, valueJSON []part) {
	old := ref.value
	if len(ref.rest) > 0 {
		old = ref.old
	}
	e.sets = append(e.sets, setOp{obj: ref.holder, rest: ref.rest, old: old, value: valueJSON})
}

// remove deletes the annotation from the map ref names (which holds it).
func (e *edits) remove(ref *cref) {
	e.more = append(e.more, removeMember(e.index, e.doc, ref.m.result(e.doc), AnnotationKey).span)
}

// names is the set's names below obj: rest, then the annotation.
func (s *setOp) names() []string {
	names := make([]string, 0, len(s.rest)+1)
	for _, seg := range s.rest {
		names = append(names, seg.name)
	}
	return append(names, AnnotationKey)
}

// below is the names of the set below the object's member: for an insertion every name, for a replaced
// value the names inside it.
func (s *setOp) below() []string {
	if s.old.exists() {
		return s.names()[1:]
	}
	return s.names()
}

// nested appends {"n1":{"n2":value}} for names (value alone when there are none) to parts.
func nested(parts []part, names []string, value []part) []part {
	for _, n := range names {
		parts = texts(quoted(texts(parts, "{"), n), ":")
	}
	parts = append(parts, value...)
	if len(names) > 0 {
		parts = texts(parts, strings.Repeat("}", len(names)))
	}
	return parts
}

// quoted appends name as a JSON string: path names need no escaping (parsePath admits letters, digits, _
// and -), so the quotes are parts of their own and nothing is allocated; the annotation key is quoted once.
func quoted(parts []part, name string) []part {
	if name == AnnotationKey {
		return texts(parts, quotedAnnotationKey)
	}
	return texts(parts, `"`, name, `"`)
}

// tree is a JSON object to write: members in the order they were added, each a value or a subtree.
type tree struct {
	names []string
	value [][]part // JSON text of a leaf member; nil for a subtree
	kids  []*tree
}

func (t *tree) add(names []string, value []part) {
	if len(names) == 0 {
		return // not reached: a value is replaced by one change only (result)
	}
	for i, n := range t.names {
		if n == names[0] && len(names) > 1 && t.kids[i] != nil {
			t.kids[i].add(names[1:], value)
			return
		}
	}
	t.names = append(t.names, names[0])
	if len(names) == 1 {
		t.value, t.kids = append(t.value, value), append(t.kids, nil)
		return
	}
	kid := &tree{}
	kid.add(names[1:], value)
	t.value, t.kids = append(t.value, nil), append(t.kids, kid)
}

// members appends the tree's members, separated by commas, without braces.
func (t *tree) members(parts []part) []part {
	for i, n := range t.names {
		if i > 0 {
			parts = texts(parts, ",")
		}
		parts = texts(quoted(parts, n), ":")
		if t.kids[i] == nil {
			parts = append(parts, t.value[i]...)
			continue
		}
		parts = texts(parts, "{")
		parts = t.kids[i].members(parts)
		parts = texts(parts, "}")
	}
	return parts
}

// sharedText identifies the text of a change that does not depend on where it goes: the segments to
// create (a view of one path's), the value (a view of its parts) and the form of the change.
type sharedText struct {
	rest          *segment
	restLen       int
	value         *part
	valueLen      int
	insert, comma bool
}

// group is one span: members inserted into an object (at its '{'), or a value replaced (a null by the
// objects created below it, or a string by the new value). Most groups hold one change, written
// directly; only changes that meet below the same object are merged through a tree.
type group struct {
	obj, old jspan // old is absent for an insertion
	// first is the number of the group's first set: an index, not a pointer, because a pointer into the
	// middle of the large sets array costs TinyGo's collector a walk back to the array's start (cref).
	first int
	t     *tree
}

// groups gathers the sets into groups. The sets come in document order (the targets are sorted by
// place), so the changes of one group are next to each other: each set joins the group before it or
// starts one. Were two sets of one group apart, their spans would overlap and the answer would be bad
// input, never a wrong splice.
func (e *edits) groups() ([]group, string) {
	groups := make([]group, 0, len(e.sets))
	for i := range e.sets {
		s := &e.sets[i]
		if n := len(groups); n == 0 || groups[n-1].obj.at != s.obj.at || groups[n-1].old.at != s.old.at {
			groups = append(groups, group{obj: s.obj, old: s.old, first: i})
			continue
		}
		g := &groups[len(groups)-1]
		first := &e.sets[g.first]
		if len(s.below()) == 0 || len(first.below()) == 0 {
			// Two changes of one value: walker names each map once, so this is not reached; were it,
			// the answer is bad input, never a trap.
			return nil, overlappingChanges
		}
		if g.t == nil {
			g.t = &tree{}
			g.t.add(first.below(), first.value)
		}
		g.t.add(s.below(), s.value)
	}
	return groups, ""
}

const overlappingChanges = "two annotation paths change the same part of the object"

// sharedTexts holds the texts of changes made so far. A handful serve every group (one per path that
// creates, with and without a comma): a short list, searched from the last one used, costs less than a
// hash table in the module.
type sharedTexts struct {
	keys  []sharedText
	texts [][]part
}

// of returns the text of a group's one change, made once for all the groups that write the same.
func (st *sharedTexts) of(s *setOp, insert, comma bool) []part {
	key := sharedText{restLen: len(s.rest), valueLen: len(s.value), insert: insert, comma: comma}
	if len(s.rest) > 0 {
		key.rest = &s.rest[0]
	}
	if len(s.value) > 0 {
		key.value = &s.value[0]
	}
	for k := len(st.keys) - 1; k >= 0; k-- {
		if st.keys[k] == key {
			return st.texts[k]
		}
	}
	parts := s.text(insert, comma)
	if len(st.keys) < 8 {
		st.keys, st.texts = append(st.keys, key), append(st.texts, parts)
	}
	return parts
}

// text is the JSON text of a group whose changes were merged through a tree.
func (g *group) text(insert, comma bool) []part {
	parts := g.t.members(nil)
	switch {
	case !insert:
		return texts(append(texts(nil, "{"), parts...), "}")
	case comma:
		return texts(parts, ",")
	}
	return parts
}

// result builds the edit; a problem means two changes would touch the same bytes (settings rule that out).
func (e *edits) result() (edit, string) {
	groups, problem := e.groups()
	if problem != "" {
		return edit{}, problem
	}
	spans := append(make([]span, 0, len(groups)+len(e.more)), e.more...)
	var shared sharedTexts
	for i := range groups {
		g := &groups[i]
		insert := !g.old.exists()
		comma := insert && e.index.hasMembers(g.obj.result(e.doc))
		var parts []part
		if g.t == nil {
			parts = shared.of(&e.sets[g.first], insert, comma)
		} else {
			parts = g.text(insert, comma)
		}
		if !insert {
			spans = append(spans, span{start: int(g.old.at), end: int(g.old.at + g.old.n), parts: parts})
			continue
		}
		spans = append(spans, span{start: int(g.obj.at) + 1, end: int(g.obj.at) + 1, parts: parts})
	}
	if len(spans) == 0 {
		return edit{}, ""
	}
	sortSpans(spans)
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return edit{}, overlappingChanges
		}
	}
	return edit{doc: e.doc, span: spans[0], more: spans[1:]}, ""
}

// text is the JSON text one change writes: a member inserted at an object's '{' ("name":{...}, followed
// by a comma when the object has members), or the value that replaces old.
func (s *setOp) text(insert, comma bool) []part {
	names := s.names()
	parts := make([]part, 0, 3*len(names)+len(s.value)+3)
	if insert {
		parts = nested(texts(quoted(parts, names[0]), ":"), names[1:], s.value)
		if comma {
			parts = texts(parts, ",")
		}
		return parts
	}
	return nested(parts, names[1:], s.value)
}

// sortSpans orders spans by start (an insertion before a replacement that starts at the same byte).
func sortSpans(spans []span) {
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.end - b.end
	})
}
