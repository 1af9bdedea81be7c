package policy

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Rule 14: a pod may not name another namespace's generated application.
// See docs/rules.md "Applications (rule 14)".

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

// podIdentity is what rules 14-16 read from target metadata.
type podIdentity struct {
	// appIDs are the application IDs as YuniKorn 1.8 and 1.4 read them; "" when none.
	appIDs     [2]string
	taskGroups gjson.Result // the task-groups annotation; absent when not set
}

// readPodIdentity reads the application IDs and the task groups from a pod's labels and annotations, either
// of which may be absent (labelsAt and annotationsAt name them); a key read twice is bad input.
func readPodIdentity(x *rawjson.Index, labels, annotations gjson.Result, labelsAt, annotationsAt mapPath) (podIdentity, string) {
	var id podIdentity
	// YuniKorn 1.8 reads the label yunikorn.apache.org/app-id first; 1.4 starts at the annotation.
	for i, source := range [...]struct {
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
		if v.Str == "" {
			continue
		}
		if id.appIDs[0] == "" {
			id.appIDs[0] = v.Str
		}
		if i > 0 {
			id.appIDs[1] = v.Str
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

// foreignGeneratedID reports whether id is another namespace's generated application ID, and what it
// shows of that namespace.
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

// applicationRefusal applies rule 14 to an untrusted requester's pod metadata, checking only the readings
// that changed from old (nil on CREATE).
func applicationRefusal(now, old *podIdentity, namespace string) string {
	for i, id := range now.appIDs {
		if id == "" || old != nil && old.appIDs[i] == id || i == 1 && id == now.appIDs[0] {
			continue
		}
		if shown, foreign := foreignGeneratedID(id, namespace); foreign {
			return otherNamespacesApplicationRefusal(id, shown)
		}
	}
	return ""
}

// relabelRefusal applies rule 14b to a Pod's UPDATE: either reading of its application ID changed.
func relabelRefusal(now, old *podIdentity) string {
	for i := range now.appIDs {
		if now.appIDs[i] != old.appIDs[i] {
			return rule14bRefusal(orNone(old.appIDs[i]), orNone(now.appIDs[i]))
		}
	}
	return ""
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}
