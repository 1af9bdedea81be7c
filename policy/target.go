package policy

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// objectMaps is what the kind's paths name in one object: the targets, a declared kind's guard maps, and
// beside a built-in kind's one target its labels and what rules 14 and 15 read.
type objectMaps struct {
	doc            string // the object's JSON text: every walk.Ref is an offset into it
	targets, guard []walk.Ref
	// places and guardPlaces hold what makes the refs' concrete paths (walk.Ref.placeAt).
	places, guardPlaces walk.Places
	labels              *walk.Ref // nil for a declared kind
	identity            podIdentity
}

// key is a target's concrete path, for a message.
func (m *objectMaps) key(t *walk.Ref) string { return m.places.Key(t) }

// guardKey is a guard map's concrete path, for a message.
func (m *objectMaps) guardKey(g *walk.Ref) string { return m.guardPlaces.Key(g) }

// label is the legacy label's value; absent when not set, not read, or for a declared kind.
func (m *objectMaps) label() gjson.Result {
	if m.labels == nil {
		return gjson.Result{}
	}
	return m.labels.Value().Result(m.doc)
}

// objectWalks are the walkers of one object of the request (request.object or request.oldObject); each
// keeps its records for the next evaluation.
type objectWalks struct {
	object          gjson.Result
	field           string // where object is in the payload, for messages
	targets, guards walk.Walker
}

func (ws *objectWalks) begin(object gjson.Result, field string) { ws.object, ws.field = object, field }

// forget drops ws's views of the last request, keeping the room the walkers' records took.
func (ws *objectWalks) forget() {
	ws.object = gjson.Result{}
	ws.targets.Reset(nil, "", "")
	ws.guards.Reset(nil, "", "")
}

// walk walks the kind's paths over ws's object; a problem is a bad-input message. existing leaves out the
// target maps that do not exist; most, when not 0, is how many maps one path may name (mostTargets).
func (e *evaluation) walk(ws *objectWalks, existing bool, most int) (objectMaps, string) {
	if !ws.object.IsObject() {
		return objectMaps{}, ws.field + " is missing or not an object"
	}
	w := &ws.targets
	w.Reset(e.req.index, ws.field, AnnotationKey)
	w.Most, w.Existing = most, existing
	if problem := w.WalkAll(rawjson.Root(ws.object.Raw), e.kind.targets); problem.Found() {
		return objectMaps{}, e.walkProblem(problem)
	}
	return e.besideTargets(ws)
}

// walkPaired walks both objects of an UPDATE of a declared kind together. ok is false when either is not
// an object or a walk met a problem: walking each object by itself then gives the message. refused says
// the new object alone names more maps than a 3 MiB answer holds (docs/rules.md "Cost").
func (e *evaluation) walkPaired() (now, was objectMaps, ok, refused bool) {
	if !e.now.object.IsObject() || !e.was.object.IsObject() {
		return now, was, false, false
	}
	wNow, wWas := &e.now.targets, &e.was.targets
	wNow.Reset(e.req.index, e.now.field, AnnotationKey)
	wWas.Reset(e.req.index, e.was.field, AnnotationKey)
	if ok, refused = walk.Paired(wNow, wWas, rawjson.Root(e.now.object.Raw), rawjson.Root(e.was.object.Raw), e.kind.targets, mostMaps(e.now.object)); !ok {
		return now, was, false, refused
	}
	now, problem := e.besideTargets(&e.now)
	if problem != "" {
		return now, was, false, false
	}
	was, problem = e.besideTargets(&e.was)
	return now, was, problem == "", false
}

// besideTargets walks what the kind reads beside the targets ws's walk found (guard maps, a built-in
// kind's labels) and returns them all.
func (e *evaluation) besideTargets(ws *objectWalks) (objectMaps, string) {
	k := &e.kind
	root := rawjson.Root(ws.object.Raw)
	w, g := &ws.targets, &ws.guards
	g.Reset(e.req.index, ws.field, "")
	if problem := g.WalkAll(root, k.guards); problem.Found() {
		return objectMaps{}, e.walkProblem(problem)
	}
	m := objectMaps{doc: ws.object.Raw, targets: walk.InDocumentOrder(w.Refs), guard: walk.InDocumentOrder(g.Refs), places: w.Places, guardPlaces: g.Places}
	if k.labels == nil {
		return m, ""
	}
	// Not `return m, e.readLabels(&m, ...)`: Go leaves unspecified whether m is read before the call fills
	// it, and TinyGo reads it before.
	problem := e.readLabels(&m, root, ws.field)
	return m, problem
}

// walkProblem words a problem the walk of the kind's paths met.
func (e *evaluation) walkProblem(p walk.Problem) string { return walkProblemText(p, e.kind.name) }

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
	l := walk.Walker{Index: e.req.index, Field: field}
	if problem := l.Walk(root, e.kind.labels); problem.Found() {
		return e.walkProblem(problem)
	}
	m.labels = &l.Refs[0]
	labels := m.labels.Map().Result(m.doc)
	labelsAt, annotationsAt := mapPath{field, e.kind.labels.Plain}, mapPath{field, e.kind.targets[0].Plain}
	var problem string
	m.identity, problem = readPodIdentity(e.req.index, labels, m.targets[0].Map().Result(m.doc), labelsAt, annotationsAt)
	if problem != "" || e.settings.LegacyUserLabel == "" || !labels.IsObject() {
		return problem
	}
	value, problem := stringEntry(e.req.index, labels, e.settings.LegacyUserLabel, labelsAt)
	m.labels.Entry = rawjson.RefOf(value) // the labels exist: stringEntry read them
	return problem
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
		return v, notAString(at.String(), key)
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
