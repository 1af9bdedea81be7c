package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// objectMaps is what the kind's paths name in one object (request.object or request.oldObject): its targets,
// the maps that hold the annotation (docs/rules.md "Words": target metadata, and a declared kind's
// annotation maps), and a declared kind's guard maps (rule 13). A built-in kind's one target comes with
// the pod labels beside it (labels, whose value is the legacy label) and what rules 14 and 15 read.
type objectMaps struct {
	doc            string // the object's JSON text: every targetRef is an offset into it
	targets, guard []targetRef
	// keys and guardKeys hold the refs' concrete paths (targetRef.keyAt).
	keys, guardKeys []byte
	labels          *targetRef // nil for a declared kind
	identity        podIdentity
}

// key is a target's concrete path, for a message.
func (m *objectMaps) key(t *targetRef) string { return string(t.keyIn(m.keys)) }

// guardKey is a guard map's concrete path, for a message.
func (m *objectMaps) guardKey(g *targetRef) string { return string(g.keyIn(m.guardKeys)) }

// label is the legacy label's value; absent when it is not set, not read (legacy handling off) or the
// kind has no labels (a declared kind).
func (m *objectMaps) label() gjson.Result {
	if m.labels == nil {
		return gjson.Result{}
	}
	return m.labels.value.Result(m.doc)
}

// walk walks every path of the kind over an object (named by field in messages) and checks every type on
// the way, its records in kept (the object's: the maps of request.object and request.oldObject are read
// side by side). A problem is a bad-input message for a 400.
func (e *evaluation) walk(object gjson.Result, field string, kept *objectStorage) (objectMaps, string) {
	if !object.IsObject() {
		return objectMaps{}, field + " is missing or not an object"
	}
	k := &e.kind
	root := rawjson.Root(object.Raw)
	w := walker{doc: object.Raw, index: e.req.index, field: field, kind: k.name, entry: AnnotationKey, most: e.mostTargets(object)}
	if problem := kept.targets.walk(&w, root, k.targets); problem != "" {
		return objectMaps{}, problem
	}
	g := walker{doc: object.Raw, index: e.req.index, field: field, kind: k.name}
	if problem := kept.guards.walk(&g, root, k.guards); problem != "" {
		return objectMaps{}, problem
	}
	m := objectMaps{doc: object.Raw, targets: inDocumentOrder(w.refs), guard: inDocumentOrder(g.refs), keys: w.keys, guardKeys: g.keys}
	if k.labels == nil {
		return m, ""
	}
	// Not `return m, e.readLabels(&m, ...)`: Go does not say whether m is read before or after the call
	// fills it in, and TinyGo reads it before.
	problem := e.readLabels(&m, root, field)
	return m, problem
}

// mostTargets is how many maps one path may name in a CREATE's object before the bounded answer is
// certain (0: no bound): each target of the answer carries a value of at least minStampBytes, and an
// object of at most 3 MiB cannot carry them all itself, so one is stamped and the answer is over 3 MiB.
// A system user's CREATE is rule 4's, which stamps nothing.
func (e *evaluation) mostTargets(object gjson.Result) int {
	if e.req.operation.Str != "CREATE" || len(object.Raw) > maxObjectBytes || e.systemUser() {
		return 0
	}
	return maxObjectBytes/minStampBytes + 1
}

// minStampBytes is less than a target's value takes in an answer: the member "yunikorn.apache.org/user.info":
// (32 bytes), the shortest valid value written as a JSON string, "{\"user\":\"x\"}" (18), and a separator.
const minStampBytes = 50

// readLabels reads what a built-in kind's pod labels hold beside its target (one: a built-in path names
// one map, and its pod template is required): rule 14's sources and the legacy label.
func (e *evaluation) readLabels(m *objectMaps, root gjson.Result, field string) string {
	l := walker{doc: m.doc, index: e.req.index, field: field, kind: e.kind.name}
	if problem := l.walk(root, e.kind.labels); problem != "" {
		return problem
	}
	m.labels = &l.refs[0]
	labels := m.labels.m.Result(m.doc)
	labelsAt, annotationsAt := mapPath{field, e.kind.labels.plain}, mapPath{field, e.kind.targets[0].plain}
	var problem string
	m.identity, problem = readPodIdentity(e.req.index, labels, m.targets[0].m.Result(m.doc), labelsAt, annotationsAt)
	if problem != "" || e.settings.LegacyUserLabel == "" || !labels.IsObject() {
		return problem
	}
	value, problem := stringEntry(e.req.index, labels, e.settings.LegacyUserLabel, labelsAt)
	m.labels.value = rawjson.RefOf(value)
	return problem
}

// walk walks every path of paths over root with w, its records in s, and keeps them there whatever the
// outcome: the next evaluation's take zeroes every record this one made.
func (s *walkStorage) walk(w *walker, root gjson.Result, paths []annotationPath) string {
	w.refs, w.keys = s.refs.take(0), s.keys.take(0)
	problem := w.walkAll(root, paths)
	s.refs.keep(w.refs)
	s.keys.keep(w.keys)
	return problem
}

// mapPath names a map in messages: the object (request.object) and the map's path in it, joined only
// when a message is written, not for every request.
type mapPath struct{ field, path string }

func (p mapPath) String() string { return p.field + "." + p.path }

// stringEntry reads m[key] from a string map (annotations or labels, named by at in messages): a key
// given twice, or a value that is not a string, is bad input.
func stringEntry(x *rawjson.Index, m gjson.Result, key string, at mapPath) (gjson.Result, string) {
	v, dup := x.Child(m, key)
	switch {
	case dup:
		return v, duplicateKey(at.String(), key)
	case v.Exists() && v.Type != gjson.String:
		return v, at.String() + "[" + strconv.Quote(key) + "] must be a string"
	}
	return v, ""
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

var quotedAnnotationKey = rawjson.Quote(AnnotationKey)
