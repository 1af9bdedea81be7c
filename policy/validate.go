package policy

import (
	"github.com/francoispqt/onelog"
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Validate answers a Kubewarden validate payload ({"request":..,"settings":..}) with a validation response.
// It never fails: bad input is a rejection with code 400 (docs/rules.md "Bad input"), since the host turns a Go
// error into an HTTP 500 and, with failurePolicy Fail, that blocks every pod in the cluster.
func Validate(payload []byte, logger *onelog.Logger) []byte {
	return evaluate(payload, logger).encode()
}

// ValidateOver is Validate for a payload the caller has no further use for: the answer is written over
// the payload's bytes, and the capacity after them, when it fits there (decision.encodeOver), so that a
// mutated object, as large as the request's, needs no buffer of its own. The waPC handler uses it: the
// request buffer is the guest's own, and nothing reads it after the call.
func ValidateOver(payload []byte, logger *onelog.Logger) []byte {
	return evaluate(payload, logger).encodeOver(payload)
}

// ValidateSettings answers a Kubewarden validate_settings payload (the settings object).
func ValidateSettings(payload []byte) []byte {
	_, problem := CheckSettings(payload)
	return settingsResponse{Valid: problem == "", Message: problem}.encode()
}

// evaluate reads the request in the order docs/rules.md "Which requests are decided" fixes: operation, then kind, then the request's own fields.
//
// The decisions it hands over to (create, updatePod, ...) are kept out of line (go:noinline): inlined,
// their locals shared one 9 KB stack frame, and a fresh instance touches every stack page a request
// reaches; each page is a page fault on wasmtime, the engine policy-server runs (a 4 KB Pod: 12.9 -> 6.6
// KB of stack, 14 -> 12 pages written; docs/runtime.md "Pages"). TinyGo's last step, binaryen's wasm-opt,
// later inlines their code into the caller all the same, but each keeps its own frame (its own moves of
// the stack pointer): the frames stay apart.
func evaluate(payload []byte, logger *onelog.Logger) decision {
	// The payload is only read and outlives the evaluation, so a string view of it is safe.
	text := rawjson.View(payload)
	index := rawjson.Parse(text)
	if index == nil {
		return badInput("the validate payload is not valid JSON")
	}
	r := readRequest(index)
	if r.payloadDuplicate != "" {
		return badInput(duplicateMember("the validate payload's " + r.payloadDuplicate))
	}
	if !r.present {
		return badInput("the validate payload has no \"request\" object")
	}
	if r.operationDuplicate != "" {
		return badInput(duplicateMember(r.operationDuplicate))
	}
	if r.operation.Type != gjson.String {
		return badInput("request.operation is missing")
	}
	op := r.operation.Str
	if op != opCreate && op != opUpdate {
		return accept() // DELETE, CONNECT: nothing to stamp or protect
	}
	if r.duplicate != "" {
		return badInput(duplicateMember(r.duplicate))
	}
	kind, ours := kindOf(r.group, r.kind, op)
	if !ours {
		return evaluateCustom(&r, logger)
	}
	if kind.rules == BindingRules {
		return bindingDecision(index, r.object, logger) // needs neither the requester nor the settings
	}
	who, problem := readRequester(&r)
	if problem != "" {
		return badInput(problem)
	}
	settings, problem := ParseSettings(rawjson.Bytes(r.settings.Raw)) // read only
	if problem != "" {
		return badInput("the policy settings are not valid: " + problem)
	}
	e := evaluation{settings: settings, req: &r, who: who, kind: kind, log: logger}
	switch {
	case op == opCreate:
		return e.create()
	case kind.isPod():
		return e.updatePod()
	default:
		return e.updateWorkload()
	}
}

// evaluateCustom decides on a kind outside the table: a kind declared in customWorkloads (rules 11-13), or
// anything else, accepted unchanged. Settings are read only when they declare kinds, and then only the
// request's kind is parsed.
//
//go:noinline
func evaluateCustom(r *request, logger *onelog.Logger) decision {
	if tableKind(r.group, r.kind) != nil || !hasCustomWorkloads(r.settings) {
		return accept() // an operation of a table kind the policy does not decide on (UPDATE of a Binding)
	}
	settings, problem := ParseSettings(rawjson.Bytes(r.settings.Raw)) // read only
	if problem != "" {
		return badInput("the policy settings are not valid: " + problem)
	}
	custom, problem := settings.customKind(r.group, r.kind)
	switch {
	case problem != "":
		return badInput("the policy settings are not valid: " + problem)
	case custom == nil:
		return accept()
	}
	who, problem := readRequester(r)
	if problem != "" {
		return badInput(problem)
	}
	e := evaluation{settings: settings, req: r, who: who, kind: workload{name: r.kind, custom: custom}, log: logger}
	if r.operation.Str == opCreate {
		return e.createCustom()
	}
	return e.updateCustom()
}

// bindingDecision applies rule 10. The API server copies a Binding's metadata.annotations onto the pod,
// still unscheduled, with no Pod admission of its own, so a Binding that carries the annotation would
// change an existing pod's annotation: refused whoever sends it, as rule 5 exempts nobody. Every other
// Binding (the schedulers' own carry no annotations) is accepted unchanged.
//
//go:noinline
func bindingDecision(x *rawjson.Index, object gjson.Result, logger *onelog.Logger) decision {
	set, problem := bindingSetsAnnotation(x, object)
	switch {
	case problem != "":
		return badInput(problem)
	case set:
		logger.WarnWithFields("refused a Binding that sets "+AnnotationKey+" (rule 10)", func(entry onelog.Entry) {
			entry.String("kind", "Binding")
			entry.String("pod", object.Get("metadata.name").String())
		})
		return reject(BindingRefusal)
	}
	return accept()
}

// bindingSetsAnnotation reports whether a Binding's metadata.annotations holds the annotation key, with
// any value; keys are compared after unescaping (a key that occurs twice is held too).
func bindingSetsAnnotation(x *rawjson.Index, object gjson.Result) (bool, string) {
	const field = "request.object"
	if !object.IsObject() {
		return false, field + " is missing or not an object"
	}
	metadata, dup := x.Child(rawjson.Root(object.Raw), "metadata")
	switch {
	case dup:
		return false, duplicateKey(field, "metadata")
	case rawjson.IsMissing(metadata):
		return false, ""
	case !metadata.IsObject():
		return false, field + ".metadata must be an object"
	}
	annotations, dup := x.Child(metadata, "annotations")
	switch {
	case dup:
		return false, duplicateKey(field+".metadata", "annotations")
	case rawjson.IsMissing(annotations):
		return false, ""
	case !annotations.IsObject():
		return false, field + ".metadata.annotations must be an object of strings"
	}
	_, value, dup := x.Member(annotations, AnnotationKey)
	return value.Exists() || dup, ""
}

type evaluation struct {
	settings Settings
	req      *request
	who      requester
	kind     workload
	log      *onelog.Logger
}

// create applies docs/rules.md rules 1-4.
//
//go:noinline
func (e *evaluation) create() decision {
	t, problem := findTarget(e.req.index, e.req.object, "request.object", e.kind, e.settings.LegacyUserLabel)
	if problem != "" {
		return badInput(problem)
	}

	// Rule 4: the template was copied from a parent that was already handled; changing it makes the
	// deployment controller create ReplicaSets forever (YUNIKORN-1627).
	if !e.kind.isPod() && e.systemUser() {
		if t.value.Exists() && e.settings.BypassControllers {
			if problem := CheckSuppliedValue(t.value.Str); problem != "" {
				return e.invalidValue(problem)
			}
		}
		e.debug("workload created by a system user: left unchanged (rule 4)")
		return accept()
	}

	// Rules 14 and 15: the application the pods join, and the placeholders YuniKorn makes for them.
	if d, refused := e.identityRefusal(&t.identity, nil, true); refused {
		return d
	}

	// Rule 1: a supplied value.
	if t.value.Exists() {
		if e.trusted() {
			if problem := CheckSuppliedValue(t.value.Str); problem != "" {
				return e.invalidValue(problem)
			}
			e.debug("supplied value kept: the requester is trusted (rule 1)")
			return accept()
		}
		stamp := e.stamp()
		if t.value.Str == stamp {
			// Exactly what the policy would write, e.g. a Job made with `kubectl create job --from=cronjob`
			// by the CronJob's owner: nothing is forged and nothing changes (docs/rules.md "Host protocol": mutate only on change).
			e.debug("supplied value is the requester's own identity: left as it is (rule 1)")
			return accept()
		}
		e.warn("refused an untrusted " + AnnotationKey + " value (rule 1)")
		if e.settings.OnUntrustedAnnotation == ModeReject {
			return reject(Rule1Refusal(e.describeRequester()))
		}
		d := decision{accepted: true, mutated: t.stamp(e.stampJSON())}
		d.warnings = append(d.warnings, replacedWarning(e.kind.where()))
		return d
	}

	// Rule 2: the legacy label stands only for trusted submitters when bypassAuth is on.
	if t.label.Exists() && t.label.Str != "" {
		if e.settings.BypassAuth && e.trusted() {
			e.warn("deprecated label " + e.settings.LegacyUserLabel + " kept as the user (rule 2)")
			d := accept()
			d.warnings = []string{deprecatedLabelWarning(e.settings.LegacyUserLabel)}
			return d
		}
		e.warn("deprecated label " + e.settings.LegacyUserLabel + " ignored: the requester is stamped (rule 2)")
	}

	// Rule 3: stamp the requester.
	e.debug("stamped the requester (rule 3)")
	return decision{accepted: true, mutated: t.stamp(e.stampJSON())}
}

// updatePod applies docs/rules.md rule 5: nobody may change the annotation of an existing pod.
//
//go:noinline
func (e *evaluation) updatePod() decision {
	newT, oldT, problem := e.targets()
	if problem != "" {
		return badInput(problem)
	}
	if !sameEntry(oldT.value, newT.value) {
		e.warn("refused a change of " + AnnotationKey + " on an existing pod (rule 5)")
		return reject(Rule5Refusal)
	}
	if e.labelGuarded(oldT) && !sameEntry(oldT.label, newT.label) {
		e.warn("refused a change of " + e.settings.LegacyUserLabel + " on an existing pod (rule 5)")
		return reject(Rule5LabelRefusal(e.settings.LegacyUserLabel))
	}
	if d, refused := e.identityRefusal(&newT.identity, &oldT.identity, false); refused { // rule 15
		return d
	}
	return accept()
}

// updateWorkload applies docs/rules.md rules 6-9 to the pod template of a workload.
//
//go:noinline
func (e *evaluation) updateWorkload() decision {
	newT, oldT, problem := e.targets()
	if problem != "" {
		return badInput(problem)
	}
	if d, refused := e.identityRefusal(&newT.identity, &oldT.identity, true); refused { // rules 14 and 15
		return d
	}
	annotationChanged := !sameEntry(oldT.value, newT.value)
	labelChanged := e.labelGuarded(oldT) && !sameEntry(oldT.label, newT.label)
	if !annotationChanged && !labelChanged {
		return accept() // rule 6: no mutation, so no rollout is caused
	}
	if e.trusted() { // rule 7
		if annotationChanged && newT.value.Exists() {
			if problem := CheckSuppliedValue(newT.value.Str); problem != "" {
				return e.invalidValue(problem)
			}
		}
		e.debug("template identity changed by a trusted requester (rule 7)")
		return accept()
	}

	// Rule 8.
	what, whatName := "the "+AnnotationKey+" annotation", AnnotationKey
	if !annotationChanged {
		what, whatName = "the "+e.settings.LegacyUserLabel+" label", e.settings.LegacyUserLabel
	}
	e.warn("refused a change of " + what + " in a pod template (rule 8)")
	if e.settings.OnUntrustedAnnotation == ModeReject {
		return reject(Rule8Refusal(e.describeRequester(), what, e.kind.where(), e.kind.name))
	}
	t := newT
	var restored rawjson.Edit
	if annotationChanged {
		if oldT.value.Exists() {
			restored = setRef(t.index, t.doc, &t.mapRef, rawjson.Texts(nil, oldT.value.Raw))
		} else {
			restored = rawjson.RemoveMember(t.index, t.doc, t.m, AnnotationKey)
		}
		if labelChanged { // a second edit: find the target again in the first edit's result
			if t, problem = findTarget(nil, rawjson.Root(restored.String()), "request.object", e.kind, e.settings.LegacyUserLabel); problem != "" {
				return badInput(problem)
			}
		}
	}
	if labelChanged {
		if oldT.label.Exists() {
			restored = rawjson.SetPath(t.index, t.doc, t.anchor, []string{"metadata", "labels", e.settings.LegacyUserLabel}, oldT.label.Raw)
		} else {
			restored = rawjson.RemoveMember(t.index, t.doc, t.labels, e.settings.LegacyUserLabel)
		}
	}
	return decision{accepted: true, mutated: restored, warnings: []string{restoredWarning(whatName, e.kind.where())}}
}

// identityRefusal applies rules 14 (when appIDs) and 15 for an untrusted requester; old is nil on CREATE.
// What would be refused is found first, so that the common request pays for no pattern match.
func (e *evaluation) identityRefusal(now, old *podIdentity, appIDs bool) (decision, bool) {
	refusal := podIdentityRefusal(now, old, e.req.namespace.Str, appIDs)
	if refusal == "" || e.trusted() {
		return decision{}, false
	}
	e.warn("refused the pods' application or task groups (rules 14 and 15)")
	return reject(refusal), true
}

// targets finds the target metadata in the new and the old object of an UPDATE.
func (e *evaluation) targets() (newT, oldT target, problem string) {
	if newT, problem = findTarget(e.req.index, e.req.object, "request.object", e.kind, e.settings.LegacyUserLabel); problem != "" {
		return newT, oldT, problem
	}
	if !e.req.oldObject.Exists() || e.req.oldObject.Type == gjson.Null {
		return newT, oldT, "request.oldObject is missing: an UPDATE needs the old object to compare with"
	}
	oldT, problem = findTarget(e.req.index, e.req.oldObject, "request.oldObject", e.kind, e.settings.LegacyUserLabel)
	return newT, oldT, problem
}

// labelGuarded reports whether the legacy label is protected: only when the old object has no annotation
// (rules 5 and 9) and legacy handling is on.
func (e *evaluation) labelGuarded(old target) bool {
	return e.settings.LegacyUserLabel != "" && !old.value.Exists()
}

// stamp is the requester's identity as the annotation value.
func (e *evaluation) stamp() string {
	return stampValue(&e.who)
}

// stampJSON is stamp as a JSON string, in the parts spliced into the object.
func (e *evaluation) stampJSON() []rawjson.Part {
	return stampJSON(&e.who)
}

func (e *evaluation) invalidValue(problem string) decision {
	return e.invalidValueIn(e.kind.where(), problem)
}

// systemUser reports whether the requester matches systemUsers.
func (e *evaluation) systemUser() bool { return e.settings.SystemUsers.MatchString(e.who.username) }

// trusted reports a trusted controller or a trusted external (docs/rules.md "Words").
func (e *evaluation) trusted() bool {
	if e.settings.BypassControllers && e.systemUser() {
		return true
	}
	if !e.settings.BypassAuth {
		return false
	}
	if e.settings.ExternalUsers.MatchString(e.who.username) {
		return true
	}
	if e.settings.ExternalGroups.Len() == 0 {
		return false // no need to read every group
	}
	trusted := false
	e.who.eachGroup(func(g string) bool {
		trusted = e.settings.ExternalGroups.MatchString(g)
		return !trusted
	})
	return trusted
}

// describeRequester renders the requester as upstream YuniKorn does in its rejection messages.
func (e *evaluation) describeRequester() string {
	return "user " + e.who.username + " with groups [" + e.who.joinGroups() + "]"
}

func (e *evaluation) debug(msg string) {
	e.log.DebugWithFields(msg, e.fields)
}

func (e *evaluation) warn(msg string) {
	e.log.WarnWithFields(msg, e.fields)
}

func (e *evaluation) fields(entry onelog.Entry) {
	entry.String("user", e.who.logName()) // at most ~1 KiB of it
	entry.String("kind", e.kind.name)
	entry.String("operation", e.req.operation.Str)
	entry.String("groups", e.who.logGroups()) // at most ~1 KiB of them, however many there are
}
