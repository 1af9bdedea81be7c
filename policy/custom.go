package policy

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Rules 11-13: the kinds declared in customWorkloads. Their annotation paths name the maps an operator
// copies onto the pods it creates (the targets); their guard paths name configuration maps the operator
// turns into pod annotations by its own syntax. The targets are handled as a built-in workload's template
// is, one by one, and every change is spliced into the object in one pass.

// customMaps walks every annotation path and every guard path of the declared kind over an object.
func (e *evaluation) customMaps(object gjson.Result, field string) (targets, guards []mapRef, problem string) {
	if !object.IsObject() {
		return nil, nil, field + " is missing or not an object"
	}
	c := e.kind.custom
	root := docRoot(object.Raw)
	w := walker{doc: object.Raw, index: e.req.index, field: field, kind: e.kind.name, entry: AnnotationKey,
		refs: make([]mapRef, 0, 2*len(c.annotations))}
	for i := range c.annotations {
		if problem = w.walk(root, &c.annotations[i]); problem != "" {
			return nil, nil, problem
		}
	}
	g := walker{doc: object.Raw, index: e.req.index, field: field, kind: e.kind.name}
	for i := range c.guards {
		if problem = g.walk(root, &c.guards[i]); problem != "" {
			return nil, nil, problem
		}
	}
	sortByPosition(w.refs)
	return w.refs, g.refs, ""
}

// sortByPosition puts the maps in document order (a map to be created sits where its holder is).
func sortByPosition(refs []mapRef) {
	slices.SortStableFunc(refs, func(a, b mapRef) int { return a.position() - b.position() })
}

// position is where the map is in the document, or where it will be created.
func (r *mapRef) position() int {
	switch {
	case r.m.Exists():
		return r.m.Index
	case r.old.Exists():
		return r.old.Index
	}
	return r.holder.Index
}

// createCustom applies rule 11 (and rule 13 on CREATE).
func (e *evaluation) createCustom() decision {
	targets, guards, problem := e.customMaps(e.req.object, "request.object")
	if problem != "" {
		return badInput(problem)
	}
	// Rule 4 for the whole object: an operator's intermediate object (a RayCluster from a RayJob) was
	// copied from a parent that was already handled.
	if e.systemUser() {
		if e.settings.BypassControllers {
			if d, refused := e.checkValues(targets); refused {
				return d
			}
		}
		e.debug("custom resource created by a system user: left unchanged (rules 11 and 4)")
		return accept()
	}
	trusted := e.trusted()
	if !trusted {
		if d, refused := e.guard(guards, nil); refused {
			return d
		}
	}
	c := e.customChange(len(targets))
	for i := range targets {
		if d, refused := c.asOnCreate(&targets[i], trusted); refused {
			return d
		}
	}
	return c.decision()
}

// checkValues validates every value present in the targets (a trusted requester's).
func (e *evaluation) checkValues(targets []mapRef) (decision, bool) {
	for i := range targets {
		if t := &targets[i]; t.value.Exists() {
			if problem := CheckSuppliedValue(t.value.Str); problem != "" {
				return e.invalidValueIn(t.key, problem), true
			}
		}
	}
	return decision{}, false
}

