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
	// wildcards is how many [*] and {*} the path has: the values a target's place records.
	wildcards int
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
	for _, s := range p.segments {
		p.wildcards += len(s.wild) / wildcardLen
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
	// places holds, for each ref, the values its path's wildcards took (targetRef.placeAt): its concrete
	// path is written only when a message or a pairing needs it.
	places places
	// The concrete path so far: the path's first depth segments, and the values their wildcards took.
	path  *annotationPath
	depth int
	taken []int32
	// most, when not 0, is how many maps one path may name; named counts them while paths ride along with
	// others, otherwise they are refs from from on.
	most, from int
	named      []int
	existing   bool // record only the maps that exist
	// paths are the paths walkAll walks; riders, the ones walked along with an earlier one.
	paths  []annotationPath
	riders []rider
}

// rider is a path walked along with an earlier one (leader) from the elements of segment at, the last
// segment with a wildcard both share before either's ">": each element is then read once for both.
type rider struct {
	leader, path, at int
}

// walkAll walks every path of paths until one finds a problem, as walkEach would: on a problem, it walks
// them again one by one, so that the first problem in their order is reported.
func (w *walker) walkAll(obj gjson.Result, paths []annotationPath) string {
	w.paths, w.riders = paths, ridersOf(paths)
	if len(w.riders) == 0 {
		return w.walkEach(obj, paths)
	}
	if w.most > 0 {
		w.named = make([]int, len(paths))
	}
	for i := range paths {
		if w.rides(i) {
			continue
		}
		if problem := w.walk(obj, &paths[i]); problem != "" {
			w.refs, w.places.values, w.places.names, w.riders = w.refs[:0], w.places.values[:0], w.places.names[:0], nil
			clear(w.named)
			return w.walkEach(obj, paths)
		}
	}
	return ""
}

// walkEach walks every path of paths by itself until one finds a problem.
func (w *walker) walkEach(obj gjson.Result, paths []annotationPath) string {
	for i := range paths {
		if problem := w.walk(obj, &paths[i]); problem != "" {
			return problem
		}
	}
	return ""
}

func (w *walker) rides(path int) bool { return rides(w.riders, path) }

func rides(riders []rider, path int) bool {
	for _, r := range riders {
		if r.path == path {
			return true
		}
	}
	return false
}

// ridersOf pairs each path with the first earlier path, itself no rider, that it can ride along with.
func ridersOf(paths []annotationPath) []rider {
	var riders []rider
	for q := 1; q < len(paths); q++ {
		for p := range q {
			if at := sharedWildcard(&paths[p], &paths[q]); at >= 0 && !rides(riders, p) {
				riders = append(riders, rider{leader: p, path: q, at: at})
				break
			}
		}
	}
	return riders
}

// sharedWildcard is the last segment with a wildcard that p and q share, with all before it, before either's
// ">"; -1 when none.
func sharedWildcard(p, q *annotationPath) int {
	at := -1
	for k := 0; k < min(p.create, q.create) && p.segments[k] == q.segments[k]; k++ {
		if p.segments[k].wild != "" {
			at = k
		}
	}
	return at
}

// count counts a map p names, reporting false when it is one more than most.
func (w *walker) count(p *annotationPath) bool {
	if w.most == 0 {
		return true
	}
	for k := range w.named { // counted per path only while paths ride along with others
		if &w.paths[k] == p {
			w.named[k]++
			return w.named[k] <= w.most
		}
	}
	return len(w.refs)-w.from < w.most // a path walked on its own: its maps are the last ones
}

// walk adds the maps path names in obj (the root of w.doc) to w.refs; a problem is a 400 message.
func (w *walker) walk(obj gjson.Result, p *annotationPath) string {
	w.taken, w.path, w.depth, w.from = w.taken[:0], p, 0, len(w.refs)
	return w.step(obj, p, 0)
}

// at is the concrete path so far, for a message.
func (w *walker) at() string {
	if w.depth == 0 {
		return w.field
	}
	return w.field + "." + string(w.places.appendPath(nil, w.path, w.depth, w.taken))
}

// places holds the values wildcards took: an array element's index, or -1-n for names[n], a member's name.
type places struct {
	values []int32
	names  []string
}

// member records a member name a {*} reached, as a wildcard's value.
func (pl *places) member(name string) int32 {
	pl.names = append(pl.names, name)
	return -int32(len(pl.names)) //nolint:gosec // a document of at most 2 MB has fewer members
}

