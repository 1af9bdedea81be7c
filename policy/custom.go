package policy

import (
	"bytes"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// What only the kinds declared in customWorkloads have (rules 11-13): their annotation paths name the maps
// an operator copies onto the pods it creates (the targets, decided on as a built-in workload's template
// is: decide.go), their guard paths name configuration maps the operator turns into pod annotations by
// its own syntax (rule 13), and the keys of their targets are checked, as the API server does not check
// them. Pairing an UPDATE's targets, and walking its old object only when needed, serve every kind.

// oldMaps is what the kind's paths name in the old object: now itself when every map of now lies where
// the old object is the same (unchangedAround), each map then being its own pair.
func (e *evaluation) oldMaps(now *objectMaps) (objectMaps, string) {
	if e.unchangedAround(now) {
		return *now, ""
	}
	return e.walk(e.req.oldObject, "request.oldObject", &e.storage.oldObject)
}

// untouched reports whether every top-level member a declared kind's paths start in holds the same bytes
// in the old object (a controller's status write): a trusted requester's UPDATE then has nothing to check
// and nothing to change, and no path is walked (docs/rules.md "Cost").
func (e *evaluation) untouched() bool {
	if !e.req.object.IsObject() || !e.req.oldObject.IsObject() {
		return false
	}
	x := e.req.index
	now, was := rawjson.Root(e.req.object.Raw), rawjson.Root(e.req.oldObject.Raw)
	var seen []string
	for _, paths := range [2][]annotationPath{e.kind.targets, e.kind.guards} {
		for i := range paths {
			name := paths[i].segments[0].name
			if slices.Contains(seen, name) {
				continue
			}
			seen = append(seen, name)
			_, a, dupA := x.MemberRaw(now, name)
			_, b, dupB := x.MemberRaw(was, name)
			if dupA || dupB || a.Raw != b.Raw {
				return false
			}
		}
	}
	return true
}

// unchangedAround reports whether every map now names lies inside a top-level member of the object (spec,
// say) that the old object holds once, with the same bytes. The old object then names the same maps, at
// the same concrete paths, with the same contents, and walking it would only find them again: each map is
// its own pair, unchanged. A controller's status write to a Workflow of thousands of templates leaves spec
// as it was, and is decided by one walk instead of two.
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
	for {
		var key, value gjson.Result
		var more bool
		if it, key, value, more = it.Next(); !more {
			break
		}
		if _, was, dup := e.req.index.MemberRaw(oldRoot, key.Str); !dup && was.Raw == value.Raw {
			same = append(same, rawjson.RefOf(value))
		}
	}
	for _, list := range [2][]targetRef{now.targets, now.guard} {
		for i := range list {
			if !within(same, list[i].position()) {
				return false
			}
		}
	}
	return now.labels == nil || within(same, now.labels.position())
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

// sameBytes reports whether two optional values are present in both documents with the same bytes, or
// absent from both.
func sameBytes(doc string, a rawjson.Ref, oldDoc string, b rawjson.Ref) bool {
	if !a.Exists() || !b.Exists() {
		return a.Exists() == b.Exists()
	}
	return doc[a.At:a.At+a.N] == oldDoc[b.At:b.At+b.N]
}

// pairing finds a target's pair in the old object by its concrete path. Most updates keep the object's
// shape, so the target at the same position is tried first; the first miss indexes the old targets.
type pairing struct {
	was              []targetRef
	wasKeys, nowKeys []byte
	byKey            map[string]*targetRef
}

func (p *pairing) find(i int, t *targetRef) (*targetRef, bool) {
	key := t.keyIn(p.nowKeys)
	if p.byKey == nil {
		if i < len(p.was) && bytes.Equal(p.was[i].keyIn(p.wasKeys), key) {
			return &p.was[i], true
		}
		p.byKey = make(map[string]*targetRef, len(p.was))
		for j := range p.was {
			w := &p.was[j]
			p.byKey[string(w.keyIn(p.wasKeys))] = w
		}
	}
	before, paired := p.byKey[string(key)]
	return before, paired
}

// guard applies rule 13 for an untrusted requester. Every member of a guard map is flattened to its
// leaves (Flink reads nested configuration flattened: names joined with ".", list elements with ";"); a
// leaf whose key or text names the annotation, in a member that is new or changed compared with the old
// object, is refused in both modes (nothing sensible can be replaced inside an operator's own syntax), and
// so is a leaf whose key is a template ("{{"), changed or not: a change elsewhere (the workflow's
// arguments) changes what it becomes. A leaf whose key ends with the task-groups annotation is read as
// task groups (rule 15). Old members are looked up in a map, so the check is linear in the leaves.
func (e *evaluation) guard(now, was *objectMaps) (decision, bool) {
	var pairs pairing
	if was != nil {
		pairs = pairing{was: was.guard, wasKeys: was.guardKeys, nowKeys: now.guardKeys}
	}
	for i := range now.guard {
		g := &now.guard[i]
		var before map[string]gjson.Result
		if was != nil {
			if old, paired := pairs.find(i, g); paired {
				before = membersOf(e.req.index, old.m.Result(was.doc))
			}
		}
		var refusal string
		e.req.index.ForEach(g.m.Result(now.doc), func(key, value gjson.Result) bool {
			changed := -1 // unknown until a leaf needs it
			eachLeaf(value.Raw, key.Str, func(l leaf) bool {
				why, always := e.leafRefusal(now, g, l)
				switch {
				case always:
					refusal = why
					return false
				case why == "":
					return true
				}
				if changed < 0 {
					changed = 1
					if was, found := before[key.Str]; found && sameValue(was, value) {
						changed = 0 // it was there before: set by a trusted requester, or before the policy
					}
				}
				if changed == 1 {
					refusal = why
				}
				return refusal == "" // an unchanged member is still read for template keys
			})
			return refusal == ""
		})
		if refusal != "" {
			e.warn("refused a guard map entry in " + now.guardKey(g) + " (rules 13 and 15)")
			return reject(refusal), true
		}
	}
	return decision{}, false
}

// leafRefusal is what refuses a leaf of the guard map g: always (a template key, changed or not), or
// why, when its member is new or changed (rules 13 and 15); "" for neither.
func (e *evaluation) leafRefusal(now *objectMaps, g *targetRef, l leaf) (why string, always bool) {
	switch {
	case strings.Contains(l.key, "{{"):
		return TemplateKeyRefusal(now.guardKey(g), l.key), true
	case l.isString && strings.HasSuffix(l.key, TaskGroupsKey):
		tg := readTaskGroups(l.text, e.settings.LegacyUserLabel)
		return tg.refusal(false), false
	case strings.Contains(l.key, AnnotationKey) || l.isString && strings.Contains(l.text, AnnotationKey):
		return GuardRefusal(now.guardKey(g), l.key), false
	}
	return "", false
}

// membersOf returns the members of obj by key (none when obj is absent); a key that occurs more than
// once maps to an absent value, so that no copy counts as unchanged.
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

// checkTargetKeys applies, for an untrusted requester, the rule on the keys of a declared kind's target
// map: every key must be a valid annotation key (Argo substitutes "{{...}}" in keys, so an invalid key
// may become the annotation).
func (e *evaluation) checkTargetKeys(now *objectMaps, t *targetRef) (decision, bool) {
	if !e.kind.isDeclared() || !t.m.Exists() || e.trusted() {
		return decision{}, false // no map yet: no key (and, in the module, no closure made for each of thousands)
	}
	return e.checkMapKeys(now, t)
}

// checkMapKeys is checkTargetKeys for a target whose map exists.
func (e *evaluation) checkMapKeys(now *objectMaps, t *targetRef) (decision, bool) {
	m := t.m.Result(now.doc)
	if !m.IsObject() {
		return decision{}, false
	}
	var refusal string
	e.req.index.ForEach(m, func(key, _ gjson.Result) bool {
		if labelKeyProblem(strings.ToLower(key.Str)) != "" { // the API server's check of annotation keys
			refusal = InvalidKeyRefusal(now.key(t), key.Str)
		}
		return refusal == ""
	})
	if refusal != "" {
		e.warn("refused a key of " + now.key(t) + " (custom-resource target keys)")
		return reject(refusal), true
	}
	return decision{}, false
}

// sameValue reports whether two optional JSON values are equal: strings as sameEntry compares them, other
// values byte for byte.
func sameValue(a, b gjson.Result) bool {
	if a.Type == gjson.String && b.Type == gjson.String {
		return sameEntry(a, b)
	}
	return a.Exists() == b.Exists() && a.Raw == b.Raw
}
