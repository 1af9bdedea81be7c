package policy

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// One path mechanism for every kind: Kind.Path and a declared kind's paths are parsed into an
// annotationPath and walked by the same code. Syntax: segments separated by "."; a name, optionally
// followed by [*] (array elements) or {*} (member values); one ">" where creation may begin; the last
// segment names the map (docs/rules.md "Custom-resource workloads (rules 11-13)").

// maxPathSegments bounds the walk's recursion (TinyGo's stack is small); real paths have fewer than ten.
const maxPathSegments = 32

// The wildcards a segment may carry after its name, one or more ("steps[*][*]": an array of arrays).
const (
	everyElement = "[*]"
	everyMember  = "{*}"
	wildcardLen  = 3
)

// segment is a member name and its wildcards as written ("", "[*]", "{*}[*]", ...).
type segment struct {
	name string
	wild string
}

// annotationPath is a parsed path; segments from create on are created when missing or null.
type annotationPath struct {
	text     string
	segments []segment
	create   int // len(segments) for a guard path: nothing is created
	// required: a missing segment before create is bad input (a built-in workload's pod template).
	required bool
	plain    string // without wildcards, the concrete path of the one map it names
}

// parsePath parses an annotation or guard path; only a built-in path may start with ">" (rootMarker).
func parsePath(text string, guard, rootMarker bool) (annotationPath, string) {
	p := annotationPath{text: text, create: -1}
	if text == "" {
		return p, "the path is empty: name the annotations map, such as spec.driver>annotations"
	}
	p.segments = make([]segment, 0, 1+strings.Count(text, ".")+strings.Count(text, ">"))
	rest := text
	if rootMarker && strings.HasPrefix(rest, ">") {
		p.create, rest = 0, rest[1:]
	}
	for rest != "" {
		at := len(p.segments) + 1
		seg, after, problem := parseSegment(rest, at)
		if problem != "" {
			return p, problem
		}
		p.segments, rest = append(p.segments, seg), after
		if len(p.segments) > maxPathSegments {
			return p, "the path has more than " + strconv.Itoa(maxPathSegments) + " segments"
		}
		if rest == "" {
			break
		}
		switch rest[0] {
		case '.':
		case '>':
			switch {
			case guard:
				return p, `a guard path names existing maps only: it may not contain ">"`
			case p.create >= 0:
				return p, `the path has more than one ">"`
			}
			p.create = len(p.segments)
		default:
			return p, "unexpected " + strconv.QuoteRune(rune(rest[0])) + " after segment " + strconv.Itoa(at) +
				": segments are separated by '.' (or one '>'), and a wildcard is [*] or {*}"
		}
		rest = rest[1:]
		if rest == "" {
			return p, "the path ends with a separator: the last segment names the map"
		}
	}
	return p.finish(guard)
}

// parseSegment reads segment number at from the start of rest.
func parseSegment(rest string, at int) (segment, string, string) {
	n := 0
	for n < len(rest) && isNameByte(rest[n]) {
		n++
	}
	if n == 0 {
		if rest[0] == '.' || rest[0] == '>' {
			return segment{}, rest, "segment " + strconv.Itoa(at) + " is empty"
		}
		return segment{}, rest, "segment " + strconv.Itoa(at) + " starts with " + strconv.QuoteRune(rune(rest[0])) +
			": a segment is a member name of letters, digits, '_' and '-', optionally followed by [*] or {*}"
	}
	seg := segment{name: rest[:n]}
	rest = rest[n:]
	w := 0
	for strings.HasPrefix(rest[w:], everyElement) || strings.HasPrefix(rest[w:], everyMember) {
		w += wildcardLen
	}
	seg.wild, rest = rest[:w], rest[w:]
	return seg, rest, ""
}

// finish checks the parsed segments as a whole and fills in create and plain.
func (p annotationPath) finish(guard bool) (annotationPath, string) {
	last := len(p.segments) - 1
	switch {
	case p.segments[last].wild != "":
		return p, "the last segment must be a plain name (the map), not a wildcard"
	case guard:
		p.create = len(p.segments)
	case p.create < 0:
		p.create = last
	}
	for i := p.create; i < len(p.segments); i++ {
		if p.segments[i].wild != "" {
			return p, `a wildcard may not follow ">": creation makes plain objects only`
		}
	}
	if !p.hasWildcard() {
		p.plain = strings.Replace(strings.TrimPrefix(p.text, ">"), ">", ".", 1)
	}
	return p, ""
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '_' || c == '-'
}

func (p *annotationPath) hasWildcard() bool {
	for _, s := range p.segments {
		if s.wild != "" {
			return true
		}
	}
	return false
}

