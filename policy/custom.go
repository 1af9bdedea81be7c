package policy

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// Guard maps (rule 13), target map keys, and the pairing of an UPDATE's targets.

// oldMaps is what the kind's paths name in the old object: now itself when unchangedAround. problemFirst
// looks for the old object's bad input before recording its maps (a declared kind's UPDATE that the paired
// walk gave up on: the old object may hold hundreds of thousands of them).
func (e *evaluation) oldMaps(now *objectMaps, problemFirst bool) (objectMaps, string) {
	if e.unchangedAround(now) {
		return *now, ""
	}
	if problemFirst {
		if _, problem := e.walk(&e.was, true, 0); problem != "" {
			return objectMaps{}, problem
		}
	}
	return e.walk(&e.was, false, 0)
}

// untouched reports whether every top-level member a declared kind's paths start in holds the same bytes
// in the old object (a controller's status write): nothing to walk (docs/rules.md "Cost").
func (e *evaluation) untouched() bool {
	if !e.req.object.IsObject() || !e.req.oldObject.IsObject() {
		return false
	}
	x := e.req.index
	now, was := rawjson.Root(e.req.object.Raw), rawjson.Root(e.req.oldObject.Raw)
	var seen []string
	for _, paths := range [2][]walk.Path{e.kind.targets, e.kind.guards} {
		for i := range paths {
			name := paths[i].Segments[0].Name
			if slices.Contains(seen, name) {
				continue
			}
			seen = append(seen, name)
			a, dupA := x.ChildRaw(now, name)
			b, dupB := x.ChildRaw(was, name)
			if dupA || dupB || a.Raw != b.Raw {
				return false
			}
		}
	}
	return true
}

// unchangedAround reports whether every map now names lies inside a top-level member the old object holds
// once with the same bytes: each map is then its own pair.
func (e *evaluation) unchangedAround(now *objectMaps) bool {
	if len(now.targets)+len(now.guard) == 0 {
		return false // nothing to pair: walking the old object costs little, and finds its bad input
	}
	var same []rawjson.Ref // the new object's top-level members the old object holds unchanged
	oldRoot := rawjson.Root(e.req.oldObject.Raw)
	it, ok := e.req.index.Members(rawjson.Root(now.doc))
	if !ok {
		return false
	}
	for it, key, value, more := it.Next(); more; it, key, value, more = it.Next() {
		if was, dup := e.req.index.ChildRaw(oldRoot, key.Str); !dup && was.Raw == value.Raw {
			same = append(same, rawjson.RefOf(value))
		}
	}
	for _, list := range [2][]walk.Ref{now.targets, now.guard} {
		for i := range list {
			if !within(same, list[i].Position()) {
				return false
			}
		}
	}
	return now.labels == nil || within(same, now.labels.Position())
}

// within reports whether offset at lies inside one of spans.
func within(spans []rawjson.Ref, at int32) bool {
	for _, s := range spans {
		if at >= s.At && at < s.At+s.N {
			return true
		}
	}
	return false
}

// sameBytes reports whether two optional values have the same bytes, or are both absent.
func sameBytes(doc string, a rawjson.Ref, oldDoc string, b rawjson.Ref) bool {
	if !a.Exists() || !b.Exists() {
		return a.Exists() == b.Exists()
	}
	return doc[a.At:a.At+a.N] == oldDoc[b.At:b.At+b.N]
}

// pairing finds a target's pair in the old object by its concrete path: the target at the same position
// first, then, after the first miss, through an index of the old targets.
type pairing struct {
	was                  []walk.Ref
	wasPlaces, nowPlaces *walk.Places
	byKey                map[string]*walk.Ref
}

func (p *pairing) find(i int, t *walk.Ref) (*walk.Ref, bool) {
	if p.byKey == nil {
		if i < len(p.was) && p.nowPlaces.SamePlace(t, p.wasPlaces, &p.was[i]) {
			return &p.was[i], true
		}
		p.byKey = make(map[string]*walk.Ref, len(p.was))
		for j := range p.was {
			w := &p.was[j]
			p.byKey[p.wasPlaces.Key(w)] = w
		}
	}
	before, paired := p.byKey[p.nowPlaces.Key(t)]
	return before, paired
}

