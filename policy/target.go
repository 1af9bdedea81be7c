package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// target is the pod metadata the policy guards inside one object (docs/rules.md "Words": target metadata): a Pod's own
// metadata, or a workload's pod template metadata. The workload's own metadata is never touched.
type target struct {
	doc         string       // the object's JSON text; every Result below indexes into it
	container   gjson.Result // the object that holds "metadata" (the Pod, or the pod template)
	metadata    gjson.Result // absent or null when missing
	annotations gjson.Result // absent or null when missing
	labels      gjson.Result // absent or null when missing, or when legacy handling is off
	annotation  gjson.Result // the user.info value; absent when not set
	label       gjson.Result // the legacy label's value; absent when not set
}

// findTarget walks object (raw JSON text of request.object or request.oldObject, named by field) to the
// target metadata and checks every type on the way. A problem is a bad-input message for a 400.
func findTarget(object gjson.Result, field string, w workload, legacyLabel string) (target, string) {
	t := target{doc: object.Raw}
	if !object.IsObject() {
		return t, field + " is missing or not an object"
	}
	// Paths for messages are built only when there is a message: this runs on every request.
	at := func(keys ...string) string { return strings.Join(append([]string{field}, keys...), ".") }
	t.container = docRoot(object.Raw)
	for i, key := range w.template {
		next, dup := child(t.container, key)
		if dup {
			return t, duplicateKey(at(w.template[:i]...), key)
		}
		if !next.IsObject() {
			return t, at(w.template[:i+1]...) + " is missing or not an object: a " + w.name + " needs a pod template"
		}
		t.container = next
	}
	md := func(keys ...string) string {
		return at(append(append(w.template[:len(w.template):len(w.template)], "metadata"), keys...)...)
	}
	var dup bool
	if t.metadata, dup = child(t.container, "metadata"); dup {
		return t, duplicateKey(at(w.template...), "metadata")
	}
	if isMissing(t.metadata) {
		return t, ""
	}
	if !t.metadata.IsObject() {
		return t, md() + " must be an object"
	}
	var problem string
	if t.annotations, t.annotation, problem = stringEntry(t.metadata, "annotations", AnnotationKey, md); problem != "" {
		return t, problem
	}
	if legacyLabel == "" {
		return t, ""
	}
	t.labels, t.label, problem = stringEntry(t.metadata, "labels", legacyLabel, md)
	return t, problem
}

// child returns obj[key] and whether the key occurs more than once.
func child(obj gjson.Result, key string) (gjson.Result, bool) {
	_, v, dup := member(obj, key)
	return v, dup
}

func duplicateKey(path, key string) string {
	return path + " has the key " + strconv.Quote(key) + " more than once"
}

// stringEntry reads metadata[mapName][key] from a string map (annotations or labels) that may be missing
// or null; md names metadata's path for messages.
func stringEntry(metadata gjson.Result, mapName, key string, md func(...string) string) (m, v gjson.Result, problem string) {
	m, dup := child(metadata, mapName)
	switch {
	case dup:
		return m, v, duplicateKey(md(), mapName)
	case isMissing(m):
		return m, v, ""
	case !m.IsObject():
		return m, v, md(mapName) + " must be an object of strings"
	}
	if v, dup = child(m, key); dup {
		return m, v, duplicateKey(md(mapName), key)
	}
	if v.Exists() && v.Type != gjson.String {
		return m, v, md(mapName) + "[" + strconv.Quote(key) + "] must be a string"
	}
	return m, v, ""
}

// sameEntry reports whether two optional string entries are equal: same presence, same (unescaped) value.
// gjson turns every invalid escape (a lone surrogate such as \ud800) into U+FFFD, so values that contain
// one are compared as written too: `\ud800\u0041` and `\ud800\u0042` must not look alike.
func sameEntry(a, b gjson.Result) bool {
	if a.Exists() != b.Exists() || a.Str != b.Str {
		return false
	}
	return a.Raw == b.Raw || !strings.ContainsRune(a.Str, utf8.RuneError)
}

// stamp returns the object with the annotation set to value, creating metadata and annotations when
// missing or null. It edits the innermost map findTarget found, with the entry findTarget found there, so
// nothing is looked up again.
func (t target) stamp(value string) edit {
	v := jsonString(value)
	switch {
	case t.annotations.IsObject():
		return putMember(t.doc, t.annotations, AnnotationKey, t.annotation, []string{v})
	case t.metadata.IsObject():
		return putMember(t.doc, t.metadata, "annotations", t.annotations, []string{"{", quotedAnnotationKey, ":", v, "}"})
	}
	return putMember(t.doc, t.container, "metadata", t.metadata, []string{`{"annotations":{`, quotedAnnotationKey, ":", v, "}}"})
}

var quotedAnnotationKey = jsonString(AnnotationKey)
