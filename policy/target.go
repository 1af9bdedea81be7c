package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// target is the pod metadata the policy guards inside one object (docs/rules.md "Words": target metadata): a Pod's own
// metadata, or a workload's pod template metadata. The workload's own metadata is never touched.
type target struct {
	mapRef                // the annotations map (m) and the annotation (value), as the kind's path names them
	doc    string         // the object's JSON text; every Result indexes into it
	index  *rawjson.Index // of the payload doc is part of, or nil
	labels gjson.Result   // absent or null when missing, or when legacy handling is off
	label  gjson.Result   // the legacy label's value; absent when not set
	// identity is what rules 14 and 15 read: the pods' application ID and task groups.
	identity podIdentity
}

// findTarget walks object (raw JSON text of request.object or request.oldObject, named by field) along the
// kind's path to the target metadata and checks every type on the way. A problem is a bad-input message
// for a 400.
func findTarget(x *rawjson.Index, object gjson.Result, field string, w workload, legacyLabel string) (target, string) {
	t := target{doc: object.Raw, index: x}
	if !object.IsObject() {
		return t, field + " is missing or not an object"
	}
	wk := walker{doc: object.Raw, index: x, field: field, kind: w.name, entry: AnnotationKey}
	if problem := wk.walk(rawjson.Root(object.Raw), &w.path); problem != "" {
		return t, problem
	}
	t.mapRef = wk.refs[0] // a built-in path names one map, and its pod template is required
	if !t.parent.IsObject() {
		return t, ""
	}
	md := func(keys ...string) string {
		return strings.Join(append([]string{field, w.where()}, keys...), ".")
	}
	var problem string
	if t.identity, problem = readPodIdentity(x, t.parent, t.m, md); problem != "" || legacyLabel == "" {
		return t, problem
	}
	t.labels, t.label, problem = stringEntry(x, t.parent, "labels", legacyLabel, md)
	return t, problem
}

func duplicateKey(path, key string) string {
	return path + " has the key " + strconv.Quote(key) + " more than once"
}

// stringEntry reads metadata[mapName][key] from a string map (annotations or labels) that may be missing
// or null; md names metadata's path for messages.
func stringEntry(x *rawjson.Index, metadata gjson.Result, mapName, key string, md func(...string) string) (m, v gjson.Result, problem string) {
	m, dup := x.Child(metadata, mapName)
	switch {
	case dup:
		return m, v, duplicateKey(md(), mapName)
	case rawjson.IsMissing(m):
		return m, v, ""
	case !m.IsObject():
		return m, v, md(mapName) + " must be an object of strings"
	}
	if v, dup = x.Child(m, key); dup {
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

// stamp returns the object with the annotation set to valueJSON (the value as a JSON string, in parts),
// creating metadata and annotations when missing or null. It edits the innermost map findTarget found,
// with the entry findTarget found there, so nothing is looked up again.
func (t target) stamp(valueJSON []rawjson.Part) rawjson.Edit {
	return setRef(t.index, t.doc, &t.mapRef, valueJSON)
}

// setRef returns doc with the annotation in the map ref names set to valueJSON, creating the map (and the
// objects above it that are missing, below the deepest one that is there).
func setRef(x *rawjson.Index, doc string, ref *mapRef, valueJSON []rawjson.Part) rawjson.Edit {
	if len(ref.rest) == 0 {
		return rawjson.PutMember(x, doc, ref.m, AnnotationKey, ref.value, valueJSON)
	}
	parts := make([]rawjson.Part, 0, 3*len(ref.rest)+len(valueJSON)+3)
	for _, s := range ref.rest[1:] {
		parts = rawjson.Texts(parts, "{", rawjson.Quote(s.name), ":")
	}
	parts = append(rawjson.Texts(parts, "{", quotedAnnotationKey, ":"), valueJSON...)
	parts = rawjson.Texts(parts, strings.Repeat("}", len(ref.rest)))
	return rawjson.PutMember(x, doc, ref.holder, ref.rest[0].name, ref.old, parts)
}

var quotedAnnotationKey = rawjson.Quote(AnnotationKey)
