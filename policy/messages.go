package policy

import "strconv"

// The messages a request is refused with, one constant or builder per rule (docs/rules.md numbers them).
// Go tests compare with these; the bats files assert a stable fragment; docs quote them from here.

// Rule1Refusal is the message when an untrusted requester supplied the annotation, with onUntrustedAnnotation: reject. who is
// the requester as YuniKorn describes it ("user bob with groups [qa]").
func Rule1Refusal(who string) string {
	return who + " is not allowed to set the " + AnnotationKey +
		" annotation: remove it and the policy records the requester's identity itself"
}

// Rule5Refusal is the message when the annotation of an existing pod changed.
const Rule5Refusal = "the " + AnnotationKey + " annotation cannot be changed once the pod exists: " +
	"leave it as it is, or delete the pod and create a new one"

// Rule5LabelRefusal is the message when the legacy label of an existing pod without the annotation changed.
func Rule5LabelRefusal(label string) string {
	return "the " + label + " label cannot be changed once the pod exists: " +
		"leave it as it is, or delete the pod and create a new one"
}

// Rule8Refusal is the message when an untrusted requester changed what (the annotation, or the legacy label) in where (the
// template metadata) of a workload of kind, with onUntrustedAnnotation: reject.
func Rule8Refusal(who, what, where, kind string) string {
	return who + " is not allowed to change " + what + " in " + where + " of this " + kind + ": leave it as it was"
}

// BindingRefusal is rule 10's message.
const BindingRefusal = "a Binding cannot set the " + AnnotationKey + " annotation: the pod's annotation " +
	"cannot be changed once the pod exists; bind the pod without it"

// Rule11Refusal is the message when an untrusted requester supplied the annotation in a custom resource's map (path), with
// onUntrustedAnnotation: reject.
func Rule11Refusal(who, path string) string {
	return who + " is not allowed to set the " + AnnotationKey + " annotation (in " + path +
		"): remove it and the policy records the requester's identity itself"
}

// Rule12Refusal is the message when an untrusted requester changed the annotation in a custom resource's map (path) of a kind,
// with onUntrustedAnnotation: reject.
func Rule12Refusal(who, path, kind string) string {
	return who + " is not allowed to change the " + AnnotationKey + " annotation in " + path + " of this " + kind +
		": leave it as it was"
}

// InvalidKeyRefusal is the message for a key of a target map that no pod can carry ("Keys of a target map").
func InvalidKeyRefusal(path, key string) string {
	return "the " + path + " key " + key + " is not a valid annotation key"
}

// GuardRefusal is rule 13's message.
func GuardRefusal(path, key string) string {
	return "the " + path + " entry " + key + " sets the " + AnnotationKey +
		" annotation: only trusted controllers and allow-listed submitters may"
}

// TemplateKeyRefusal is rule 13's message for a key an operator's substitution may turn into any key.
func TemplateKeyRefusal(path, key string) string {
	return "the " + path + " entry " + key + " is a template key: only trusted controllers and allow-listed submitters may"
}

// ApplicationRefusal is rule 14's message; namespace is what the ID shows of it.
func ApplicationRefusal(id, namespace string) string {
	return "application ID " + id + " is the generated application of namespace " + namespace +
		": a pod may join it only from that namespace"
}

// Rule14bRefusal is the message when an update changes a pod's application ID (old and id are "none" when absent).
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

// TaskGroupsKeyRefusal is rule 15's message for an application-ID key or the legacy label in a task group.
func TaskGroupsKeyRefusal(key string) string {
	return "the " + TaskGroupsKey + " annotation sets " + key +
		" on placeholder pods: only trusted controllers and allow-listed submitters may"
}

// TooLargeRefusal is the bounded answer's message: the object would be size bytes once stamped, written
// being the annotation maps and task groups written.
func TooLargeRefusal(size, written int) string {
	return "the object would be " + strconv.Itoa(size) + " bytes once stamped (" + strconv.Itoa(written) +
		" annotation maps and task groups), more than the 3 MiB the API server accepts"
}

// TooManyTargetsRefusal is the bounded answer's message for a CREATE whose object names so many maps that,
// each carrying a value in the answer, it cannot be under 3 MiB: the walk stops there (docs/rules.md "Cost").
const TooManyTargetsRefusal = "the object would be more than 3145728 bytes once stamped (more than " +
	"62914 annotation maps, each stamped with at least 50 bytes), more than the 3 MiB the API server accepts"

// InvalidValueRefusal is the message when a trusted requester's value (rules 1, 7, 11 and 12) is not valid, in where.
func InvalidValueRefusal(where, problem string) string {
	return "the " + AnnotationKey + " annotation in " + where + " is not valid: " + problem +
		`; a valid value looks like {"user":"alice","groups":["devops","system:authenticated"]}`
}

// occursTwice is the one wording for a key or member given more than once; what names it.
func occursTwice(what string) string { return what + " occurs more than once" }

// keyTwice is occursTwice for a key named on its own: `the key "user" occurs more than once`.
func keyTwice(key string) string { return occursTwice("the key " + strconv.Quote(key)) }

// duplicateMember is the bad-input message for a member the decision reads that occurs twice
// (docs/rules.md "Bad input"), name being its path ("request.kind.kind").
func duplicateMember(name string) string {
	return occursTwice(name) + ": JSON readers disagree on which copy counts, so the policy trusts neither"
}

// duplicateKey is the bad-input message for key given twice in the map at path.
func duplicateKey(path, key string) string {
	return path + " has the key " + strconv.Quote(key) + " more than once"
}