// updateCustom applies rule 12 (and rule 13 on UPDATE): targets are paired by their concrete path.
func (e *evaluation) updateCustom() decision {
	targets, guards, problem := e.customMaps(e.req.object, "request.object")
	if problem != "" {
		return badInput(problem)
	}
	if isMissing(e.req.oldObject) {
		return badInput("request.oldObject is missing: an UPDATE needs the old object to compare with")
	}
	oldTargets, oldGuards, problem := e.customMaps(e.req.oldObject, "request.oldObject")
	if problem != "" {
		return badInput(problem)
	}
	trusted := e.trusted()
	if !trusted {
		if d, refused := e.guard(guards, oldGuards); refused {
			return d
		}
	}
	old := make(map[string]*mapRef, len(oldTargets))
	for i := range oldTargets {
		old[oldTargets[i].key] = &oldTargets[i]
	}
	c := e.customChange(len(targets))
	for i := range targets {
		t := &targets[i]
		before, paired := old[t.key]
		switch {
		case !paired: // a new element: as on CREATE
			if d, refused := c.asOnCreate(t, trusted); refused {
				return d
			}
		case sameEntry(before.value, t.value): // unchanged
		case trusted: // rule 7
			if t.value.Exists() {
				if problem := CheckSuppliedValue(t.value.Str); problem != "" {
					return e.invalidValueIn(t.key, problem)
				}
			}
		case e.settings.OnUntrustedAnnotation == ModeReject: // rule 8
			e.warn("refused a change of " + AnnotationKey + " in " + t.key + " (rule 12)")
			return reject(e.describeRequester() + " is not allowed to change the " + AnnotationKey + " annotation in " +
				t.key + " of this " + e.kind.name + ": leave it as it was")
		case before.value.Exists(): // rule 8: restored
			c.edits.set(t, texts(nil, before.value.Raw))
			c.restored++
		default: // rule 8: added where there was none, removed
			c.edits.remove(t)
			c.restored++
		}
	}
	return c.decision()
}

// customChange collects the changes of one request to a custom resource.
type customChange struct {
	e                  *evaluation
	edits              edits
	stamp              *string // the requester's identity as the annotation value, once a supplied one is compared with it
	stampJSON          []part
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

// asOnCreate applies rules 1 and 3 to one target: a trusted requester's value is validated and kept, a
// target without a value is stamped, an untrusted value is replaced (or the request rejected).
func (c *customChange) asOnCreate(t *mapRef, trusted bool) (decision, bool) {
	e := c.e
	switch {
	case !t.value.Exists(): // rule 3
		c.edits.set(t, c.stampJSON)
	case trusted:
		if problem := CheckSuppliedValue(t.value.Str); problem != "" {
			return e.invalidValueIn(t.key, problem), true
		}
	case c.isStamp(t.value.Str): // the requester's own identity: nothing forged, nothing to change
	case e.settings.OnUntrustedAnnotation == ModeReject:
		e.warn("refused an untrusted " + AnnotationKey + " value in " + t.key + " (rule 11)")
		return reject(e.describeRequester() + " is not allowed to set the " + AnnotationKey + " annotation (in " +
			t.key + "): remove it and the policy records the requester's identity itself"), true
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
	if mutated.changed() {
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

// guard applies rule 13 for an untrusted requester: a member of a guard map whose key or string value
// names the annotation, and that is new or changed compared with the old object, is refused in both modes
// (nothing sensible can be replaced inside an operator's own syntax).
func (e *evaluation) guard(maps, oldMaps []mapRef) (decision, bool) {
	for i := range maps {
		g := &maps[i]
		var before gjson.Result
		for j := range oldMaps {
			if oldMaps[j].key == g.key {
				before = oldMaps[j].m
			}
		}
		var refused bool
		var entry string
		e.req.index.forEach(g.m, func(key, value gjson.Result) bool {
			if !strings.Contains(key.Str, AnnotationKey) &&
				(value.Type != gjson.String || !strings.Contains(value.Str, AnnotationKey)) {
				return true
			}
			if before.Exists() {
				if _, was, dup := e.req.index.member(before, key.Str); !dup && sameValue(was, value) {
					return true // unchanged: it was there before the policy, or set by a trusted requester
				}
			}
			refused, entry = true, key.Str
			return false
		})
		if refused {
			e.warn("refused a guard map entry that sets " + AnnotationKey + " in " + g.key + " (rule 13)")
			return reject(GuardRefusal(g.key, entry)), true
		}
	}
	return decision{}, false
}

// GuardRefusal is rule 13's message.
func GuardRefusal(path, key string) string {
	return "the " + path + " entry " + key + " sets the " + AnnotationKey +
		" annotation: only trusted controllers and allow-listed submitters may"
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
	return reject("the " + AnnotationKey + " annotation in " + where + " is not valid: " + problem +
		`; a valid value looks like {"user":"alice","groups":["devops","system:authenticated"]}`)
}
