package policy

import (
	"strconv"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// voice is how a kind's decisions are told (refusals, log entries, warnings): a built-in kind's by rules
// 1-9 about its target metadata, a declared kind's by rules 11-13 about its maps, in one warning.
type voice interface {
	// createdBySystem is rule 4's debug entry.
	createdBySystem() string
	// refuseSupplied refuses an untrusted value in the target named key (rules 1 and 11).
	refuseSupplied(e *evaluation, key string) decision
	// refuseChange refuses an untrusted change in the target named key (rules 8 and 12).
	refuseChange(e *evaluation, key string, onlyLabel bool) decision
	// tell answers with the change made (mutated) and tells what was done.
	tell(c *change, mutated rawjson.Edit) decision
}

// builtinVoice tells a built-in kind's decisions.
type builtinVoice struct{}

func (builtinVoice) createdBySystem() string {
	return "workload created by a system user: left unchanged (rule 4)"
}

func (builtinVoice) refuseSupplied(e *evaluation, _ string) decision {
	e.warn(untrustedValueLog)
	return reject(rule1Refusal(e.describeRequester()))
}

const untrustedValueLog = "refused an untrusted " + AnnotationKey + " value (rule 1)"

func (builtinVoice) refuseChange(e *evaluation, _ string, onlyLabel bool) decision {
	what, _ := changed(e, onlyLabel)
	e.warn("refused a change of " + what + " in a pod template (rule 8)")
	return reject(rule8Refusal(e.describeRequester(), what, e.kind.where, e.kind.name))
}

// changed names what an untrusted change changed, in a sentence and by its key.
func changed(e *evaluation, onlyLabel bool) (what, name string) {
	if onlyLabel {
		return "the " + e.settings.LegacyUserLabel + " label", e.settings.LegacyUserLabel
	}
	return "the " + AnnotationKey + " annotation", AnnotationKey
}

// tell tells the one outcome of a built-in kind's one target.
func (builtinVoice) tell(c *change, mutated rawjson.Edit) decision {
	e := c.e
	d := decision{accepted: true, mutated: mutated}
	label := e.settings.LegacyUserLabel
	if c.n[labelIgnored] > 0 && c.n[stamped] == 0 {
		e.warn("deprecated label " + label + " ignored: the annotation decides (rule 2)")
	}
	switch {
	case c.n[labelKept] > 0:
		e.warn("deprecated label " + label + " kept as the user (rule 2)")
		d.warnings = []string{deprecatedLabelWarning(label)}
	case c.n[replaced] > 0:
		e.warn("replaced an untrusted " + AnnotationKey + " value by the requester's identity (rule 1)")
		d.warnings = []string{replacedWarning(e.kind.where)}
	case c.n[stamped] > 0:
		if c.n[labelIgnored] > 0 {
			e.warn("deprecated label " + label + " ignored: the requester is stamped (rule 2)")
		}
		e.debug("stamped the requester (rule 3)")
	case c.n[valueKept] > 0:
		e.debug("supplied value kept: the requester is trusted (rule 1)")
	case c.n[ownIdentity] > 0:
		// e.g. a Job made by `kubectl create job --from=cronjob` by the CronJob's owner: nothing changes.
		e.debug("supplied value is the requester's own identity: left as it is (rule 1)")
	case c.n[trustedChange] > 0:
		e.debug("template identity changed by a trusted requester (rule 7)")
	case c.n[restored] > 0 || c.n[labelRestored] > 0:
		what, name := changed(e, c.n[restored] == 0)
		e.warn("restored " + what + " in a pod template (rule 8)")
		d.warnings = []string{restoredWarning(name, e.kind.where)}
	default:
		e.debug("template identity unchanged (rule 6)")
	}
	if c.n[groupsReplaced] > 0 {
		e.warn("replaced an untrusted " + AnnotationKey + " value in the task groups by the pod's (rule 16)")
		if d.warnings == nil { // one warning a request
			d.warnings = []string{groupsReplacedWarning}
		}
	}
	return d
}

// declaredVoice tells a declared kind's decisions.
type declaredVoice struct{}

func (declaredVoice) createdBySystem() string {
	return "custom resource created by a system user: left unchanged (rules 11 and 4)"
}

func (declaredVoice) refuseSupplied(e *evaluation, key string) decision {
	e.warn("refused an untrusted " + AnnotationKey + " value in " + key + " (rule 11)")
	return reject(rule11Refusal(e.describeRequester(), key))
}

func (declaredVoice) refuseChange(e *evaluation, key string, _ bool) decision {
	e.warn("refused a change of " + AnnotationKey + " in " + key + " (rule 12)")
	return reject(rule12Refusal(e.describeRequester(), key, e.kind.name))
}

// tell gives one warning for every map whose untrusted value was replaced or restored.
func (declaredVoice) tell(c *change, mutated rawjson.Edit) decision {
	d := decision{accepted: true, mutated: mutated}
	if w := customWarning(c.n[replaced]+c.n[groupsReplaced], c.n[restored]); w != "" {
		c.e.warn(w)
		d.warnings = []string{w}
	}
	if mutated.Changed() {
		c.e.debug("stamped the requester in the custom resource's annotation maps (rules 11 and 12)")
	} else if d.warnings == nil {
		c.e.debug("annotation maps accepted as they are (rules 11 and 12)")
	}
	return d
}

// customWarning says what was done to untrusted values, in one line under maxWarning characters.
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
