package policy

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Rules 11-13: the kinds declared in customWorkloads. Their annotation paths name the maps an operator
// copies onto the pods it creates (the targets); their guard paths name configuration maps the operator
// turns into pod annotations by its own syntax. The targets are handled as a built-in workload's template
// is, one by one, and every change is spliced into the object in one pass.

// maps is what the declared kind's paths name in one object (request.object or request.oldObject).
type maps struct {
	doc            string // the object's JSON text: every cref is an offset into it
	targets, guard []cref
	// keys and guardKeys hold the crefs' concrete paths (cref.keyAt).
	keys, guardKeys []byte
}

// key is a target's concrete path, for a message.
func (m *maps) key(t *cref) string { return string(t.keyIn(m.keys)) }

// guardKey is a guard map's concrete path, for a message.
func (m *maps) guardKey(g *cref) string { return string(g.keyIn(m.guardKeys)) }

// customMaps walks every annotation path and every guard path of the declared kind over an object.
func (e *evaluation) customMaps(object gjson.Result, field string) (maps, string) {
	if !object.IsObject() {
		return maps{}, field + " is missing or not an object"
	}
	c := e.kind.custom
	root := rawjson.Root(object.Raw)
	w := walker{doc: object.Raw, index: e.req.index, field: field, kind: e.kind.name, entry: AnnotationKey, compact: true}
	for i := range c.annotations {
		if problem := w.walk(root, &c.annotations[i]); problem != "" {
			return maps{}, problem
		}
	}
	g := walker{doc: object.Raw, index: e.req.index, field: field, kind: e.kind.name, compact: true}
	for i := range c.guards {
		if problem := g.walk(root, &c.guards[i]); problem != "" {
			return maps{}, problem
		}
	}
	return maps{doc: object.Raw, targets: inDocumentOrder(w.crefs), guard: inDocumentOrder(g.crefs), keys: w.keys, guardKeys: g.keys}, ""
}

// createCustom applies rule 11 (and rule 13 on CREATE).
func (e *evaluation) createCustom() decision {
	now, problem := e.customMaps(e.req.object, "request.object")
	if problem != "" {
		return badInput(problem)
	}
	// Rule 4 for the whole object: an operator's intermediate object (a RayCluster from a RayJob) was
	// copied from a parent that was already handled.
	if e.systemUser() {
		if e.settings.BypassControllers {
			if d, refused := e.checkValues(&now); refused {
				return d
			}
		}
		e.debug("custom resource created by a system user: left unchanged (rules 11 and 4)")
		return accept()
	}
	trusted := e.trusted()
	if !trusted {
		if d, refused := e.guard(&now, nil); refused {
			return d
		}
	}
	c := e.customChange(len(now.targets))
	for i := range now.targets {
		t := &now.targets[i]
		if !trusted {
			if d, refused := e.checkTargetKeys(&now, t, nil, nil); refused {
				return d
			}
		}
		if d, refused := c.asOnCreate(&now, t, t.value.Result(now.doc), trusted); refused {
			return d
		}
	}
	return c.decision()
}

// checkValues validates every value present in the targets (a trusted requester's).
func (e *evaluation) checkValues(m *maps) (decision, bool) {
	for i := range m.targets {
		if t := &m.targets[i]; t.value.Exists() {
			if problem := CheckSuppliedValue(t.value.Result(m.doc).Str); problem != "" {
				return e.invalidValueIn(m.key(t), problem), true
			}
		}
	}
	return decision{}, false
}

