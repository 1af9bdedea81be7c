package policy

import (
	"strconv"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// The messages a request is refused with, by rule number (docs/rules.md).

// Rule1Refusal refuses an untrusted requester's annotation; who is as YuniKorn says it ("user bob with groups [qa]").
func Rule1Refusal(who string) string {
	return who + " is not allowed to set the " + AnnotationKey +
		" annotation: remove it and the policy records the requester's identity itself"
}

// Rule5Refusal refuses a change of an existing pod's annotation.
const Rule5Refusal = "the " + AnnotationKey + " annotation cannot be changed once the pod exists: " +
	"leave it as it is, or delete the pod and create a new one"

// Rule5LabelRefusal refuses a change of the legacy label of an existing pod without the annotation.
func Rule5LabelRefusal(label string) string {
	return "the " + label + " label cannot be changed once the pod exists: " +
		"leave it as it is, or delete the pod and create a new one"
}

// Rule8Refusal refuses an untrusted change of what (the annotation or the legacy label) in where.
func Rule8Refusal(who, what, where, kind string) string {
	return who + " is not allowed to change " + what + " in " + where + " of this " + kind + ": leave it as it was"
}

// BindingRefusal is rule 10's message.
const BindingRefusal = "a Binding cannot set the " + AnnotationKey + " annotation: the pod's annotation " +
	"cannot be changed once the pod exists; bind the pod without it"

// Rule11Refusal refuses an untrusted requester's annotation in a custom resource's map at path.
func Rule11Refusal(who, path string) string {
	return who + " is not allowed to set the " + AnnotationKey + " annotation (in " + path +
		"): remove it and the policy records the requester's identity itself"
}

// Rule12Refusal refuses an untrusted change of the annotation in a custom resource's map at path.
func Rule12Refusal(who, path, kind string) string {
	return who + " is not allowed to change the " + AnnotationKey + " annotation in " + path + " of this " + kind +
		": leave it as it was"
}

// InvalidKeyRefusal refuses a key of a target map that no pod can carry.
func InvalidKeyRefusal(path, key string) string {
	return "the " + path + " key " + key + " is not a valid annotation key"
}

// GuardRefusal is rule 13's message.
func GuardRefusal(path, key string) string {
	return "the " + path + " entry " + key + " sets the " + AnnotationKey +
		" annotation: only trusted controllers and allow-listed submitters may"
}

// TemplateKeyRefusal is rule 13's message for a template key.
func TemplateKeyRefusal(path, key string) string {
	return "the " + path + " entry " + key + " is a template key: only trusted controllers and allow-listed submitters may"
}

// ApplicationRefusal is rule 14's message; namespace is what the ID shows of it.
func ApplicationRefusal(id, namespace string) string {
	return "application ID " + id + " is the generated application of namespace " + namespace +
		": a pod may join it only from that namespace"
}

// Rule14bRefusal refuses a change of a pod's application ID (old and id are "none" when absent).
func Rule14bRefusal(old, id string) string {
	return "the application of a pod cannot change once the pod exists: " + old + " to " + id
}

// TaskGroupsRefusal is rule 15's message.
const TaskGroupsRefusal = "the " + TaskGroupsKey + " annotation sets the " + AnnotationKey +
	" annotation on placeholder pods: only trusted controllers and allow-listed submitters may"

// TaskGroupsNotPlainRefusal is rule 15's message for a value the policy cannot read as YuniKorn does.
func TaskGroupsNotPlainRefusal(what string) string {
	return "the " + TaskGroupsKey + " annotation is not plain JSON task groups: " + what
}

// TaskGroupsKeyRefusal is rule 15's message for a key the task groups may not set.
func TaskGroupsKeyRefusal(key string) string {
	return "the " + TaskGroupsKey + " annotation sets " + key +
		" on placeholder pods: only trusted controllers and allow-listed submitters may"
}

// TooLargeRefusal is the bounded answer's message (docs/rules.md "Cost").
func TooLargeRefusal(size, written int) string {
	return "the object would be " + strconv.Itoa(size) + " bytes once stamped (" + strconv.Itoa(written) +
		" annotation maps and task groups), more than the 3 MiB the API server accepts"
}

// TooManyTargetsRefusal is the bounded answer's message for a CREATE naming too many maps (docs/rules.md "Cost").
var TooManyTargetsRefusal = tooManyRefusal("annotation maps")

// TooManyGroupsRefusal is TooManyTargetsRefusal for the task groups of one map.
var TooManyGroupsRefusal = tooManyRefusal("task groups")

// tooManyRefusal says that more than mostStamped things named what, each stamped, exceed maxObjectBytes.
func tooManyRefusal(what string) string {
	return "the object would be more than " + strconv.Itoa(maxObjectBytes) + " bytes once stamped (more than " +
		strconv.Itoa(mostStamped) + " " + what + ", each stamped with at least " + strconv.Itoa(minStampBytes) +
		" bytes), more than the 3 MiB the API server accepts"
}

// InvalidValueRefusal refuses a trusted requester's invalid value in where (rules 1, 7, 11 and 12).
func InvalidValueRefusal(where, problem string) string {
	return "the " + AnnotationKey + " annotation in " + where + " is not valid: " + problem +
		`; a valid value looks like {"user":"alice","groups":["devops","system:authenticated"]}`
}

// occursTwice is the one wording for a key or member given more than once; what names it.
func occursTwice(what string) string { return what + " occurs more than once" }

// keyTwice is occursTwice for a key named on its own: `the key "user" occurs more than once`.
func keyTwice(key string) string { return occursTwice("the key " + strconv.Quote(key)) }

// duplicateMember is the bad-input message for a member the decision reads given twice ("request.kind.kind").
func duplicateMember(name string) string {
	return occursTwice(name) + ": JSON readers disagree on which copy counts, so the policy trusts neither"
}

// notAString is the bad-input message for an entry key of the map at path that is not a string.
func notAString(path, key string) string {
	return path + "[" + strconv.Quote(key) + "] must be a string"
}

// walkProblemText words a problem the walk of a kind's paths met in an object.
func walkProblemText(p walk.Problem, kind string) string {
	switch p.Fault {
	case walk.DuplicateKey:
		return duplicateKey(p.At, p.Key)
	case walk.NotAnObject:
		return p.At + " must be an object"
	case walk.NotAStringMap:
		return p.At + " must be an object of strings"
	case walk.NoPodTemplate:
		return p.At + " is missing or not an object: a " + kind + " needs a pod template"
	case walk.NotAString:
		return notAString(p.At, p.Key)
	case walk.TooManyMaps:
		return TooManyTargetsRefusal
	}
	return ""
}

// duplicateKey is duplicateMember for key in the map at path, named as a concrete path names it.
func duplicateKey(path, key string) string {
	return duplicateMember(path + string(walk.AppendMember(nil, key)))
}
