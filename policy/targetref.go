package policy

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// targetRef is one target map found by the walk, as offsets into the walked document: the map (m) and its
// annotation (value) when it exists; otherwise the deepest object on the path (holder), how many segments
// are missing (rest) and the first one's value in holder (old: absent or null).
type targetRef struct {
	path *annotationPath
	// placeAt is where the values the path's wildcards took start in the walker's places.
	placeAt int32
	rest    int32
	// where is the map, or the holder while rest > 0; entry is the annotation's value, or old.
	where, entry rawjson.Ref
}

func (r *targetRef) holder() rawjson.Ref { return r.where }

func (r *targetRef) m() rawjson.Ref {
	if r.rest > 0 {
		return rawjson.Absent
	}
	return r.where
}

func (r *targetRef) value() rawjson.Ref {
	if r.rest > 0 {
		return rawjson.Absent
	}
	return r.entry
}

func (r *targetRef) old() rawjson.Ref {
	if r.rest == 0 {
		return rawjson.Absent
	}
	return r.entry
}

// found records a map as a targetRef: m (an object) when it exists; otherwise holder, rest and old say what
// to create.
func (w *walker) found(p *annotationPath, holder gjson.Result, rest int, old, m gjson.Result) string {
	if !w.count(p) {
		return TooManyTargetsRefusal
	}
	if w.existing && !m.Exists() {
		return ""
	}
	ref := targetRef{path: p, placeAt: int32(len(w.places.values)), rest: int32(rest), where: rawjson.RefOf(holder), entry: rawjson.RefOf(old)} //nolint:gosec // offsets fit: see rawjson.RefOf
	w.places.values = append(w.places.values, w.taken...)
	if m.Exists() {
		value, problem := w.entryOf(m) // where it is: the rules unescape it when they read it
		if problem != "" {
			return problem
		}
		ref.where, ref.entry = rawjson.RefOf(m), rawjson.RefOf(value)
	}
	if len(w.refs) == cap(w.refs) { // doubled: append grows a large slice by a quarter, copying it more often
		w.refs = slices.Grow(w.refs, max(1, len(w.refs))) // a built-in kind's walk finds one map
	}
	w.refs = append(w.refs, ref)
	return ""
}

// restSegments is what is still to create above the map, nil when it exists.
func (r *targetRef) restSegments() []segment {
	if r.rest == 0 {
		return nil
	}
	return r.path.segments[len(r.path.segments)-int(r.rest):]
}

// key is the target's concrete path (spec.templates[3].metadata.annotations), from the places it was
// recorded in.
func (pl *places) key(r *targetRef) string {
	return string(pl.appendPath(nil, r.path, len(r.path.segments), pl.values[r.placeAt:]))
}

// samePlace reports whether a (recorded in pl) and b (in other) have the same concrete path.
func (pl *places) samePlace(a *targetRef, other *places, b *targetRef) bool {
	if a.path != b.path {
		return pl.key(a) == other.key(b) // two paths may name one map
	}
	n := a.path.wildcards
	va, vb := pl.values[a.placeAt:int(a.placeAt)+n], other.values[b.placeAt:int(b.placeAt)+n]
	for k := range va {
		switch x, y := va[k], vb[k]; {
		case x >= 0 || y >= 0:
			if x != y {
				return false
			}
		case pl.names[-x-1] != other.names[-y-1]:
			return false
		}
	}
	return true
}

// position is where the map is in the document, or where it will be created.
func (r *targetRef) position() int32 {
	switch {
	case r.rest == 0:
		return r.where.At
	case r.entry.Exists():
		return r.entry.At
	}
	return r.where.At
}

// compareRefs orders targets by place: position, then the names still to create.
func compareRefs(a, b targetRef) int {
	if pa, pb := a.position(), b.position(); pa != pb {
		return int(pa - pb)
	}
	return slices.CompareFunc(a.restSegments(), b.restSegments(), func(x, y segment) int { return strings.Compare(x.name, y.name) })
}

// inDocumentOrder sorts targets by place and drops a map's second naming: a map named by several paths (a
// wildcard and one role's own path) is one target, stamped once.
func inDocumentOrder(refs []targetRef) []targetRef {
	slices.SortStableFunc(refs, compareRefs)
	return slices.CompactFunc(refs, func(a, b targetRef) bool { return compareRefs(a, b) == 0 })
}
