package policy

import (
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// The rules, once for every kind: walk the kind's paths, decide on each target in turn, write every
// change in one pass. Kinds differ in their voice (voice.go) and a Pod's UPDATE (rule 5).

// create applies docs/rules.md rules 1-4 and, for a declared kind, 11 and 13.
func (e *evaluation) create() decision {
	now, problem := e.walk(&e.now, false, e.mostTargets(e.req.object))
	if problem != "" {
		return e.walkRefusal(problem)
	}
	// Rule 4: a system user's workload was copied from a handled parent (YUNIKORN-1627).
	if e.kind.handling != PodHandling && e.systemUser() {
		if e.settings.BypassControllers {
			if d, refused := e.checkValues(&now); refused {
				return d
			}
		}
		e.debug(e.kind.voice.createdBySystem())
		return accept()
	}
	if d, refused := e.refuseIdentity(&now, nil); refused {
		return d
	}
	c := e.newChange(len(now.targets))
	c.oneValueOf(&now)
	for i := range now.targets {
		t := &now.targets[i]
		if d, refused := e.checkTargetKeys(&now, t); refused {
			return d
		}
		if d, refused := c.asOnCreate(&now, t, t.Value().Result(now.doc)); refused {
			return d
		}
	}
	return c.decision()
}

// update applies docs/rules.md rule 5 to a Pod, and rules 6-9 (12 and 13 for a declared kind) to the
// others, pairing targets with the old object's by their concrete path.
func (e *evaluation) update() decision {
	untouched := e.kind.isDeclared() && e.untouched()
	if untouched && e.trusted() {
		e.debug("annotation maps untouched, by a trusted requester: accepted unchecked (rule 12)")
		return accept() // a controller's status write: nothing to check, nothing to change
	}
	now, was, refusal, stopped := e.updateMaps(untouched)
	if stopped {
		return refusal
	}
	return e.updateOver(&now, &was)
}

// updateOver is update once the maps of both objects are found.
func (e *evaluation) updateOver(now, was *objectMaps) decision {
	if e.kind.handling == PodHandling {
		return e.immutable(now, was)
	}
	if d, refused := e.refuseIdentity(now, was); refused {
		return d
	}
	pairs := pairing{was: was.targets, wasPlaces: &was.places, nowPlaces: &now.places}
	c := e.newChange(0) // an UPDATE changes few of its targets, if any
	c.oneValueOf(now)
	for i := range now.targets {
		t := &now.targets[i]
		before, paired := pairs.find(i, t)
		if d, refused := e.checkTargetKeys(now, t); refused {
			return d
		}
		var d decision
		var refused bool
		if paired {
			d, refused = c.asOnUpdate(now, t, was, before)
		} else { // a new element: as on CREATE
			d, refused = c.asOnCreate(now, t, t.Value().Result(now.doc))
		}
		if refused {
			return d
		}
	}
	return c.decision()
}

// updateMaps finds the targets of an UPDATE's two objects: walked together when the kind is declared
// and the request is not a status-write shape (walk.Paired), otherwise, or when bad input stops the
// paired walk, each object on its own.
func (e *evaluation) updateMaps(untouched bool) (now, was objectMaps, _ decision, refused bool) {
	if untouched || !e.kind.isDeclared() {
		return e.updateMapsApart(untouched, false, 0)
	}
	now, was, paired, tooMany := e.walkPaired()
	switch {
	case tooMany:
		return now, was, e.walkRefusal(tooManyTargetsRefusal), true
	case !paired: // the objects hold bad input somewhere: walked apart, each finds its own
		return e.updateMapsApart(false, true, mostMaps(e.req.object))
	}
	return now, was, decision{}, false
}

// updateMapsApart walks the new object, then the old one. Untouched, every map is its own pair and
// unchanged, so only the keys of the maps that exist can refuse. problemFirst and most are oldMaps' and
// walk's: set when the paired walk gave up.
func (e *evaluation) updateMapsApart(untouched, problemFirst bool, most int) (now, was objectMaps, _ decision, refused bool) {
	now, problem := e.walk(&e.now, untouched, most)
	if problem != "" {
		return now, was, e.walkRefusal(problem), true
	}
	if rawjson.IsMissing(e.req.oldObject) {
		return now, was, badInput("request.oldObject is missing: an UPDATE needs the old object to compare with"), true
	}
	if untouched {
		return now, now, decision{}, false
	}
	if was, problem = e.oldMaps(&now, problemFirst); problem != "" {
		return now, was, badInput(problem), true
	}
	return now, was, decision{}, false
}

// walkRefusal answers a walk's problem: bad input, or the bounded answer (logged).
func (e *evaluation) walkRefusal(problem string) decision {
	if problem == tooManyTargetsRefusal {
		e.warn("refused an object too large once stamped (bounded answer)")
	}
	return badInput(problem)
}

// immutable applies rules 5, 14b, 15 and 16 to a Pod's UPDATE.
func (e *evaluation) immutable(now, was *objectMaps) decision {
	if !sameEntry(was.targets[0].Value().Result(was.doc), now.targets[0].Value().Result(now.doc)) {
		e.warn("refused a change of " + AnnotationKey + " on an existing pod (rule 5)")
		return reject(rule5Refusal)
	}
	if labelChanged(now, was, e.settings.LegacyUserLabel) {
		e.warn("refused a change of " + e.settings.LegacyUserLabel + " on an existing pod (rule 5)")
		return reject(rule5LabelRefusal(e.settings.LegacyUserLabel))
	}
	if refusal := relabelRefusal(&now.identity, &was.identity); refusal != "" && !e.trusted() {
		e.warn("refused a change of an existing pod's application (rule 14b)")
		return reject(refusal)
	}
	if refusal := e.podGroups(now, was); refusal != "" {
		e.warn("refused the task groups of an existing pod (rules 15 and 16)")
		return reject(refusal)
	}
	e.debug("pod update leaves the identity as it was (rules 5 and 14b)")
	return accept()
}

// labelChanged reports whether the legacy label changed where rules 5 and 9 guard it.
func labelChanged(now, was *objectMaps, legacyLabel string) bool {
	return legacyLabel != "" && was.labels != nil && !was.targets[0].Value().Exists() && !sameEntry(was.label(), now.label())
}

// refuseIdentity applies, for an untrusted requester, rules 13 and 15 to the guard maps and rule 14 to the
// target metadata (was is nil on CREATE). Trust is asked last, so the common request matches no pattern.
func (e *evaluation) refuseIdentity(now, was *objectMaps) (decision, bool) {
	if len(now.guard) > 0 && !e.trusted() {
		if d, refused := e.guard(now, was); refused {
			return d, true
		}
	}
	var old *podIdentity
	if was != nil {
		old = &was.identity
	}
	refusal := applicationRefusal(&now.identity, old, e.req.namespace.Str)
	if refusal == "" || e.trusted() {
		return decision{}, false
	}
	e.warn("refused the pods' application (rule 14)")
	return reject(refusal), true
}

// checkValues validates every value present in the targets (a trusted requester's).
func (e *evaluation) checkValues(m *objectMaps) (decision, bool) {
	for i := range m.targets {
		if t := &m.targets[i]; t.Value().Exists() {
			if problem := checkSuppliedValue(t.Value().Result(m.doc).Str); problem != "" {
				return e.invalidValueIn(e.place(m, t), problem), true
			}
		}
	}
	return decision{}, false
}

// place names a target in a message about its value.
func (e *evaluation) place(m *objectMaps, t *walk.Ref) string {
	if e.kind.where != "" {
		return e.kind.where
	}
	return m.key(t)
}

// outcome is what the decision did with one target, for the kind's voice to tell.
type outcome uint8

const (
	stamped        outcome = iota // rule 3: the requester's identity written where there was none
	replaced                      // rule 1: an untrusted value replaced by the requester's identity
	valueKept                     // rule 1: a trusted requester's value kept
	ownIdentity                   // rule 1: the value supplied is the requester's own identity
	labelKept                     // rule 2: the legacy label stands for the user
	labelIgnored                  // rule 2: the legacy label did not, and the requester was stamped
	trustedChange                 // rule 7: a trusted requester changed the template's identity
	restored                      // rule 8: an untrusted change of the annotation undone
	labelRestored                 // rules 8 and 9: an untrusted change of the legacy label alone undone
	groupsReplaced                // rule 16: an untrusted value in a task group replaced
	outcomes
)

// change collects one request's edits and how many targets had each outcome.
type change struct {
	e         *evaluation
	edits     *edits  // the Evaluator's
	stamp     *string // the requester's identity as the annotation value, once a supplied one is compared with it
	stampJSON []rawjson.Part
	stampText *string // the value stampJSON writes, once rule 16 needs it
	rewrites  []groupsRewrite
	n         [outcomes]int
}

func (e *evaluation) newChange(targets int) *change {
	c := &change{e: e, edits: &e.edits, stampJSON: stampJSON(&e.who)}
	c.edits.reset(e.req.object.Raw, e.req.index, targets)
	return c
}

// oneValueOf applies rule 11's "a trusted external names the user once".
func (c *change) oneValueOf(m *objectMaps) {
	if !c.e.kind.isDeclared() || !c.e.external() {
		return
	}
	var one gjson.Result
	for i := range m.targets {
		v := m.targets[i].Value().Result(m.doc)
		switch {
		case !v.Exists():
		case !one.Exists():
			one = v
		case !sameEntry(one, v):
			return
		}
	}
	if one.Exists() {
		c.stampJSON, c.stampText = rawjson.Texts(nil, one.Raw), &one.Str
	}
}

// ownStamp is the requester's identity as the policy writes it, made when first needed.
func (c *change) ownStamp() *string {
	if c.stamp == nil {
		stamp := stampValue(&c.e.who)
		c.stamp = &stamp
	}
	return c.stamp
}

// isStamp reports whether a supplied value is exactly the requester's identity as the policy writes it.
func (c *change) isStamp(value string) bool { return value == *c.ownStamp() }

// stamped is the value stampJSON writes, as a string Result: the requester's stamp, or rule 11's one value.
func (c *change) stamped() gjson.Result {
	if c.stampText == nil {
		c.stampText = c.ownStamp()
	}
	return gjson.Result{Type: gjson.String, Str: *c.stampText}
}

// asOnCreate applies rules 1-3 (11 for a declared kind) to one target whose annotation is value.
func (c *change) asOnCreate(m *objectMaps, t *walk.Ref, value gjson.Result) (decision, bool) {
	e := c.e
	carried, stamp := value, false // the target's value in the answer, for rule 16
	if value.Exists() && c.hasLabel(m) {
		c.n[labelIgnored]++ // rule 2: the annotation decides
	}
	switch {
	case !value.Exists():
		if c.labelStands(m) {
			break
		}
		c.edits.set(t, AnnotationKey, c.stampJSON)
		c.n[stamped]++
		stamp = true
	case e.trusted():
		if problem := checkSuppliedValue(value.Str); problem != "" {
			return e.invalidValueIn(e.place(m, t), problem), true
		}
		c.n[valueKept]++
	case c.isStamp(value.Str): // nothing forged, nothing to change
		c.n[ownIdentity]++
	case e.settings.OnUntrustedAnnotation == ModeReject:
		return e.kind.voice.refuseSupplied(e, m.key(t)), true
	default:
		c.edits.set(t, AnnotationKey, c.stampJSON)
		c.n[replaced]++
		stamp = true
	}
	return c.taskGroupsRules(m, t, carried, stamp, nil, nil)
}

// hasLabel reports a non-empty legacy label on the target (rule 2).
func (c *change) hasLabel(m *objectMaps) bool {
	label := m.label()
	return label.Exists() && label.Str != ""
}

// labelStands applies rule 2 to a target without the annotation.
func (c *change) labelStands(m *objectMaps) bool {
	if !c.hasLabel(m) {
		return false
	}
	if c.e.settings.BypassAuth && c.e.trusted() {
		c.n[labelKept]++
		return true
	}
	c.n[labelIgnored]++
	return false
}

// asOnUpdate applies rules 6-9 (12 for a declared kind) to one target and its pair in the old object.
func (c *change) asOnUpdate(now *objectMaps, t *walk.Ref, was *objectMaps, before *walk.Ref) (decision, bool) {
	e := c.e
	labelChange := labelChanged(now, was, e.settings.LegacyUserLabel)
	if sameBytes(now.doc, t.Map(), was.doc, before.Map()) && !labelChange {
		return decision{}, false // unchanged, byte for byte (a controller's status write): nothing to unescape
	}
	value, beforeValue := t.Value().Result(now.doc), before.Value().Result(was.doc)
	annotationChange := !sameEntry(beforeValue, value)
	carried := value // the target's value in the answer, for rule 16
	switch {
	case !annotationChange && !labelChange: // rule 6: no mutation, so no rollout is caused
	case e.trusted(): // rule 7
		if annotationChange && value.Exists() {
			if problem := checkSuppliedValue(value.Str); problem != "" {
				return e.invalidValueIn(e.place(now, t), problem), true
			}
		}
		c.n[trustedChange]++
	case e.settings.OnUntrustedAnnotation == ModeReject: // rule 8
		return e.kind.voice.refuseChange(e, now.key(t), !annotationChange), true
	default: // rule 8: restored
		if annotationChange {
			c.restore(t, AnnotationKey, beforeValue)
			c.n[restored]++
			carried = beforeValue
		} else {
			c.n[labelRestored]++
		}
		if labelChange {
			c.restore(now.labels, e.settings.LegacyUserLabel, was.label())
		}
	}
	return c.taskGroupsRules(now, t, carried, false, was, before)
}

// restore puts back key's old value in the map ref names: removed when there was none.
func (c *change) restore(ref *walk.Ref, key string, old gjson.Result) {
	if old.Exists() {
		c.edits.set(ref, key, rawjson.Texts(nil, old.Raw))
		return
	}
	c.edits.remove(ref, key)
}

// decision answers with every change spliced in one pass, told in the kind's voice.
func (c *change) decision() decision {
	mutated, problem := c.edits.result()
	if problem != "" {
		return badInput(problem)
	}
	if !mutated.Changed() {
		return c.e.kind.voice.tell(c, mutated)
	}
	// Bounded answer (docs/rules.md "Cost"): sized before the task groups' text is written.
	size, written := mutated.Len(), len(c.edits.writes)+len(c.edits.more)
	for i := range c.rewrites {
		size += c.rewrites[i].size
		written += c.rewrites[i].groups - 1
	}
	if size > maxObjectBytes {
		c.e.warn("refused an object too large once stamped (bounded answer)")
		return reject(tooLargeRefusal(size, written))
	}
	if len(c.rewrites) > 0 {
		for i := range c.rewrites {
			rw := &c.rewrites[i]
			_, _, text := rw.stamp(make([]byte, 0, rw.size), func(string) bool { return true })
			c.edits.writes[rw.write].value = rawjson.Texts(nil, rawjson.Quote(rawjson.View(text)))
		}
		if mutated, problem = c.edits.result(); problem != "" {
			return badInput(problem)
		}
	}
	return c.e.kind.voice.tell(c, mutated)
}