// segmentsKey is the first n segments of p as one string, whatever the marker.
func (p *annotationPath) segmentsKey(n int) string {
	var b strings.Builder
	for _, s := range p.segments[:n] {
		b.WriteString(s.name)
		b.WriteString(s.wild)
		b.WriteByte('.')
	}
	return b.String()
}

// walker walks paths over one object and collects the maps they name, each once, in document order.
type walker struct {
	doc   string
	index *rawjson.Index // of the payload doc is part of, or nil
	field string         // "request.object", for messages
	kind  string         // for the message of a missing required segment
	entry string         // the key looked up in every map found ("" for guard maps and labels)
	refs  []targetRef    // the maps found
	keys  []byte         // the refs' concrete paths, one after the other
	// The concrete path so far: pieces (".", "name", "[3]") for a path with wildcards; for a plain path,
	// the first depth segments of path, so that nothing is allocated for messages not written.
	trail []trailPiece
	path  *annotationPath
	depth int
	// most, when not 0, is how many maps one path may name; from is where the path's maps start in refs.
	most, from int
}

// walkAll walks every path of paths until one finds a problem.
func (w *walker) walkAll(obj gjson.Result, paths []annotationPath) string {
	for i := range paths {
		if problem := w.walk(obj, &paths[i]); problem != "" {
			return problem
		}
	}
	return ""
}

// walk adds the maps path names in obj (the root of w.doc) to w.refs; a problem is a 400 message.
func (w *walker) walk(obj gjson.Result, p *annotationPath) string {
	w.trail, w.path, w.depth, w.from = w.trail[:0], p, 0, len(w.refs)
	return w.step(obj, p, 0)
}

func (w *walker) at() string {
	if w.path.plain == "" {
		return w.field + w.trailString()
	}
	var at strings.Builder
	at.WriteString(w.field)
	for _, s := range w.path.segments[:w.depth] {
		at.WriteString(".")
		at.WriteString(s.name)
	}
	return at.String()
}

// trailPiece is a piece of the concrete path: text, or an array element's index when index >= 0.
type trailPiece struct {
	text  string
	index int
}

// appendTrail appends the concrete path so far to dst, from its leading '.'.
func (w *walker) appendTrail(dst []byte) []byte {
	for _, p := range w.trail {
		if p.index < 0 {
			dst = append(dst, p.text...)
			continue
		}
		dst = appendIndex(dst, p.index)
	}
	return dst
}

// appendIndex appends "[n]" without strconv, whose local array is a heap allocation in the guest.
func appendIndex(dst []byte, n int) []byte {
	dst = append(dst, '[')
	start := len(dst)
	for {
		dst = append(dst, byte('0'+n%10))
		if n /= 10; n == 0 {
			break
		}
	}
	for i, j := start, len(dst)-1; i < j; i, j = i+1, j-1 {
		dst[i], dst[j] = dst[j], dst[i]
	}
	return append(dst, ']')
}

// trailString is the concrete path so far, from its leading '.', for a message or a key.
func (w *walker) trailString() string { return string(w.appendTrail(nil)) }

// push adds a member name (seg) or a piece of text to the concrete path; pop takes them off. Not
// variadic: in the guest that may allocate (docs/runtime.md "Memory and TinyGo's collector").
func (w *walker) push(seg bool, piece string) {
	if w.path.plain != "" {
		w.depth++ // only names: a plain path has no wildcards
		return
	}
	if seg {
		w.trail = append(w.trail, trailPiece{text: ".", index: -1})
	}
	w.trail = append(w.trail, trailPiece{text: piece, index: -1})
}

// pushIndex adds an array element to the concrete path.
func (w *walker) pushIndex(n int) {
	w.trail = append(w.trail, trailPiece{index: n})
}

func (w *walker) pop(seg bool, n int) {
	if w.path.plain != "" {
		w.depth--
		return
	}
	if seg {
		n++
	}
	w.trail = w.trail[:len(w.trail)-n]
}

// step looks up segment i of p in cur, an object that exists.
func (w *walker) step(cur gjson.Result, p *annotationPath, i int) string {
	seg := p.segments[i]
	v, dup := w.index.Child(cur, seg.name)
	if dup {
		return duplicateKey(w.at(), seg.name)
	}
	w.push(true, seg.name)
	problem := w.stepIn(cur, v, p, i)
	w.pop(true, 1)
	return problem
}

// stepIn goes on from v, segment i of p found in cur (the concrete path names v).
func (w *walker) stepIn(cur, v gjson.Result, p *annotationPath, i int) string {
	last := i == len(p.segments)-1
	if i < p.create {
		return w.stepBefore(v, p, i, cur)
	}
	// From create on: created when missing or null, bad input when of another type.
	if rawjson.IsMissing(v) {
		rest := p.segments[i:]
		for _, s := range p.segments[i+1:] {
			w.push(true, s.name)
		}
		problem := w.found(p, cur, rest, v, gjson.Result{})
		for range p.segments[i+1:] {
			w.pop(true, 1)
		}
		return problem
	}
	if !v.IsObject() {
		if last {
			return w.at() + " must be an object of strings"
		}
		return w.at() + " must be an object"
	}
	if last {
		return w.found(p, v, nil, gjson.Result{}, v)
	}
	return w.step(v, p, i+1)
}

