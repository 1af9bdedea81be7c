package policy

// The warnings kubectl shows the requester, each at most maxWarning characters; a longer legacy label
// name is described rather than cut (docs/runtime.md "What policy-server does with the answer").
const maxWarning = 120

// replacedWarning: rule 1, an untrusted value replaced by the requester's identity.
func replacedWarning(where string) string {
	return fit(AnnotationKey+" in "+where+" replaced by your identity: do not set it",
		AnnotationKey+" replaced by your identity: do not set it")
}

// fit returns msg, or shorter when msg is longer than maxWarning.
func fit(msg, shorter string) string {
	if len(msg) > maxWarning {
		return shorter
	}
	return msg
}

// restoredWarning: rule 8, an untrusted change of what (the annotation or the legacy label) undone.
func restoredWarning(what, where string) string {
	return fit(what+" in "+where+" restored: only trusted submitters may change it",
		fit("the legacy user label in "+where+" restored: only trusted submitters may change it",
			"the pod template's user identity was restored: only trusted submitters may change it"))
}

// deprecatedLabelWarning: rule 2, a legacy label kept as the user.
func deprecatedLabelWarning(label string) string {
	return fit("the "+label+" label is deprecated: set the "+AnnotationKey+" annotation instead",
		"the legacy user label is deprecated: set the "+AnnotationKey+" annotation instead")
}

// groupsReplacedWarning: rule 16, an untrusted value in the task groups replaced by the pod's.
const groupsReplacedWarning = AnnotationKey + " in the task groups replaced by the pod's: do not set it"