// updateCustom applies rule 12 (and rule 13 on UPDATE): targets are paired by their concrete path.
func (e *evaluation) updateCustom() decision {
	now, problem := e.customMaps(e.req.object, "request.object")
	if problem != "" {
		return badInput(problem)
	}
	if rawjson.IsMissing(e.req.oldObject) {
		return badInput("request.oldObject is missing: an UPDATE needs the old object to compare with")
	}
	was, problem := e.oldMaps(&now)
	if problem != "" {
		return badInput(problem)
	}
	trusted := e.trusted()
	if !trusted {
		if d, refused := e.guard(&now, &was); refused {
			return d
		}
	}
	pairs := pairing{was: was.targets, wasKeys: was.keys, nowKeys: now.keys}
	c := e.customChange(len(now.targets))
	for i := range now.targets {
		t := &now.targets[i]
		before, paired := pairs.find(i, t)
		if !trusted {
			if d, refused := e.checkTargetKeys(&now, t, &was, before); refused {
				return d
			}
		}
		if paired && sameBytes(now.doc, t.value, was.doc, before.value) {
			continue // unchanged, byte for byte (a controller's status write): nothing to unescape
		}
		value := t.value.Result(now.doc)
		var beforeValue gjson.Result
		if paired {
			beforeValue = before.value.Result(was.doc)
		}
		switch {
		case !paired: // a new element: as on CREATE
			if d, refused := c.asOnCreate(&now, t, value, trusted); refused {
				return d
			}
		case sameEntry(beforeValue, value): // unchanged
		case trusted: // rule 7
			if value.Exists() {
				if problem := CheckSuppliedValue(value.Str); problem != "" {
					return e.invalidValueIn(now.key(t), problem)
				}
			}
		case e.settings.OnUntrustedAnnotation == ModeReject: // rule 8
			e.warn("refused a change of " + AnnotationKey + " in " + now.key(t) + " (rule 12)")
			return reject(Rule12Refusal(e.describeRequester(), now.key(t), e.kind.name))
		case beforeValue.Exists(): // rule 8: restored
			c.edits.set(t, rawjson.Texts(nil, beforeValue.Raw))
			c.restored++
		default: // rule 8: added where there was none, removed
			c.edits.remove(t)
			c.restored++
		}
	}
	return c.decision()
}

// oldMaps is what the declared kind's paths name in the old object: now itself when every map of now
// lies where the old object is the same (unchangedAround), each map then being its own pair.
func (e *evaluation) oldMaps(now *maps) (maps, string) {
	if e.unchangedAround(now) {
		return *now, ""
	}
	return e.customMaps(e.req.oldObject, "request.oldObject")
}

// unchangedAround reports whether every map now names lies inside a top-level member of the object (spec,
// say) that the old object holds once, with the same bytes. The old object then names the same maps, at
// the same concrete paths, with the same contents, and walking it would only find them again: each map is
// its own pair, unchanged. A controller's status write to a Workflow of thousands of templates leaves spec
// as it was, and is decided by one walk instead of two.
func (e *evaluation) unchangedAround(now *maps) bool {
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
	for _, list := range [2][]cref{now.targets, now.guard} {
		for i := range list {
			if !within(same, list[i].position()) {
				return false
			}
		}
	}
	return true
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
	was              []cref
	wasKeys, nowKeys []byte
	byKey            map[string]*cref
}

func (p *pairing) find(i int, t *cref) (*cref, bool) {
	key := t.keyIn(p.nowKeys)
	if p.byKey == nil {
		if i < len(p.was) && bytes.Equal(p.was[i].keyIn(p.wasKeys), key) {
			return &p.was[i], true
		}
		p.byKey = make(map[string]*cref, len(p.was))
		for j := range p.was {
			w := &p.was[j]
			p.byKey[string(w.keyIn(p.wasKeys))] = w
		}
	}
	before, paired := p.byKey[string(key)]
	return before, paired
}

// customChange collects the changes of one request to a custom resource.
type customChange struct {
	e                  *evaluation
	edits              edits
	stamp              *string // the requester's identity as the annotation value, once a supplied one is compared with it
	stampJSON          []rawjson.Part
	replaced, restored int
}

func (e *evaluation) customChange(targets int) *customChange {
	c := &customChange{e: e, edits: edits{doc: e.req.object.Raw, index: e.req.index}, stampJSON: e.stampJSON()}
	c.edits.sets = make([]setOp, 0, targets)
	return c
}

// isStamp reports whether a supplied value is exactly the requester's identity as the policy writes it.
func (c *customChange) isStamp(value string) bool {
	if c.stamp == nil {
		stamp := c.e.stamp()
		c.stamp = &stamp
	}
	return value == *c.stamp
}

// asOnCreate applies rules 1 and 3 to one target (value is its annotation): a trusted requester's value is
// validated and kept, a target without a value is stamped, an untrusted value is replaced (or the request
// rejected).
func (c *customChange) asOnCreate(m *maps, t *cref, value gjson.Result, trusted bool) (decision, bool) {
	e := c.e
	switch {
	case !value.Exists(): // rule 3
		c.edits.set(t, c.stampJSON)
	case trusted:
		if problem := CheckSuppliedValue(value.Str); problem != "" {
			return e.invalidValueIn(m.key(t), problem), true
		}
	case c.isStamp(value.Str): // the requester's own identity: nothing forged, nothing to change
	case e.settings.OnUntrustedAnnotation == ModeReject:
		e.warn("refused an untrusted " + AnnotationKey + " value in " + m.key(t) + " (rule 11)")
		return reject(Rule11Refusal(e.describeRequester(), m.key(t))), true
	default:
		c.edits.set(t, c.stampJSON)
		c.replaced++
	}
	return decision{}, false
}

