package walk

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Ref is one map found by the walk, as offsets into the walked document: the map (Map) and its entry (Value)
// when it exists; otherwise the deepest object on the path (Holder), how many segments are missing (rest)
// and the first one's value in the holder (Old: absent or null).
type Ref struct {
	path *Path
	// placeAt is where the values the path's wildcards took start in the Walker's Places.
	placeAt int32
	rest    int32
	// Where is the map, or the holder while rest > 0; Entry is the entry's value, or Old.
	Where, Entry rawjson.Ref
}

// Holder is the map, or the deepest object on the path while segments are missing.
func (r *Ref) Holder() rawjson.Ref { return r.Where }

// Map is the map; absent when it is missing.
func (r *Ref) Map() rawjson.Ref {
	if r.rest > 0 {
		return rawjson.Absent
	}
	return r.Where
}

// Value is the map's entry (Walker.Entry), as written; absent when the map or the entry is missing.
func (r *Ref) Value() rawjson.Ref {
	if r.rest > 0 {
		return rawjson.Absent
	}
	return r.Entry
}

// Old is the first missing segment's value in the holder (null), or absent.
func (r *Ref) Old() rawjson.Ref {
	if r.rest == 0 {
		return rawjson.Absent
	}
	return r.Entry
}

// found records a map as a Ref: m (an object) when it exists; otherwise holder, rest and old say what
// to create.
func (w *Walker) found(p *Path, holder gjson.Result, rest int, old, m gjson.Result) Fault {
	if !w.count(p) {
		return w.fail(TooManyMaps, "")
	}
	if w.Existing && !m.Exists() {
		return NoFault
	}
	ref := Ref{path: p, placeAt: int32(len(w.Places.Values)), rest: int32(rest), Where: rawjson.RefOf(holder), Entry: rawjson.RefOf(old)} //nolint:gosec // offsets fit: see rawjson.RefOf
	w.Places.Values = append(w.Places.Values, w.taken...)
	if m.Exists() {
		value, problem := w.entryOf(m) // where it is: the rules unescape it when they read it
		if problem != NoFault {
			return problem
		}
		ref.Where, ref.Entry = rawjson.RefOf(m), rawjson.RefOf(value)
	}
	if len(w.Refs) == cap(w.Refs) { // doubled: append grows a large slice by a quarter, copying it more often
		w.Refs = slices.Grow(w.Refs, max(1, len(w.Refs))) // a built-in kind's walk finds one map
	}
	w.Refs = append(w.Refs, ref)
	return NoFault
}

// RestSegments is what is still to create above the map, nil when it exists.
func (r *Ref) RestSegments() []Segment {
	if r.rest == 0 {
		return nil
	}
	return r.path.Segments[len(r.path.Segments)-int(r.rest):]
}

// Key is the map's concrete path (spec.templates[3].metadata.annotations), from the Places it was
// recorded in.
func (pl *Places) Key(r *Ref) string {
	return string(pl.appendPath(nil, r.path, len(r.path.Segments), pl.Values[r.placeAt:]))
}

// SamePlace reports whether a (recorded in pl) and b (in other) have the same concrete path.
func (pl *Places) SamePlace(a *Ref, other *Places, b *Ref) bool {
	if a.path != b.path {
		return pl.Key(a) == other.Key(b) // two paths may name one map
	}
	n := a.path.wildcards
	va, vb := pl.Values[a.placeAt:int(a.placeAt)+n], other.Values[b.placeAt:int(b.placeAt)+n]
	for k := range va {
		switch x, y := va[k], vb[k]; {
		case x >= 0 || y >= 0:
			if x != y {
				return false
			}
		case pl.Names[-x-1] != other.Names[-y-1]:
			return false
		}
	}
	return true
}

// Position is where the map is in the document, or where it will be created.
func (r *Ref) Position() int32 {
	switch {
	case r.rest == 0:
		return r.Where.At
	case r.Entry.Exists():
		return r.Entry.At
	}
	return r.Where.At
}

// compareRefs orders targets by place: position, then the names still to create.
func compareRefs(a, b Ref) int {
	if pa, pb := a.Position(), b.Position(); pa != pb {
		return int(pa - pb)
	}
	return slices.CompareFunc(a.RestSegments(), b.RestSegments(), func(x, y Segment) int { return strings.Compare(x.Name, y.Name) })
}

// InDocumentOrder sorts targets by place and drops a map's second naming: a map named by several paths (a
// wildcard and one role's own path) is one target, stamped once.
func InDocumentOrder(refs []Ref) []Ref {
	slices.SortStableFunc(refs, compareRefs)
	return slices.CompactFunc(refs, func(a, b Ref) bool { return compareRefs(a, b) == 0 })
}
