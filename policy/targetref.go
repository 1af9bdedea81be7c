package policy

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// targetRef is one target map found by the walk, kept as offsets into the walked document: the map (m)
// and its annotation (value) when it exists; otherwise the deepest object on the path (holder), the
// segments still missing (rest) and rest[0]'s value in holder (old: absent or null).
// See docs/runtime.md "Memory and TinyGo's collector".
type targetRef struct {
	// keyAt and keyLen place the concrete path (spec.templates[3].metadata.annotations) in the walker's keys.
	keyAt, keyLen int32
	holder        rawjson.Ref
	old           rawjson.Ref
	m             rawjson.Ref
	value         rawjson.Ref
	rest          []segment // a view of the path's segments
}

// found records a map as a targetRef, its key in w.keys: m (an object) when it exists; otherwise holder, rest
// and old say what to create.
func (w *walker) found(p *annotationPath, holder gjson.Result, rest []segment, old, m gjson.Result) string {
	if w.most > 0 && len(w.refs)-w.from >= w.most {
		return TooManyTargetsRefusal
	}
	ref := targetRef{keyAt: int32(len(w.keys)), holder: rawjson.RefOf(holder), old: rawjson.RefOf(old), m: rawjson.RefOf(m), value: rawjson.Absent, rest: rest} //nolint:gosec // offsets fit: see rawjson.RefOf
	if p.plain != "" {
		w.keys = append(w.keys, p.plain...)
	} else {
		start := len(w.keys)
		w.keys = w.appendTrail(w.keys)
		w.keys = append(w.keys[:start], w.keys[start+1:]...) // without the leading '.'
	}
	ref.keyLen = int32(len(w.keys)) - ref.keyAt //nolint:gosec // as above
	if m.Exists() {
		ref.holder, ref.rest = ref.m, nil
		value, problem := w.entryOf(m) // where it is: the rules unescape it when they read it
		if problem != "" {
			return problem
		}
		ref.value = rawjson.RefOf(value)
	}
	if len(w.refs) == cap(w.refs) { // doubled: append grows a large slice by a quarter, copying it more often
		w.refs = slices.Grow(w.refs, max(1, len(w.refs))) // a built-in kind's walk finds one map
	}
	w.refs = append(w.refs, ref)
	return ""
}

// keyIn is the target's concrete path in the walker's keys it was recorded in.
func (r *targetRef) keyIn(keys []byte) []byte { return keys[r.keyAt : r.keyAt+r.keyLen] }

// position is where the map is in the document, or where it will be created.
func (r *targetRef) position() int32 {
	switch {
	case r.m.Exists():
		return r.m.At
	case r.old.Exists():
		return r.old.At
	}
	return r.holder.At
}

// compareRefs orders targets by place: position, then the names still to create.
func compareRefs(a, b targetRef) int {
	if pa, pb := a.position(), b.position(); pa != pb {
		return int(pa - pb)
	}
	return slices.CompareFunc(a.rest, b.rest, func(x, y segment) int { return strings.Compare(x.name, y.name) })
}

// inDocumentOrder sorts targets by place and drops a map's second naming: a map named by several paths (a
// wildcard and one role's own path) is one target, stamped once.
func inDocumentOrder(refs []targetRef) []targetRef {
	slices.SortStableFunc(refs, compareRefs)
	return slices.CompactFunc(refs, func(a, b targetRef) bool { return compareRefs(a, b) == 0 })
}
