package walk

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Walker walks paths over one object and collects the maps they name, each once, in document order. The
// caller sets the exported fields before a walk and reads Refs and Places after it.
type Walker struct {
	Index *rawjson.Index // of the payload the object is part of
	Field string         // where the object is in the payload ("request.object"): Problem.At starts with it
	Entry string         // the key looked up in every map found ("" for guard maps and labels)
	// Most, when not 0, is how many maps one path may name (Problem TooManyMaps beyond).
	Most     int
	Existing bool // record only the maps that exist
	Refs     []Ref
	// Places holds, for each ref, the values its path's wildcards took (Ref.placeAt): its concrete
	// path is written only when a message or a pairing needs it.
	Places Places
	// The concrete path so far: the path's first depth segments, and the values their wildcards took.
	path  *Path
	depth int
	taken []int32
	// named counts the maps of each path while paths ride along with others, otherwise they are Refs from
	// from on.
	from  int
	named []int
	// paths are the paths WalkAll walks; riders, the ones walked along with an earlier one.
	paths  []Path
	riders []rider
	// problem is the last problem met (fail).
	problem Problem
}

// Reset readies w to walk another object, of the payload index indexes, at field, looking up entry in every
// map found. It keeps the room its records took, emptied and zeroed: the last walk's strings and paths would
// otherwise stay alive through this one.
func (w *Walker) Reset(index *rawjson.Index, field, entry string) {
	clear(w.Refs)
	clear(w.Places.Names)
	*w = Walker{Index: index, Field: field, Entry: entry, Refs: w.Refs[:0],
		Places: Places{Values: w.Places.Values[:0], Names: w.Places.Names[:0]}, taken: w.taken[:0]}
}

// Reserve gives w room for refs maps and values values of wildcards.
func (w *Walker) Reserve(refs, values int) {
	if cap(w.Refs) < refs {
		w.Refs = make([]Ref, 0, refs)
	}
	if cap(w.Places.Values) < values {
		w.Places.Values = make([]int32, 0, values)
	}
}

// rider is a path walked along with an earlier one (leader) from the elements of segment at, the last
// segment with a wildcard both share before either's ">": each element is then read once for both.
type rider struct {
	leader, path, at int
}

// WalkAll walks every path of paths until one finds a problem, as walkEach would: on a problem, it walks
// them again one by one, so that the first problem in their order is reported.
func (w *Walker) WalkAll(obj gjson.Result, paths []Path) Problem {
	w.paths, w.riders = paths, ridersOf(paths)
	if len(w.riders) == 0 {
		return w.walkEach(obj, paths)
	}
	if w.Most > 0 {
		w.named = make([]int, len(paths))
	}
	for i := range paths {
		if w.rides(i) {
			continue
		}
		if w.walk(obj, &paths[i]) != NoFault {
			w.Refs, w.Places.Values, w.Places.Names, w.riders = w.Refs[:0], w.Places.Values[:0], w.Places.Names[:0], nil
			clear(w.named)
			return w.walkEach(obj, paths)
		}
	}
	return Problem{}
}

// walkEach walks every path of paths by itself until one finds a problem.
func (w *Walker) walkEach(obj gjson.Result, paths []Path) Problem {
	for i := range paths {
		if w.walk(obj, &paths[i]) != NoFault {
			return w.problem
		}
	}
	return Problem{}
}

func (w *Walker) rides(path int) bool { return rides(w.riders, path) }

func rides(riders []rider, path int) bool {
	for _, r := range riders {
		if r.path == path {
			return true
		}
	}
	return false
}