// stepBefore goes on from v, segment i of p found in cur, before ">": a value of the wrong type names
// nothing, or is bad input for a required path.
func (w *walker) stepBefore(v gjson.Result, p *annotationPath, i int, cur gjson.Result) string {
	if i == len(p.segments)-1 { // a guard map: named only when it exists
		switch {
		case rawjson.IsMissing(v):
			return ""
		case !v.IsObject():
			return w.at() + " must be an object"
		}
		return w.found(p, cur, nil, v, v)
	}
	if p.segments[i].wild != "" {
		return w.each(v, p, i, p.segments[i].wild)
	}
	if !v.IsObject() {
		if p.required {
			return w.at() + " is missing or not an object: a " + w.kind + " needs a pod template"
		}
		return "" // names nothing in this object
	}
	return w.step(v, p, i+1)
}

// each applies the wildcards wild of segment i of p to v, then goes on with segment i+1. Before ">", a
// value of the wrong type names nothing.
func (w *walker) each(v gjson.Result, p *annotationPath, i int, wild string) string {
	array := wild[:wildcardLen] == everyElement
	if array && !v.IsArray() || !array && !v.IsObject() {
		return "" // names nothing (and, per element of a nested wildcard, costs nothing)
	}
	it, indexed := w.index.Members(v)
	if !indexed {
		return w.eachUnindexed(v, p, i, wild)
	}
	var seen map[string]bool // the member names met: a name given twice is bad input
	if !array {
		seen = map[string]bool{}
	}
	for n := 0; ; n++ {
		var key, elem gjson.Result
		var more bool
		if it, key, elem, more = it.Next(); !more {
			return ""
		}
		if problem := w.eachElement(array, n, key.Str, seen, elem, p, i, wild); problem != "" {
			return problem
		}
	}
}

// eachUnindexed is each for a value the index does not hold (a document walked on its own, in tests).
func (w *walker) eachUnindexed(v gjson.Result, p *annotationPath, i int, wild string) string {
	var problem string
	seen := map[string]bool{}
	n := 0
	v.ForEach(func(key, elem gjson.Result) bool {
		problem = w.eachElement(v.IsArray(), n, key.Str, seen, elem, p, i, wild)
		n++
		return problem == ""
	})
	return problem
}

// eachElement walks on from elem, element n of an array or member key of an object.
func (w *walker) eachElement(array bool, n int, key string, seen map[string]bool, elem gjson.Result,
	p *annotationPath, i int, wild string) string {
	pieces := 1
	if array {
		w.pushIndex(n)
	} else {
		if seen[key] {
			return duplicateKey(w.at(), key)
		}
		seen[key] = true
		names := memberPiece(key)
		for _, piece := range names {
			w.push(false, piece)
		}
		pieces = len(names)
	}
	problem := w.eachNext(elem, p, i, wild)
	w.pop(false, pieces)
	return problem
}

// eachNext goes on from elem, a value a wildcard reached, to the next wildcard or segment i+1.
func (w *walker) eachNext(elem gjson.Result, p *annotationPath, i int, wild string) string {
	if len(wild) > wildcardLen {
		return w.each(elem, p, i, wild[wildcardLen:])
	}
	if !elem.IsObject() {
		return ""
	}
	return w.step(elem, p, i+1)
}

// entryOf looks up the walker's entry in map m, leaving it escaped.
func (w *walker) entryOf(m gjson.Result) (gjson.Result, string) {
	if w.entry == "" {
		return gjson.Result{}, ""
	}
	value, dup := w.index.ChildRaw(m, w.entry)
	switch {
	case dup:
		return value, duplicateKey(w.at(), w.entry)
	case value.Exists() && value.Type != gjson.String:
		return value, w.at() + "[" + strconv.Quote(w.entry) + "] must be a string"
	}
	return value, ""
}

// memberPiece is how a member reached by {*} is written in a concrete path: ".name" when name could be a
// path segment, so that a wildcard and a role's own path name its map alike; ["name"] otherwise.
func memberPiece(name string) []string {
	if isPathName(name) {
		return []string{".", name}
	}
	return []string{"[", strconv.Quote(name), "]"}
}

// isPathName reports whether name could be a path segment's name.
func isPathName(name string) bool {
	plain := name != ""
	for i := 0; i < len(name) && plain; i++ {
		plain = isNameByte(name[i])
	}
	return plain
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
