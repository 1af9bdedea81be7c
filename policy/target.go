package policy

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// target is the pod metadata the policy guards inside one object (SPEC.md "target metadata"): a Pod's own
// metadata, or a workload's pod template metadata. The workload's own metadata is never touched.
type target struct {
	doc         string       // the object's JSON text; every Result below indexes into it
	container   gjson.Result // the object that holds "metadata" (the Pod, or the pod template)
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
	t.container = docRoot(object.Raw)
	path := field
	for _, key := range w.template {
		var problem string
		if t.container, problem = child(t.container, path, key); problem != "" {
			return t, problem
		}
		path += "." + key
		if !t.container.IsObject() {
			return t, path + " is missing or not an object: a " + w.name + " needs a pod template"
		}
	}
	metadata, problem := child(t.container, path, "metadata")
	if problem != "" {
		return t, problem
	}
	path += ".metadata"
	if isMissing(metadata) {
		return t, ""
	}
	if !metadata.IsObject() {
		return t, path + " must be an object"
	}
	if t.annotations, problem = child(metadata, path, "annotations"); problem != "" {
		return t, problem
	}
	if t.annotation, problem = stringEntry(t.annotations, path+".annotations", AnnotationKey); problem != "" {
		return t, problem
	}
	if legacyLabel == "" {
		return t, ""
	}
	if t.labels, problem = child(metadata, path, "labels"); problem != "" {
		return t, problem
	}
	t.label, problem = stringEntry(t.labels, path+".labels", legacyLabel)
	return t, problem
}

// child returns obj[key], refusing a duplicated key.
func child(obj gjson.Result, path, key string) (gjson.Result, string) {
	_, v, dup := member(obj, key)
	if dup {
		return v, path + " has the key " + strconv.Quote(key) + " more than once"
	}
	return v, ""
}

// stringEntry reads key from a string map (annotations or labels) that may be missing or null.
func stringEntry(m gjson.Result, path, key string) (gjson.Result, string) {
	if isMissing(m) {
		return gjson.Result{}, ""
	}
	if !m.IsObject() {
		return gjson.Result{}, path + " must be an object of strings"
	}
	v, problem := child(m, path, key)
	if problem != "" {
		return v, problem
	}
	if v.Exists() && v.Type != gjson.String {
		return v, path + "[" + strconv.Quote(key) + "] must be a string"
	}
	return v, ""
}

// sameEntry reports whether two optional string entries are equal: same presence, same (unescaped) value.
func sameEntry(a, b gjson.Result) bool {
	return a.Exists() == b.Exists() && a.Str == b.Str
}

// stamp returns the object's text with the annotation set to value, creating metadata and annotations
// when missing or null.
func (t target) stamp(value string) string {
	return setPath(t.doc, t.container, []string{"metadata", "annotations", AnnotationKey}, jsonString(value))
}
