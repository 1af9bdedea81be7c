package policy

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Rule 14: YuniKorn charges an application's first pod's user for every pod that joins it, whatever the
// later pod's own annotation says. The policy keeps no state, so it closes the part that needs none: a pod
// may not name another namespace's generated application, which anyone can predict.

// The application-ID sources, in the order YuniKorn reads them (k8shim's GetApplicationIDFromPod).
const (
	appIDKey         = "yunikorn.apache.org/app-id" // a label first, then an annotation
	applicationIDKey = "applicationId"              // a label
	sparkAppSelector = "spark-app-selector"         // a label
)

// generatedIDPrefix and generatedIDSuffix frame YuniKorn's one application for every pod of a namespace
// that names none: yunikorn-<namespace>-autogen, cut to generatedIDMax characters (fmt's %.63s).
const (
	generatedIDPrefix = "yunikorn-"
	generatedIDSuffix = "-autogen"
	generatedIDMax    = 63
)

// podIdentity is what rules 14 and 15 read from target metadata.
type podIdentity struct {
	appID      string       // the first non-empty source; "" when none
	taskGroups gjson.Result // the task-groups annotation; absent when not set
}

// readPodIdentity reads the application ID and the task groups from a pod's (or a pod template's) labels
// and annotations maps, either of which may be absent; labelsAt and annotationsAt name them in messages.
// Keys are compared after unescaping, and a key the decision reads that occurs twice is bad input.
func readPodIdentity(x *rawjson.Index, labels, annotations gjson.Result, labelsAt, annotationsAt mapPath) (podIdentity, string) {
	var id podIdentity
	for _, source := range [...]struct {
		label bool
		key   string
	}{
		{true, appIDKey}, {false, appIDKey}, {true, applicationIDKey}, {true, sparkAppSelector},
	} {
		m, at := annotations, annotationsAt
		if source.label {
			m, at = labels, labelsAt
		}
		if !m.IsObject() {
			continue
		}
		v, problem := stringEntry(x, m, source.key, at)
		if problem != "" {
			return id, problem
		}
		if v.Str != "" {
			id.appID = v.Str
			break
		}
	}
	if annotations.IsObject() {
		var dup bool
		if id.taskGroups, dup = x.Child(annotations, TaskGroupsKey); dup {
			return id, duplicateKey(annotationsAt.String(), TaskGroupsKey)
		}
	}
	return id, ""
}

// foreignGeneratedID reports whether id is a generated application ID other than namespace's own, and
// what the ID shows of its namespace. An ID is taken as generated when it starts with yunikorn- and ends
// with -autogen, or is exactly as long as a cut one (a namespace of more than 46 characters loses the
// suffix).
func foreignGeneratedID(id, namespace string) (string, bool) {
	if !strings.HasPrefix(id, generatedIDPrefix) ||
		!strings.HasSuffix(id, generatedIDSuffix) && utf8.RuneCountInString(id) != generatedIDMax {
		return "", false
	}
	if id == generatedID(namespace) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(id, generatedIDPrefix), generatedIDSuffix), true
}

// generatedID is namespace's generated application ID as YuniKorn formats it.
func generatedID(namespace string) string {
	id := generatedIDPrefix + namespace + generatedIDSuffix
	if utf8.RuneCountInString(id) <= generatedIDMax {
		return id
	}
	n := 0
	for i := range id {
		if n == generatedIDMax {
			return id[:i]
		}
		n++
	}
	return id
}

// podIdentityRefusal applies rules 14 (when appIDs: not on a Pod's UPDATE) and 15 to an untrusted
// requester's pod metadata: the new identity, and the old one on UPDATE (nil on CREATE), so that only
// what changed is checked. It returns the refusal, or "".
func podIdentityRefusal(now, old *podIdentity, namespace string, appIDs bool) string {
	if appIDs && now.appID != "" && (old == nil || old.appID != now.appID) {
		if shown, foreign := foreignGeneratedID(now.appID, namespace); foreign {
			return ApplicationRefusal(now.appID, shown)
		}
	}
	var was gjson.Result
	if old != nil {
		was = old.taskGroups
	}
	return taskGroupsRefusal(now.taskGroups, was)
}

// taskGroupsRefusal applies rule 15 to a task-groups annotation an untrusted requester sends: refused when
// it names the user.info annotation and is new or changed (was is the old value, absent when there is none
// or it cannot be told).
func taskGroupsRefusal(value, was gjson.Result) string {
	if value.Type == gjson.String && !sameEntry(was, value) && namesAnnotation(value.Str) {
		return TaskGroupsRefusal
	}
	return ""
}
