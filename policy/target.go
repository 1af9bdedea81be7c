package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// objectMaps is what the kind's paths name in one object: the targets, a declared kind's guard maps, and
// beside a built-in kind's one target its labels and what rules 14 and 15 read.
type objectMaps struct {
	doc            string // the object's JSON text: every targetRef is an offset into it
	targets, guard []targetRef
	// places and guardPlaces hold what makes the refs' concrete paths (targetRef.placeAt).
	places, guardPlaces places
	labels              *targetRef // nil for a declared kind
	identity            podIdentity
}

// key is a target's concrete path, for a message.
func (m *objectMaps) key(t *targetRef) string { return m.places.key(t) }

// guardKey is a guard map's concrete path, for a message.
func (m *objectMaps) guardKey(g *targetRef) string { return m.guardPlaces.key(g) }

// label is the legacy label's value; absent when not set, not read, or for a declared kind.
func (m *objectMaps) label() gjson.Result {
	if m.labels == nil {
		return gjson.Result{}
	}
	return m.labels.value().Result(m.doc)
}

// walk walks the kind's paths over object, named field in messages; a problem is a bad-input message.
// existing leaves out the target maps that do not exist; most, when not 0, is how many maps one path may
// name (mostTargets).
func (e *evaluation) walk(object gjson.Result, field string, kept *objectStorage, existing bool, most int) (objectMaps, string) {
	if !object.IsObject() {
		return objectMaps{}, field + " is missing or not an object"
	}
	w := e.targetWalker(object, field)
	w.most, w.existing = most, existing
	if problem := kept.targets.walk(&w, rawjson.Root(object.Raw), e.kind.targets); problem != "" {
		return objectMaps{}, problem
	}
	return e.besideTargets(object, field, kept, &w)
}

// targetWalker is the walker of the kind's annotation paths over object.
func (e *evaluation) targetWalker(object gjson.Result, field string) walker {
	return walker{doc: object.Raw, index: e.req.index, field: field, kind: e.kind.name, entry: AnnotationKey}
}

// besideTargets walks what the kind reads beside the targets w found in object (guard maps, a built-in
// kind's labels) and returns them all.
func (e *evaluation) besideTargets(object gjson.Result, field string, kept *objectStorage, w *walker) (objectMaps, string) {
	k := &e.kind
	root := rawjson.Root(object.Raw)
	g := walker{doc: object.Raw, index: e.req.index, field: field, kind: k.name}
	if problem := kept.guards.walk(&g, root, k.guards); problem != "" {
		return objectMaps{}, problem
	}
	m := objectMaps{doc: object.Raw, targets: inDocumentOrder(w.refs), guard: inDocumentOrder(g.refs), places: w.places, guardPlaces: g.places}
	if k.labels == nil {
		return m, ""
	}
	// Not `return m, e.readLabels(&m, ...)`: Go leaves unspecified whether m is read before the call fills
	// it, and TinyGo reads it before.
	problem := e.readLabels(&m, root, field)
	return m, problem
}

// mostTargets is how many maps one path may name in a CREATE's object before the answer is certainly over
// 3 MiB (docs/rules.md "Cost"); 0 for no bound, as for a system user's CREATE, which stamps nothing (rule 4).
func (e *evaluation) mostTargets(object gjson.Result) int {
	if e.req.operation.Str != "CREATE" || e.systemUser() {
		return 0
	}
	return mostMaps(object)
}

// mostMaps is how many maps (or one map's task groups) object may hold before an answer that stamps them all is
// over maxObjectBytes; 0 for no bound.
func mostMaps(object gjson.Result) int {
	if len(object.Raw) > maxObjectBytes {
		return 0
	}
	return mostStamped + 1
}

// minStampBytes is at most what a target's value takes in an answer (docs/rules.md "Cost").
const minStampBytes = 50

// mostStamped is how many stamped maps or task groups fit in maxObjectBytes.
const mostStamped = maxObjectBytes / minStampBytes

// readLabels reads rule 14's sources and the legacy label from the pod labels beside a built-in kind's
// one target.
func (e *evaluation) readLabels(m *objectMaps, root gjson.Result, field string) string {
	l := walker{doc: m.doc, index: e.req.index, field: field, kind: e.kind.name}
	if problem := l.walk(root, e.kind.labels); problem != "" {
		return problem
	}
	m.labels = &l.refs[0]
	labels := m.labels.m().Result(m.doc)
	labelsAt, annotationsAt := mapPath{field, e.kind.labels.plain}, mapPath{field, e.kind.targets[0].plain}
	var problem string
	m.identity, problem = readPodIdentity(e.req.index, labels, m.targets[0].m().Result(m.doc), labelsAt, annotationsAt)
	if problem != "" || e.settings.LegacyUserLabel == "" || !labels.IsObject() {
		return problem
	}
	value, problem := stringEntry(e.req.index, labels, e.settings.LegacyUserLabel, labelsAt)
	m.labels.entry = rawjson.RefOf(value) // the labels exist: stringEntry read them
	return problem
}

// walk walks paths over root with w, keeping its records in s whatever the outcome.
func (s *walkStorage) walk(w *walker, root gjson.Result, paths []annotationPath) string {
	s.lend(w)
	problem := w.walkAll(root, paths)
	s.keep(w)
	return problem
}

// lend gives w the storage to record in; keep takes it back, grown as w grew it.
func (s *walkStorage) lend(w *walker) {
	w.refs, w.places = s.refs.take(0), places{values: s.values.take(0), names: s.names.take(0)}
}

func (s *walkStorage) keep(w *walker) {
	s.refs.keep(w.refs)
	s.values.keep(w.places.values)
	s.names.keep(w.places.names)
}

// mapPath names a map in messages (request.object and the path), joined only when a message is written.
type mapPath struct{ field, path string }

func (p mapPath) String() string { return p.field + "." + p.path }

// stringEntry reads m[key] from a string map named at; a key given twice or a non-string is bad input.
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

// sameEntry reports whether two optional string entries are equal: same presence, same unescaped value.
// gjson reads a lone surrogate escape as U+FFFD, so values holding U+FFFD are compared as written too.
func sameEntry(a, b gjson.Result) bool {
	if a.Exists() != b.Exists() || a.Str != b.Str {
		return false
	}
	return a.Raw == b.Raw || !strings.ContainsRune(a.Str, utf8.RuneError)
}

var quotedAnnotationKey = rawjson.Quote(AnnotationKey)
