package policy

import (
	"slices"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// edits collects the changes to one document's target maps, spliced in one pass; changes below one object
// are merged into one span. An Evaluator's edits keep their room for the next evaluation (reset).
type edits struct {
	doc    string
	index  *rawjson.Index // of the document doc is part of, or nil
	writes []keyWrite
	more   []rawjson.Span // removals
	// sites and spans are what result made last: their room is reused by the next result.
	sites []site
	spans []rawjson.Span
}

// reset readies e for the changes to doc, with room for n writes.
func (e *edits) reset(doc string, index *rawjson.Index, n int) {
	e.doc, e.index, e.more = doc, index, nil
	e.writes = emptied(e.writes, n)
}

// forget drops e's views of the last document, keeping the room its records took.
func (e *edits) forget() { e.doc, e.index, e.more = "", nil, nil }

// reserve gives e room for writes, sites and spans.
func (e *edits) reserve(writes, sites, spans int) {
	e.writes = emptied(e.writes, writes)
	e.sites = emptied(e.sites, sites)
	e.spans = emptied(e.spans, spans)
}

// emptied returns s emptied, with room for n elements (a new slice when s has less). Its elements are
// zeroed first: they may point at the last evaluation's garbage, which they would keep alive.
func emptied[T any](s []T, n int) []T {
	clear(s)
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// keyWrite sets key below obj to value, creating rest first (rest[0] is old in obj: absent or null;
// with no rest, old is the value replaced, or absent).
type keyWrite struct {
	obj   rawjson.Ref
	rest  []walk.Segment
	old   rawjson.Ref
	key   string // the annotation, or the legacy label
	value []rawjson.Part
}

// set sets key in the map ref names to valueJSON, creating the map and what is missing above it.
func (e *edits) set(ref *walk.Ref, key string, valueJSON []rawjson.Part) {
	e.writes = append(e.writes, keyWrite{obj: ref.Holder(), rest: ref.RestSegments(), old: ref.Entry, key: key, value: valueJSON})
}

// replace sets key, whose value old is in the map ref names, to a value the caller fills in later at the
// index in e.writes it returns.
func (e *edits) replace(ref *walk.Ref, key string, old rawjson.Ref) int {
	e.writes = append(e.writes, keyWrite{obj: ref.Map(), old: old, key: key})
	return len(e.writes) - 1
}

// remove deletes key from the map ref names (which holds it).
func (e *edits) remove(ref *walk.Ref, key string) {
	e.more = append(e.more, rawjson.RemoveMember(e.index, e.doc, ref.Map().Result(e.doc), key).Span)
}

// names is the write's names below obj: rest, then the key.
func (s *keyWrite) names() []string {
	names := make([]string, 0, len(s.rest)+1)
	for _, seg := range s.rest {
		names = append(names, seg.Name)
	}
	return append(names, s.key)
}

// below is the write's names below the object's member.
func (s *keyWrite) below() []string {
	if s.old.Exists() {
		return s.names()[1:]
	}
	return s.names()
}

// nested appends {"n1":{"n2":value}} for names (value alone when there are none) to parts.
func nested(parts []rawjson.Part, names []string, value []rawjson.Part) []rawjson.Part {
	for _, n := range names {
		parts = rawjson.Texts(quoted(rawjson.Texts(parts, "{"), n), ":")
	}
	parts = append(parts, value...)
	if len(names) > 0 {
		parts = rawjson.Texts(parts, strings.Repeat("}", len(names)))
	}
	return parts
}

// quoted appends name as a JSON string; a path name needs no escaping, so nothing is allocated for it.
func quoted(parts []rawjson.Part, name string) []rawjson.Part {
	switch {
	case name == AnnotationKey:
		return rawjson.Texts(parts, quotedAnnotationKey)
	case !walk.IsPathName(name):
		return rawjson.Texts(parts, rawjson.Quote(name))
	}
	return rawjson.Texts(parts, `"`, name, `"`)
}

// tree is a JSON object to write: members in the order they were added, each a value or a subtree.
type tree struct {
	names []string
	value [][]rawjson.Part // JSON text of a leaf member; nil for a subtree
	kids  []*tree
}

func (t *tree) add(names []string, value []rawjson.Part) {
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
func (t *tree) members(parts []rawjson.Part) []rawjson.Part {
	for i, n := range t.names {
		if i > 0 {
			parts = rawjson.Texts(parts, ",")
		}
		parts = rawjson.Texts(quoted(parts, n), ":")
		if t.kids[i] == nil {
			parts = append(parts, t.value[i]...)
			continue
		}
		parts = rawjson.Texts(parts, "{")
		parts = t.kids[i].members(parts)
		parts = rawjson.Texts(parts, "}")
	}
	return parts
}

// sharedText identifies a change's text by what it is made of: segments, value and form.
type sharedText struct {
	key           string
	rest          *walk.Segment
	restLen       int
	value         *rawjson.Part
	valueLen      int
	insert, comma bool
}

// site is where writes make one span: members inserted at an object's '{', or a value replaced. Only
// changes that meet below one object share a site, merged through a tree.
type site struct {
	obj, old rawjson.Ref // old is absent for an insertion
	// first is the site's first write, as an index (docs/runtime.md "Memory and TinyGo's collector").
	first int
	t     *tree
}

// bySite gathers the writes, in document order, by site.
func (e *edits) bySite() ([]site, string) {
	sites, problem := e.gather(emptied(e.sites, len(e.writes)))
	e.sites = sites
	return sites, problem
}

// gather is bySite, into sites (empty, with room for a site per write).
func (e *edits) gather(sites []site) ([]site, string) {
	for i := range e.writes {
		s := &e.writes[i]
		if n := len(sites); n == 0 || sites[n-1].obj.At != s.obj.At || sites[n-1].old.At != s.old.At {
			sites = append(sites, site{obj: s.obj, old: s.old, first: i})
			continue
		}
		g := &sites[len(sites)-1]
		first := &e.writes[g.first]
		if len(s.below()) == 0 || len(first.below()) == 0 {
			// Two changes of one value: not reached (a map is one target); bad input, never a trap.
			return sites, overlappingChanges
		}
		if g.t == nil {
			g.t = &tree{}
			g.t.add(first.below(), first.value)
		}
		g.t.add(s.below(), s.value)
	}
	return sites, ""
}

const overlappingChanges = "two annotation paths change the same part of the object"

// sharedTexts holds the texts of changes made so far: a short list, as a handful serve every site.
type sharedTexts struct {
	keys  []sharedText
	texts [][]rawjson.Part
}

// of returns the text of a site's one change, made once.
func (st *sharedTexts) of(s *keyWrite, insert, comma bool) []rawjson.Part {
	key := sharedText{key: s.key, restLen: len(s.rest), valueLen: len(s.value), insert: insert, comma: comma}
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

// text is the JSON text of a site whose changes were merged through a tree.
func (g *site) text(insert, comma bool) []rawjson.Part {
	parts := g.t.members(nil)
	switch {
	case !insert:
		return rawjson.Texts(append(rawjson.Texts(nil, "{"), parts...), "}")
	case comma:
		return rawjson.Texts(parts, ",")
	}
	return parts
}

// result builds the edit; a problem means two changes would touch the same bytes (settings rule that out).
func (e *edits) result() (rawjson.Edit, string) {
	sites, problem := e.bySite()
	if problem != "" {
		return rawjson.Edit{}, problem
	}
	spans := append(emptied(e.spans, len(sites)+len(e.more)), e.more...)
	var shared sharedTexts
	for i := range sites {
		g := &sites[i]
		insert := !g.old.Exists()
		comma := insert && e.index.HasMembers(g.obj.Result(e.doc))
		var parts []rawjson.Part
		if g.t == nil {
			parts = shared.of(&e.writes[g.first], insert, comma)
		} else {
			parts = g.text(insert, comma)
		}
		if !insert {
			spans = append(spans, rawjson.Span{Start: int(g.old.At), End: int(g.old.At + g.old.N), Parts: parts})
			continue
		}
		spans = append(spans, rawjson.Span{Start: int(g.obj.At) + 1, End: int(g.obj.At) + 1, Parts: parts})
	}
	e.spans = spans
	if len(spans) == 0 {
		return rawjson.Edit{}, ""
	}
	sortSpans(spans)
	for i := 1; i < len(spans); i++ {
		if spans[i].Start < spans[i-1].End {
			return rawjson.Edit{}, overlappingChanges
		}
	}
	return rawjson.Edit{Doc: e.doc, Span: spans[0], More: spans[1:]}, ""
}

// text is the JSON text one change writes: a member inserted at an object's '{', or old's new value.
func (s *keyWrite) text(insert, comma bool) []rawjson.Part {
	names := s.names()
	parts := make([]rawjson.Part, 0, 3*len(names)+len(s.value)+3)
	if insert {
		parts = nested(rawjson.Texts(quoted(parts, names[0]), ":"), names[1:], s.value)
		if comma {
			parts = rawjson.Texts(parts, ",")
		}
		return parts
	}
	return nested(parts, names[1:], s.value)
}

// sortSpans orders spans by start (an insertion before a replacement that starts at the same byte).
func sortSpans(spans []rawjson.Span) {
	slices.SortFunc(spans, func(a, b rawjson.Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.End - b.End
	})
}