// ridersOf pairs each path with the first earlier path, itself no rider, that it can ride along with.
func ridersOf(paths []Path) []rider {
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
func sharedWildcard(p, q *Path) int {
	at := -1
	for k := 0; k < min(p.Create, q.Create) && p.Segments[k] == q.Segments[k]; k++ {
		if p.Segments[k].Wild != "" {
			at = k
		}
	}
	return at
}

// count counts a map p names, reporting false when it is one more than most.
func (w *Walker) count(p *Path) bool {
	if w.Most == 0 {
		return true
	}
	for k := range w.named { // counted per path only while paths ride along with others
		if &w.paths[k] == p {
			w.named[k]++
			return w.named[k] <= w.Most
		}
	}
	return len(w.Refs)-w.from < w.Most // a path walked on its own: its maps are the last ones
}

// Walk adds the maps p names in obj, the object's root, to w.Refs.
func (w *Walker) Walk(obj gjson.Result, p *Path) Problem {
	if w.walk(obj, p) != NoFault {
		return w.problem
	}
	return Problem{}
}

// walk is Walk, its problem kept in w.problem.
func (w *Walker) walk(obj gjson.Result, p *Path) Fault {
	w.taken, w.path, w.depth, w.from = w.taken[:0], p, 0, len(w.Refs)
	return w.step(obj, p, 0)
}

// fail records a problem at the concrete path so far, about key if any, and returns its fault: the walk
// passes a Fault up, the entry points return the Problem.
func (w *Walker) fail(f Fault, key string) Fault {
	w.problem = Problem{Fault: f, At: w.at(), Key: key}
	return f
}

// at is the concrete path so far, for a message.
func (w *Walker) at() string {
	if w.depth == 0 {
		return w.Field
	}
	return w.Field + "." + string(w.Places.appendPath(nil, w.path, w.depth, w.taken))
}

// Places holds the values wildcards took: an array element's index, or -1-n for names[n], a member's name.
type Places struct {
	Values []int32
	Names  []string
}

// member records a member name a {*} reached, as a wildcard's value.
func (pl *Places) member(name string) int32 {
	pl.Names = append(pl.Names, name)
	return -int32(len(pl.Names)) //nolint:gosec // a document of at most 2 MB has fewer members
}

// appendPath appends the concrete path of p's first depth segments (spec.templates[3].metadata) to dst,
// its wildcards written with values as far as they go.
func (pl *Places) appendPath(dst []byte, p *Path, depth int, values []int32) []byte {
	for k, s := range p.Segments[:depth] {
		if k > 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, s.Name...)
		for n := 0; n < len(s.Wild) && len(values) > 0; n += wildcardLen {
			if v := values[0]; v >= 0 {
				dst = appendIndex(dst, int(v))
			} else {
				dst = AppendMember(dst, pl.Names[-v-1])
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

// AppendMember appends a member reached by {*}: ".name" when name could be a path segment, so that a
// wildcard and a role's own path name its map alike; ["name"] otherwise.
func AppendMember(dst []byte, name string) []byte {
	if IsPathName(name) {
		return append(append(dst, '.'), name...)
	}
	return append(strconv.AppendQuote(append(dst, '['), name), ']')
}

// push and pop add and take off a segment of the concrete path; take and give back a wildcard's value.
func (w *Walker) push()            { w.depth++ }
func (w *Walker) pop()             { w.depth-- }
func (w *Walker) take(value int32) { w.taken = append(w.taken, value) }
func (w *Walker) giveBack()        { w.taken = w.taken[:len(w.taken)-1] }

// childOf is index.Child, without reading an empty object: an UPDATE's paired walk meets hundreds of
// thousands of them in the largest requests (docs/runtime.md "What a target costs").
func (w *Walker) childOf(cur gjson.Result, name string) (gjson.Result, bool) {
	if rawjson.IsEmptyObject(cur.Raw) {
		return gjson.Result{}, false
	}
	return w.Index.Child(cur, name)
}

// step looks up segment i of p in cur, an object that exists.
func (w *Walker) step(cur gjson.Result, p *Path, i int) Fault {
	seg := p.Segments[i]
	v, dup := w.childOf(cur, seg.Name)
	if dup {
		return w.fail(DuplicateKey, seg.Name)
	}
	w.push()
	problem := w.stepIn(cur, v, p, i)
	w.pop()
	return problem
}

// stepIn goes on from v, segment i of p found in cur (the concrete path names v).
func (w *Walker) stepIn(cur, v gjson.Result, p *Path, i int) Fault {
	last := i == len(p.Segments)-1
	if i < p.Create {
		return w.stepBefore(v, p, i, cur)
	}
	// From create on: created when missing or null, bad input when of another type.
	if rawjson.IsMissing(v) {
		return w.found(p, cur, len(p.Segments)-i, v, gjson.Result{})
	}
	if !v.IsObject() {
		if last {
			return w.fail(NotAStringMap, "")
		}
		return w.fail(NotAnObject, "")
	}
	if last {
		return w.found(p, v, 0, gjson.Result{}, v)
	}
	return w.step(v, p, i+1)
}

// stepBefore goes on from v, segment i of p found in cur, before ">": a value of the wrong type names
// nothing, or is bad input for a required path.
func (w *Walker) stepBefore(v gjson.Result, p *Path, i int, cur gjson.Result) Fault {
	if i == len(p.Segments)-1 { // a guard map: named only when it exists
		switch {
		case rawjson.IsMissing(v):
			return NoFault
		case !v.IsObject():
			return w.fail(NotAnObject, "")
		}
		return w.found(p, cur, 0, v, v)
	}
	if p.Segments[i].Wild != "" {
		return w.each(v, p, i, p.Segments[i].Wild)
	}
	if !v.IsObject() {
		if p.Required {
			return w.fail(NoPodTemplate, "")
		}
		return NoFault // names nothing in this object
	}
	return w.step(v, p, i+1)
}

// each applies the wildcards wild of segment i of p to v, then goes on with segment i+1. Before ">", a
// value of the wrong type names nothing.
func (w *Walker) each(v gjson.Result, p *Path, i int, wild string) Fault {
	array := wild[:wildcardLen] == everyElement
	if array && !v.IsArray() || !array && !v.IsObject() {
		return NoFault // names nothing (and, per element of a nested wildcard, costs nothing)
	}
	it, indexed := w.Index.Members(v)
	if !indexed {
		return w.fail(NotIndexed, "") // not reached: every value walked is in the payload Index indexes
	}
	var seen map[string]bool // the member names met: a name given twice is bad input
	if !array {
		seen = map[string]bool{}
	}
	for n := 0; ; n++ {
		var key, elem gjson.Result
		var more bool
		if it, key, elem, more = it.Next(); !more {
			return NoFault
		}
		if array && w.skips(elem) {
			continue
		}
		if problem := w.eachElement(array, n, key.Str, seen, elem, p, i, wild); problem != NoFault {
			return problem
		}
	}
}

// eachElement walks on from elem, element n of an array or member key of an object.
func (w *Walker) eachElement(array bool, n int, key string, seen map[string]bool, elem gjson.Result,
	p *Path, i int, wild string) Fault {
	if array {
		w.take(int32(n)) //nolint:gosec // a document of at most 2 MB has fewer elements
	} else {
		if seen[key] {
			return w.fail(DuplicateKey, key)
		}
		seen[key] = true
		w.take(w.Places.member(key))
	}
	problem := w.eachNext(elem, p, i, wild)
	w.giveBack()
	return problem
}

// skips reports whether a walk recording only existing maps, unbounded, can pass elem by: an empty object
// holds no map, and no bad input.
func (w *Walker) skips(elem gjson.Result) bool {
	return w.Existing && w.Most == 0 && isEmpty(elem)
}

// isEmpty reports whether v is an object without a member.
func isEmpty(v gjson.Result) bool { return v.IsObject() && rawjson.IsEmptyObject(v.Raw) }

// eachNext goes on from elem, a value a wildcard reached, to the next wildcard or segment i+1.
func (w *Walker) eachNext(elem gjson.Result, p *Path, i int, wild string) Fault {
	if w.skips(elem) {
		return NoFault
	}
	if len(wild) > wildcardLen {
		return w.each(elem, p, i, wild[wildcardLen:])
	}
	if !elem.IsObject() {
		return NoFault
	}
	if problem := w.step(elem, p, i+1); problem != NoFault {
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
		if problem != NoFault {
			return problem
		}
	}
	return NoFault
}

// entryOf looks up the Walker's entry in map m, leaving it escaped.
func (w *Walker) entryOf(m gjson.Result) (gjson.Result, Fault) {
	if w.Entry == "" {
		return gjson.Result{}, NoFault
	}
	value, dup := w.Index.ChildRaw(m, w.Entry)
	switch {
	case dup:
		return value, w.fail(DuplicateKey, w.Entry)
	case value.Exists() && value.Type != gjson.String:
		return value, w.fail(NotAString, w.Entry)
	}
	return value, NoFault
}
