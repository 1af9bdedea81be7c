package policy

import (
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Validate answers a Kubewarden validate payload ({"request":..,"settings":..}) with a validation response,
// written over the payload when it fits: the caller has no further use for it. It never fails: bad input
// is a rejection with code 400 (docs/rules.md "Bad input").
func (ev *Evaluator) Validate(payload []byte) []byte {
	answer := ev.evaluate(payload).encodeOver(payload)
	ev.forget()
	return answer
}

// ValidateSettings answers a Kubewarden validate_settings payload (the settings object).
func ValidateSettings(payload []byte) []byte {
	_, problem := CheckSettings(payload)
	return settingsResponse{Valid: problem == "", Message: problem}.encode()
}

// evaluate reads the request in the order docs/rules.md "Which requests are decided" fixes (operation,
// kind, then the rest) and decides.
func (ev *Evaluator) evaluate(payload []byte) decision {
	e, d := ev.prepare(payload)
	if e == nil {
		return d
	}
	return e.decide()
}

// prepare is evaluate up to the rules: it reads the request and the settings into the evaluator's
// evaluation, or decides without one (bad input, an operation or a kind the policy leaves alone).
func (ev *Evaluator) prepare(payload []byte) (*evaluation, decision) {
	// Nothing writes the payload before the answer: a view of it is safe.
	text := rawjson.View(payload)
	index := ev.records.Parse(text)
	if index == nil {
		return nil, badInput("the validate payload is not valid JSON")
	}
	r := &ev.request
	readRequest(index, r)
	if r.payloadDuplicate != "" {
		return nil, badInput(duplicateMember("the validate payload's " + r.payloadDuplicate))
	}
	if !r.present {
		return nil, badInput("the validate payload has no \"request\" object")
	}
	if r.operationDuplicate != "" {
		return nil, badInput(duplicateMember(r.operationDuplicate))
	}
	if r.operation.Type != gjson.String {
		return nil, badInput("request.operation is missing")
	}
	op := r.operation.Str
	if op != opCreate && op != opUpdate {
		return nil, accept() // DELETE, CONNECT: nothing to stamp or protect
	}
	if r.duplicate != "" {
		return nil, badInput(duplicateMember(r.duplicate))
	}
	kind, ours := kindOf(r.group, r.kind, op)
	if !ours {
		return ev.evaluateCustom(r)
	}
	if kind.handling == BindingHandling {
		return nil, bindingDecision(index, r.object, ev.log, r.settings.Get("logDecisions").Type == gjson.True) // needs neither the requester nor the rest of the settings
	}
	who, problem := readRequester(r)
	if problem != "" {
		return nil, badInput(problem)
	}
	settings, problem := ParseSettings(r.settings.Raw)
	if problem != "" {
		return nil, badInput("the policy settings are not valid: " + problem)
	}
	ev.evaluation.begin(settings, r, who, kind, ev.log)
	return &ev.evaluation, decision{}
}

// evaluateCustom is prepare for a kind outside the table: a kind declared in customWorkloads (rules
// 11-13) gets an evaluation, anything else is accepted. Only the request's kind is parsed.
func (ev *Evaluator) evaluateCustom(r *request) (*evaluation, decision) {
	if tableKind(r.group, r.kind) != nil || !hasCustomWorkloads(r.settings) {
		return nil, accept() // an operation of a table kind the policy does not decide on (UPDATE of a Binding)
	}
	settings, problem := ParseSettings(r.settings.Raw)
	if problem != "" {
		return nil, badInput("the policy settings are not valid: " + problem)
	}
	custom, problem := settings.customKind(r.group, r.kind)
	switch {
	case problem != "":
		return nil, badInput("the policy settings are not valid: " + problem)
	case custom == nil:
		return nil, accept()
	}
	who, problem := readRequester(r)
	if problem != "" {
		return nil, badInput(problem)
	}
	ev.evaluation.begin(settings, r, who, declared(r.kind, custom), ev.log)
	return &ev.evaluation, decision{}
}

// bindingDecision applies rule 10: a Binding that carries the annotation is refused whoever sends it,
// any other is accepted unchanged.
func bindingDecision(x *rawjson.Index, object gjson.Result, logger *Logger, logDecisions bool) decision {
	set, problem := bindingSetsAnnotation(x, object)
	switch {
	case problem != "":
		return badInput(problem)
	case set:
		logger.Warn("refused a Binding that sets "+AnnotationKey+" (rule 10)", func(entry *Entry) {
			entry.String("kind", "Binding")
			entry.String("pod", object.Get("metadata.name").String())
		})
		return reject(bindingRefusal)
	}
	if logDecisions {
		logger.Debug("accepted a Binding without "+AnnotationKey+" (rule 10)", func(entry *Entry) { entry.String("kind", "Binding") })
	}
	return accept()
}

// bindingSetsAnnotation reports whether a Binding's metadata.annotations holds the annotation key (once
// unescaped, once or twice), with any value.
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
	value, dup := x.Child(annotations, AnnotationKey)
	return value.Exists() || dup, ""
}

