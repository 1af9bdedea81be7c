package policy

import (
	"strconv"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// The messages a request is refused with, by rule number (docs/rules.md).

// rule1Refusal refuses an untrusted requester's annotation; who is as YuniKorn says it ("user bob with groups [qa]").
func rule1Refusal(who string) string {
	return who + " is not allowed to set the " + AnnotationKey +
		" annotation: remove it and the policy records the requester's identity itself"
}

// rule5Refusal refuses a change of an existing pod's annotation.
const rule5Refusal = "the " + AnnotationKey + " annotation cannot be changed once the pod exists: " +
	"leave it as it is, or delete the pod and create a new one"

// rule5LabelRefusal refuses a change of the legacy label of an existing pod without the annotation.
func rule5LabelRefusal(label string) string {
	return "the " + label + " label cannot be changed once the pod exists: " +
		"leave it as it is, or delete the pod and create a new one"
}

// rule8Refusal refuses an untrusted change of what (the annotation or the legacy label) in where.
func rule8Refusal(who, what, where, kind string) string {
	return who + " is not allowed to change " + what + " in " + where + " of this " + kind + ": leave it as it was"
}

// bindingRefusal is rule 10's message.
const bindingRefusal = "a Binding cannot set the " + AnnotationKey + " annotation: the pod's annotation " +
	"cannot be changed once the pod exists; bind the pod without it"

// rule11Refusal refuses an untrusted requester's annotation in a custom resource's map at path.
func rule11Refusal(who, path string) string {
	return who + " is not allowed to set the " + AnnotationKey + " annotation (in " + path +
		"): remove it and the policy records the requester's identity itself"
}

// rule12Refusal refuses an untrusted change of the annotation in a custom resource's map at path.
func rule12Refusal(who, path, kind string) string {
	return who + " is not allowed to change the " + AnnotationKey + " annotation in " + path + " of this " + kind +
		": leave it as it was"
}

// invalidKeyRefusal refuses a key of a target map that no pod can carry.
func invalidKeyRefusal(path, key string) string {
	return "the " + path + " key " + key + " is not a valid annotation key"
}

// guardRefusal is rule 13's message.
func guardRefusal(path, key string) string {
	return "the " + path + " entry " + key + " sets the " + AnnotationKey +
		" annotation: only trusted controllers and allow-listed submitters may"
}

// templateKeyRefusal is rule 13's message for a template key.
func templateKeyRefusal(path, key string) string {
	return "the " + path + " entry " + key + " is a template key: only trusted controllers and allow-listed submitters may"
}

// otherNamespacesApplicationRefusal is rule 14's message; namespace is what the ID shows of it.
func otherNamespacesApplicationRefusal(id, namespace string) string {
	return "application ID " + id + " is the generated application of namespace " + namespace +
		": a pod may join it only from that namespace"
}

// rule14bRefusal refuses a change of a pod's application ID (old and id are "none" when absent).
func rule14bRefusal(old, id string) string {
	return "the application of a pod cannot change once the pod exists: " + old + " to " + id
}

// taskGroupsRefusal is rule 15's message.
const taskGroupsRefusal = "the " + TaskGroupsKey + " annotation sets the " + AnnotationKey +
	" annotation on placeholder pods: only trusted controllers and allow-listed submitters may"

// taskGroupsNotPlainRefusal is rule 15's message for a value the policy cannot read as YuniKorn does.
func taskGroupsNotPlainRefusal(what string) string {
	return "the " + TaskGroupsKey + " annotation is not plain JSON task groups: " + what
}

// taskGroupsKeyRefusal is rule 15's message for a key the task groups may not set.
func taskGroupsKeyRefusal(key string) string {
	return "the " + TaskGroupsKey + " annotation sets " + key +
		" on placeholder pods: only trusted controllers and allow-listed submitters may"
}

// tooLargeRefusal is the bounded answer's message (docs/rules.md "Cost").
func tooLargeRefusal(size, written int) string {
	return "the object would be " + strconv.Itoa(size) + " bytes once stamped (" + strconv.Itoa(written) +
		" annotation maps and task groups), more than the 3 MiB the API server accepts"
}

// tooManyTargetsRefusal is the bounded answer's message for a CREATE naming too many maps (docs/rules.md "Cost").
var tooManyTargetsRefusal = tooManyRefusal("annotation maps")

// tooManyGroupsRefusal is tooManyTargetsRefusal for the task groups of one map.
var tooManyGroupsRefusal = tooManyRefusal("task groups")

// tooManyRefusal says that more than mostStamped things named what, each stamped, exceed maxObjectBytes.
func tooManyRefusal(what string) string {
	return "the object would be more than " + strconv.Itoa(maxObjectBytes) + " bytes once stamped (more than " +
		strconv.Itoa(mostStamped) + " " + what + ", each stamped with at least " + strconv.Itoa(minStampBytes) +
		" bytes), more than the 3 MiB the API server accepts"
}

// invalidValueRefusal refuses a trusted requester's invalid value in where (rules 1, 7, 11 and 12).
func invalidValueRefusal(where, problem string) string {
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
		return tooManyTargetsRefusal
	}
	return p.At + " could not be read" // walk.NotIndexed: never "", which would read as no problem
}

// duplicateKey is duplicateMember for key in the map at path, named as a concrete path names it.
func duplicateKey(path, key string) string {
	return duplicateMember(path + string(walk.AppendMember(nil, key)))
}