// guard applies rules 13 and 15 to the guard maps' leaves for an untrusted requester.
func (e *evaluation) guard(now, was *objectMaps) (decision, bool) {
	var pairs pairing
	if was != nil {
		pairs = pairing{was: was.guard, wasPlaces: &was.guardPlaces, nowPlaces: &now.guardPlaces}
	}
	for i := range now.guard {
		g := &now.guard[i]
		var before map[string]gjson.Result // the old map's members; nil on CREATE and for a new map
		if was != nil {
			if old, paired := pairs.find(i, g); paired {
				before = membersOf(e.req.index, old.Map().Result(was.doc))
			}
		}
		if refusal := e.guardMapRefusal(now, g, before); refusal != "" {
			e.warn("refused a guard map entry in " + now.guardKey(g) + " (rules 13 and 15)")
			return reject(refusal), true
		}
	}
	return decision{}, false
}

// guardMapRefusal is why guard map g is refused: its first leaf refused always, or refused because its
// member is new or changed since before.
func (e *evaluation) guardMapRefusal(now *objectMaps, g *walk.Ref, before map[string]gjson.Result) string {
	var refusal string
	e.req.index.ForEach(g.Map().Result(now.doc), func(key, value gjson.Result) bool {
		member := guardMember{key: key.Str, value: value, before: before}
		rawjson.EachLeaf(value.Raw, key.Str, func(l rawjson.Leaf) bool {
			if why, always := e.leafRefusal(now, g, l); why != "" && (always || member.changed()) {
				refusal = why
			}
			return refusal == "" // an unchanged member is still read for template keys
		})
		return refusal == ""
	})
	return refusal
}

// guardMember is one member of a guard map, compared with the old map's (set by a trusted requester, or
// before the policy) only when a leaf needs it, and then once.
type guardMember struct {
	key                string
	value              gjson.Result
	before             map[string]gjson.Result
	compared, isChange bool
}

func (m *guardMember) changed() bool {
	if !m.compared {
		was, found := m.before[m.key]
		m.compared, m.isChange = true, !found || !sameValue(was, m.value)
	}
	return m.isChange
}

// leafRefusal is why a leaf of guard map g is refused: always, or only when its member changed.
func (e *evaluation) leafRefusal(now *objectMaps, g *walk.Ref, l rawjson.Leaf) (why string, always bool) {
	switch {
	case strings.Contains(l.Key, "{{"):
		return templateKeyRefusal(now.guardKey(g), l.Key), true
	case l.IsString && strings.HasSuffix(l.Key, TaskGroupsKey):
		tg := readTaskGroups(l.Text, e.settings.LegacyUserLabel)
		return tg.refusal(false), false
	case strings.Contains(l.Key, AnnotationKey) || l.IsString && strings.Contains(l.Text, AnnotationKey):
		return guardRefusal(now.guardKey(g), l.Key), false
	}
	return "", false
}

// membersOf returns the members of obj by key; a key given twice maps to an absent value.
func membersOf(x *rawjson.Index, obj gjson.Result) map[string]gjson.Result {
	if !obj.IsObject() {
		return nil
	}
	out := make(map[string]gjson.Result)
	x.ForEach(obj, func(key, value gjson.Result) bool {
		if _, dup := out[key.Str]; dup {
			value = gjson.Result{}
		}
		out[key.Str] = value
		return true
	})
	return out
}

// checkTargetKeys refuses an untrusted requester's target map key that no pod can carry.
func (e *evaluation) checkTargetKeys(now *objectMaps, t *walk.Ref) (decision, bool) {
	if !e.kind.isDeclared() || !t.Map().Exists() || e.trusted() {
		return decision{}, false // no map yet: no key, and no closure made
	}
	return e.checkMapKeys(now, t)
}

// checkMapKeys is checkTargetKeys for a target whose map exists.
func (e *evaluation) checkMapKeys(now *objectMaps, t *walk.Ref) (decision, bool) {
	m := t.Map().Result(now.doc)
	if !m.IsObject() {
		return decision{}, false
	}
	var refusal string
	e.req.index.ForEach(m, func(key, _ gjson.Result) bool {
		if labelKeyProblem(strings.ToLower(key.Str)) != "" { // the API server's check of annotation keys
			refusal = invalidKeyRefusal(now.key(t), key.Str)
		}
		return refusal == ""
	})
	if refusal != "" {
		e.warn("refused a key of " + now.key(t) + " (custom-resource target keys)")
		return reject(refusal), true
	}
	return decision{}, false
}

// sameValue reports whether two optional JSON values are equal (strings as sameEntry compares them).
func sameValue(a, b gjson.Result) bool {
	if a.Type == gjson.String && b.Type == gjson.String {
		return sameEntry(a, b)
	}
	return a.Exists() == b.Exists() && a.Raw == b.Raw
}