// evaluation is one request's decision, with the engines it runs: they keep their records from one
// evaluation to the next, and each empties them when it starts.
type evaluation struct {
	settings Settings
	req      *request
	who      requester
	kind     workload
	log      *Logger
	trust    int8        // trusted's answer: 0 until asked, then 1 or -1
	now, was objectWalks // request.object's walkers and request.oldObject's
	edits    edits
}

// begin readies e for a request, keeping the engines' records.
func (e *evaluation) begin(settings Settings, r *request, who requester, kind workload, log *Logger) {
	e.settings, e.req, e.who, e.kind, e.log, e.trust = settings, r, who, kind, log, 0
	e.now.begin(r.object, "request.object")
	e.was.begin(r.oldObject, "request.oldObject")
}

// forget drops what e holds of the request, keeping the engines' records.
func (e *evaluation) forget() {
	e.settings, e.req, e.who, e.kind, e.log, e.trust = Settings{}, nil, requester{}, workload{}, nil, 0
	e.now.forget()
	e.was.forget()
	e.edits.forget()
}

// decide applies the rules to a CREATE or an UPDATE of the kind (decide.go).
func (e *evaluation) decide() decision {
	if e.req.operation.Str == opCreate {
		return e.create()
	}
	return e.update()
}

// invalidValueIn refuses a trusted requester's value that is not valid (rules 1, 4 and 7).
func (e *evaluation) invalidValueIn(where, problem string) decision {
	e.warn("refused an invalid " + AnnotationKey + " value from a trusted requester in " + where + " (rules 1, 4 and 7)")
	return reject(invalidValueRefusal(where, problem))
}

// systemUser reports whether the requester matches systemUsers.
func (e *evaluation) systemUser() bool { return e.settings.SystemUsers.MatchString(e.who.username) }

// trusted reports a trusted controller or a trusted external (docs/rules.md "Words"), worked out once.
func (e *evaluation) trusted() bool {
	if e.trust == 0 {
		e.trust = -1
		if e.isTrusted() {
			e.trust = 1
		}
	}
	return e.trust > 0
}

func (e *evaluation) isTrusted() bool {
	return e.settings.BypassControllers && e.systemUser() || e.external()
}

// external reports a trusted external: bypassAuth on and the username or a group allow-listed.
func (e *evaluation) external() bool {
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

// debug logs a decision that needs no warning, when the settings ask for such lines.
func (e *evaluation) debug(msg string) {
	if e.settings.LogDecisions {
		e.log.Debug(msg, e.fields)
	}
}

func (e *evaluation) warn(msg string) {
	e.log.Warn(msg, e.fields)
}

func (e *evaluation) fields(entry *Entry) {
	entry.String("user", e.who.logName()) // at most ~1 KiB of it
	entry.String("kind", e.kind.name)
	entry.String("operation", e.req.operation.Str)
	entry.String("groups", e.who.logGroups()) // at most ~1 KiB of them, however many there are
}