// appendPath appends the concrete path of p's first depth segments (spec.templates[3].metadata) to dst,
// its wildcards written with values as far as they go.
func (pl *places) appendPath(dst []byte, p *annotationPath, depth int, values []int32) []byte {
	for k, s := range p.segments[:depth] {
		if k > 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, s.name...)
		for n := 0; n < len(s.wild) && len(values) > 0; n += wildcardLen {
			if v := values[0]; v >= 0 {
				dst = appendIndex(dst, int(v))
			} else {
				dst = appendMember(dst, pl.names[-v-1])
			}
			values = values[1:]
		}
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

// appendMember appends a member reached by {*}: ".name" when name could be a path segment, so that a
// wildcard and a role's own path name its map alike; ["name"] otherwise.
func appendMember(dst []byte, name string) []byte {
	if isPathName(name) {
		return append(append(dst, '.'), name...)
	}
	return append(strconv.AppendQuote(append(dst, '['), name), ']')
}

// push and pop add and take off a segment of the concrete path; take and give back a wildcard's value.
func (w *walker) push()            { w.depth++ }
func (w *walker) pop()             { w.depth-- }
func (w *walker) take(value int32) { w.taken = append(w.taken, value) }
func (w *walker) giveBack()        { w.taken = w.taken[:len(w.taken)-1] }

// childOf is index.Child, without reading an empty object: an UPDATE's paired walk meets hundreds of
// thousands of them in the largest requests (docs/runtime.md "What a target costs").
func (w *walker) childOf(cur gjson.Result, name string) (gjson.Result, bool) {
	if isEmptyObject(cur.Raw) {
		return gjson.Result{}, false
	}
	return w.index.Child(cur, name)
}

// isEmptyObject reports whether raw, an object, has no member.
func isEmptyObject(raw string) bool {
	for i := 1; i < len(raw); i++ {
		if !rawjson.IsSpace(raw[i]) {
			return raw[i] == '}'
		}
	}
	return false
}

// step looks up segment i of p in cur, an object that exists.
func (w *walker) step(cur gjson.Result, p *annotationPath, i int) string {
	seg := p.segments[i]
	v, dup := w.childOf(cur, seg.name)
	if dup {
		return duplicateKey(w.at(), seg.name)
	}
	w.push()
	problem := w.stepIn(cur, v, p, i)
	w.pop()
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
		return w.found(p, cur, len(p.segments)-i, v, gjson.Result{})
	}
	if !v.IsObject() {
		if last {
			return w.at() + " must be an object of strings"
		}
		return w.at() + " must be an object"
	}
	if last {
		return w.found(p, v, 0, gjson.Result{}, v)
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
		return w.found(p, cur, 0, v, v)
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
		if array && w.skips(elem) {
			continue
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
	if array {
		w.take(int32(n)) //nolint:gosec // a document of at most 2 MB has fewer elements
	} else {
		if seen[key] {
			return duplicateKey(w.at(), key)
		}
		seen[key] = true
		w.take(w.places.member(key))
	}
	problem := w.eachNext(elem, p, i, wild)
	w.giveBack()
	return problem
}

// skips reports whether a walk recording only existing maps, unbounded, can pass elem by: an empty object
// holds no map, and no bad input.
func (w *walker) skips(elem gjson.Result) bool {
	return w.existing && w.most == 0 && isEmpty(elem)
}

// isEmpty reports whether v is an object without a member.
func isEmpty(v gjson.Result) bool { return v.IsObject() && isEmptyObject(v.Raw) }

// eachNext goes on from elem, a value a wildcard reached, to the next wildcard or segment i+1.
func (w *walker) eachNext(elem gjson.Result, p *annotationPath, i int, wild string) string {
	if w.skips(elem) {
		return ""
	}
	if len(wild) > wildcardLen {
		return w.each(elem, p, i, wild[wildcardLen:])
	}
	if !elem.IsObject() {
		return ""
	}
	if problem := w.step(elem, p, i+1); problem != "" {
		return problem
	}
	for _, r := range w.riders {
		if r.at != i || &w.paths[r.leader] != p {
			continue
		}
		q := &w.paths[r.path]
		w.path = q
		problem := w.step(elem, q, i+1)
		w.path = p
		if problem != "" {
			return problem
		}
	}
	return ""
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

// isPathName reports whether name could be a path segment's name.
func isPathName(name string) bool {
	plain := name != ""
	for i := 0; i < len(name) && plain; i++ {
		plain = isNameByte(name[i])
	}
	return plain
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