// decision answers with every change spliced in one pass, and one warning for the request.
func (c *customChange) decision() decision {
	mutated, problem := c.edits.result()
	if problem != "" {
		return badInput(problem)
	}
	d := decision{accepted: true, mutated: mutated}
	if w := customWarning(c.replaced, c.restored); w != "" {
		c.e.warn(w)
		d.warnings = []string{w}
	}
	if mutated.Changed() {
		c.e.debug("stamped the requester in the custom resource's annotation maps (rules 11 and 12)")
	}
	return d
}

// customWarning says what was done to untrusted values, in one line under 120 characters (kubectl prints
// warnings on one line each).
func customWarning(replaced, restored int) string {
	maps := func(n int) string {
		if n == 1 {
			return "1 map"
		}
		return strconv.Itoa(n) + " maps"
	}
	switch {
	case replaced > 0 && restored > 0:
		return AnnotationKey + " was restored in " + maps(restored) + " and replaced with the requester's identity in " +
			maps(replaced)
	case replaced > 0:
		return AnnotationKey + " was replaced with the requester's identity in " + maps(replaced) +
			": only trusted users may set it"
	case restored > 0:
		return AnnotationKey + " was restored to its previous value in " + maps(restored) +
			": only trusted users may change it"
	}
	return ""
}

// guard applies rule 13 for an untrusted requester. Every member of a guard map is flattened to its
// leaves (Flink reads nested configuration flattened: names joined with ".", list elements with ";"); a
// leaf whose key or text names the annotation, in a member that is new or changed compared with the old
// object, is refused in both modes (nothing sensible can be replaced inside an operator's own syntax), and
// so is a leaf whose key is a template ("{{"), changed or not: a change elsewhere (the workflow's
// arguments) changes what it becomes. A leaf whose key ends with the task-groups annotation is read as
// task groups (rule 15). Old members are looked up in a map, so the check is linear in the leaves.
func (e *evaluation) guard(now, was *maps) (decision, bool) {
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
				var why string
				switch {
				case strings.Contains(l.key, "{{"):
					refusal = TemplateKeyRefusal(now.guardKey(g), l.key)
					return false
				case l.isString && strings.HasSuffix(l.key, TaskGroupsKey) && namesAnnotation(l.text):
					why = TaskGroupsRefusal
				case strings.Contains(l.key, AnnotationKey) || l.isString && strings.Contains(l.text, AnnotationKey):
					why = GuardRefusal(now.guardKey(g), l.key)
				default:
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

// TaskGroupsKey is the annotation YuniKorn's gang scheduling reads task groups from (rule 15).
const TaskGroupsKey = "yunikorn.apache.org/task-groups"

// checkTargetKeys applies, for an untrusted requester, the rule on the keys of a target map and rule 15
// to one target (old is its pair on UPDATE, or nil): every key must be a valid annotation key (Argo
// substitutes "{{...}}" in keys, so an invalid key may become the annotation), and a task-groups value
// that is new or changed may not name the annotation.
func (e *evaluation) checkTargetKeys(now *maps, t *cref, was *maps, old *cref) (decision, bool) {
	if !t.m.Exists() {
		return decision{}, false // no map yet: no key (and, in the module, no closure made for each of thousands)
	}
	return e.checkMapKeys(now, t, was, old)
}

// checkMapKeys is checkTargetKeys for a target whose map exists.
func (e *evaluation) checkMapKeys(now *maps, t *cref, was *maps, old *cref) (decision, bool) {
	m := t.m.Result(now.doc)
	if !m.IsObject() {
		return decision{}, false
	}
	var oldMap gjson.Result
	if old != nil {
		oldMap = old.m.Result(was.doc)
	}
	var refusal string
	e.req.index.ForEach(m, func(key, value gjson.Result) bool {
		switch {
		case labelKeyProblem(strings.ToLower(key.Str)) != "": // the API server's check of annotation keys
			refusal = InvalidKeyRefusal(now.key(t), key.Str)
		case key.Str == TaskGroupsKey:
			var was gjson.Result // a key given twice in the old map: no value to compare with
			if oldMap.IsObject() {
				if _, v, dup := e.req.index.Member(oldMap, TaskGroupsKey); !dup {
					was = v
				}
			}
			refusal = taskGroupsRefusal(value, was)
		}
		return refusal == ""
	})
	if refusal != "" {
		e.warn("refused a key of " + now.key(t) + " (custom-resource target keys, rule 15)")
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

func (e *evaluation) invalidValueIn(where, problem string) decision {
	return reject(InvalidValueRefusal(where, problem))
}
