package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// Rules 15 and 16: task groups are read strictly (docs/rules.md "Task groups (rules 15 and 16)"): a value
// the policy cannot read as YuniKorn's lenient decoder does is refused, never stamped.

// TaskGroupsKey is the annotation YuniKorn's gang scheduling reads task groups from.
const TaskGroupsKey = "yunikorn.apache.org/task-groups"

// maxTaskGroupsDepth bounds how deep a task-groups value may nest; deeper is not plain.
const maxTaskGroupsDepth = 32

// taskGroups is a task-groups annotation value as read by readTaskGroups.
type taskGroups struct {
	text      string // the annotation's value: JSON text
	x         *rawjson.Index
	notPlain  string // why the value is not plain JSON task groups; "" when it is
	elsewhere bool   // user.info as a key or in a string anywhere but as a key of a group's annotations
	inGroups  bool   // user.info as a key of some group's annotations
	setsKey   string // an application-ID key or the legacy label in a group's annotations or labels
	groups    bool   // a plain array with an object in it: rule 16 stamps it
	tooMany   bool   // more groups than readTaskGroupsUpTo's most: the rest was not read
}

// readTaskGroups reads a task-groups value; legacyLabel is "" when legacy handling is off.
func readTaskGroups(text, legacyLabel string) taskGroups {
	return readTaskGroupsUpTo(text, legacyLabel, 0)
}

// readTaskGroupsUpTo is readTaskGroups stopping after most groups (0: no bound), tooMany set.
func readTaskGroupsUpTo(text, legacyLabel string, most int) taskGroups {
	tg := taskGroups{text: text}
	var x *rawjson.Index
	switch {
	case !utf8.ValidString(text):
		tg.notPlain = "it is not valid UTF-8"
	case !rawjson.Valid(text):
		tg.notPlain = "it is not valid JSON"
	case rawjson.HasLoneSurrogate(text):
		tg.notPlain = "it holds a lone surrogate escape"
	default:
		x = rawjson.Parse(text)
	}
	if tg.notPlain != "" {
		return tg
	}
	tg.x = x
	r := groupsReader{tg: &tg, x: x, legacyLabel: legacyLabel}
	if strings.TrimLeft(text, " \t\r\n")[0] != '[' {
		r.value(gjson.Parse(text), 0)
		return tg
	}
	it, _ := x.Members(rawjson.Root(text))
	n := 0
	for it, index, element, more := it.Next(); more && tg.notPlain == ""; it, index, element, more = it.Next() {
		if element.Type == gjson.Null { // a strict reader's nothing, encoding/json's empty task group
			tg.notPlain = "element " + strconv.Itoa(int(index.Num)) + " is null, which YuniKorn reads as an empty task group"
			return tg
		}
		if element.IsObject() {
			n++
			if most > 0 && n > most {
				tg.tooMany = true
				return tg
			}
			tg.groups = true
			r.group(element)
		} else {
			r.value(element, 1)
		}
	}
	return tg
}

// refusal is rule 15's message for an untrusted requester's value, or ""; carries: the target carries a
// user.info value in the answer.
func (tg *taskGroups) refusal(carries bool) string {
	switch {
	case tg.notPlain != "":
		return taskGroupsNotPlainRefusal(tg.notPlain)
	case tg.elsewhere || tg.inGroups && !carries:
		return taskGroupsRefusal
	case tg.setsKey != "":
		return taskGroupsKeyRefusal(tg.setsKey)
	}
	return ""
}

// groupsReader checks what makes a value plain, and notes what rule 15 looks for, as it reads.
type groupsReader struct {
	tg          *taskGroups
	x           *rawjson.Index
	legacyLabel string
	keys        []string // a container's keys, for the duplicate check
}

// group reads one task group: annotations and labels must be spelled exactly and hold only strings.
func (r *groupsReader) group(g gjson.Result) {
	if !r.unique(g) {
		return
	}
	it, _ := r.x.Members(g)
	for it, key, value, more := it.Next(); more && r.tg.notPlain == ""; it, key, value, more = it.Next() {
		switch {
		case key.Str == "annotations" || key.Str == "labels":
			r.stringMap(value, key.Str == "annotations")
		case strings.EqualFold(key.Str, "annotations"):
			r.tg.notPlain = "a task group has the member " + quote(key.Str) + ", which YuniKorn reads as annotations"
		case strings.EqualFold(key.Str, "labels"):
			r.tg.notPlain = "a task group has the member " + quote(key.Str) + ", which YuniKorn reads as labels"
		default:
			r.text(key.Str)
			r.value(value, 2)
		}
	}
}

// stringMap reads a group's annotations or labels: null, or an object of strings.
func (r *groupsReader) stringMap(m gjson.Result, annotations bool) {
	if m.Type == gjson.Null {
		return
	}
	if !m.IsObject() {
		r.tg.notPlain = "a task group's annotations and labels must be objects of strings"
		return
	}
	if !r.unique(m) {
		return
	}
	it, _ := r.x.Members(m)
	for it, key, value, more := it.Next(); more; it, key, value, more = it.Next() {
		if value.Type != gjson.String {
			r.tg.notPlain = "a task group's annotations and labels must be objects of strings"
			return
		}
		switch {
		case key.Str == AnnotationKey && annotations:
			r.tg.inGroups = true
		case isApplicationIDKey(key.Str) || key.Str == r.legacyLabel && r.legacyLabel != "":
			r.tg.setsKey = key.Str
		default:
			r.text(key.Str)
		}
		r.text(value.Str)
	}
}

// value reads any other value, depth containers deep.
func (r *groupsReader) value(v gjson.Result, depth int) {
	switch {
	case depth > maxTaskGroupsDepth:
		r.tg.notPlain = "it nests more than " + strconv.Itoa(maxTaskGroupsDepth) + " levels deep"
		return
	case v.Type == gjson.String:
		r.text(v.Str)
		return
	case v.IsObject() && !r.unique(v):
		return
	}
	it, ok := r.x.Members(v)
	if !ok {
		return // a number, true, false or null
	}
	for it, key, value, more := it.Next(); more && r.tg.notPlain == ""; it, key, value, more = it.Next() {
		if key.Type == gjson.String {
			r.text(key.Str)
		}
		r.value(value, depth+1)
	}
}

// text notes a key or a string that names the user.info annotation.
func (r *groupsReader) text(s string) {
	if strings.Contains(s, AnnotationKey) {
		r.tg.elsewhere = true
	}
}

// unique reports whether the object has no member twice (keys compared after unescaping).
func (r *groupsReader) unique(obj gjson.Result) bool {
	r.keys = r.keys[:0]
	it, _ := r.x.Members(obj)
	for it, key, _, more := it.Next(); more; it, key, _, more = it.Next() {
		r.keys = append(r.keys, key.Str)
	}
	if len(r.keys) > 8 {
		seen := make(map[string]struct{}, len(r.keys))
		for _, k := range r.keys {
			if _, dup := seen[k]; dup {
				r.tg.notPlain = keyTwice(k) + " in an object"
				return false
			}
			seen[k] = struct{}{}
		}
		return true
	}
	for i, k := range r.keys {
		for _, other := range r.keys[:i] {
			if k == other {
				r.tg.notPlain = keyTwice(k) + " in an object"
				return false
			}
		}
	}
	return true
}

// isApplicationIDKey reports one of the keys YuniKorn reads a pod's application from (rule 14).
func isApplicationIDKey(key string) bool {
	return key == appIDKey || key == applicationIDKey || key == sparkAppSelector
}

func quote(s string) string { return rawjson.Quote(s) }

// maxObjectBytes is the largest object the API server accepts; a larger answer is refused (docs/rules.md "Cost").
const maxObjectBytes = 3 << 20

// groupsRewrite is one target's task-groups value to be written again with its groups stamped (rule 16).
type groupsRewrite struct {
	write  int    // its edit in the change's writes, whose value is written once the size is known
	text   string // the value as read
	x      *rawjson.Index
	value  string // the user.info value each group gets
	over   bool   // a group's different value is overwritten (not kept)
	size   int    // the rewritten value's length as a JSON string
	groups int    // how many groups are written
}

// taskGroupsOf is a target's task-groups value (absent when it has none, or it is not a string).
func (e *evaluation) taskGroupsOf(m *objectMaps, t *walk.Ref) (gjson.Result, string) {
	if m.labels != nil {
		return m.identity.taskGroups, ""
	}
	obj := t.Map().Result(m.doc)
	if !obj.IsObject() {
		return gjson.Result{}, ""
	}
	v, dup := e.req.index.Child(obj, TaskGroupsKey)
	if dup {
		return v, duplicateKey(m.key(t), TaskGroupsKey)
	}
	if v.Type != gjson.String {
		return gjson.Result{}, ""
	}
	return v, ""
}

// taskGroupsRules applies rules 15 and 16 to one target (but a Pod's UPDATE): carried is its user.info value in the
// answer (absent for none; stamp: the value stampJSON writes, made only if needed), before its pair in was (nil on
// CREATE and for a new target).
func (c *change) taskGroupsRules(m *objectMaps, t *walk.Ref, carried gjson.Result, stamp bool, was *objectMaps, before *walk.Ref) (decision, bool) {
	e := c.e
	now, problem := e.taskGroupsOf(m, t)
	if problem != "" {
		return badInput(problem), true
	}
	if !now.Exists() {
		return decision{}, false
	}
	if stamp {
		carried = c.stamped()
	}
	groupsNew, valueNew := true, true
	if before != nil {
		wasGroups, problem := e.taskGroupsOf(was, before)
		if problem != "" {
			return badInput(problem), true
		}
		wasValue := before.Value().Result(was.doc)
		groupsNew = !sameEntry(wasGroups, now)
		valueNew = !carried.Exists() || !wasValue.Exists() || wasValue.Str != carried.Str
	}
	if !groupsNew && !valueNew {
		return decision{}, false
	}
	tg := readTaskGroupsUpTo(now.Str, e.settings.LegacyUserLabel, e.mostGroups(carried))
	if tg.tooMany {
		e.warn("refused an object too large once stamped (bounded answer)")
		return reject(tooManyGroupsRefusal), true
	}
	if groupsNew && !e.trusted() {
		if refusal := tg.refusal(carried.Exists()); refusal != "" {
			e.warn("refused the task groups of " + e.place(m, t) + " (rule 15)")
			return reject(refusal), true
		}
	}
	if !carried.Exists() || !tg.groups || tg.notPlain != "" {
		return decision{}, false
	}
	return c.stampGroups(m, t, &tg, carried.Str, now)
}

// stampGroups applies rule 16 to a target's plain task groups (text now): each group carries value.
// Apart from taskGroupsRules, which runs for every target: docs/runtime.md "Memory and TinyGo's collector".
func (c *change) stampGroups(m *objectMaps, t *walk.Ref, tg *taskGroups, value string, now gjson.Result) (decision, bool) {
	e := c.e
	rw := groupsRewrite{text: tg.text, x: tg.x, value: value, over: !e.trusted()}
	var refusal string
	rw.size, rw.groups, _ = rw.stamp(nil, func(old string) bool {
		switch {
		case !e.trusted() && e.settings.OnUntrustedAnnotation == ModeReject:
			refusal = taskGroupsRefusal
		case e.trusted():
			if problem := checkSuppliedValue(old); problem != "" {
				refusal = invalidValueRefusal(e.place(m, t)+"'s task groups", problem)
			}
		default:
			c.n[groupsReplaced]++
		}
		return refusal == ""
	})
	if refusal != "" {
		e.warn("refused a user.info value in the task groups of " + e.place(m, t) + " (rule 16)")
		return reject(refusal), true
	}
	if rw.groups > 0 {
		rw.write = c.edits.replace(t, TaskGroupsKey, rawjson.RefOf(now))
		c.rewrites = append(c.rewrites, rw)
	}
	return decision{}, false
}

// mostGroups is how many task groups a CREATE's target carrying a value may hold before the bounded answer
// is certain, as mostTargets says for maps (0: no bound).
func (e *evaluation) mostGroups(carried gjson.Result) int {
	if !carried.Exists() || e.req.operation.Str != "CREATE" {
		return 0
	}
	return mostMaps(e.req.object)
}

// podGroups applies rules 15 and 16 to a Pod's UPDATE, which rewrites nothing.
func (e *evaluation) podGroups(now, was *objectMaps) string {
	value, old := now.identity.taskGroups, was.identity.taskGroups
	if !value.Exists() || sameEntry(old, value) || e.trusted() {
		return ""
	}
	own := now.targets[0].Value().Result(now.doc)
	tg := readTaskGroups(value.Str, e.settings.LegacyUserLabel)
	if refusal := tg.refusal(own.Exists()); refusal != "" || !tg.groups {
		return refusal
	}
	if !own.Exists() {
		return "" // no group may carry a value then, which the refusal checked
	}
	differs := false
	rw := groupsRewrite{text: tg.text, x: tg.x, value: own.Str}
	if _, n, _ := rw.stamp(nil, func(string) bool { differs = true; return false }); n > 0 || differs {
		return taskGroupsRefusal
	}
	return ""
}

// stamp writes the user.info value into each task group that does not carry it (over a different value
// when rw.over and differs agrees), appending the text to out; with out nil it only counts. It returns the
// text's length as a JSON string and how many groups it writes.
func (rw *groupsRewrite) stamp(out []byte, differs func(old string) bool) (size, groups int, _ []byte) {
	w := newGroupsWriter(rw.text, rw.value, out)
	x := rw.x
	if x == nil {
		x = rawjson.Parse(rw.text)
	}
	it, _ := x.Members(rawjson.Root(rw.text))
	for it, _, g, more := it.Next(); more; it, _, g, more = it.Next() {
		if !g.IsObject() {
			continue
		}
		annotations, _ := x.Child(g, "annotations")
		switch {
		case !annotations.Exists():
			w.insert(x, g, annotationsInserted)
		case annotations.Type == gjson.Null:
			w.replace(annotations, annotationsOverNull)
		default:
			v, _ := x.Child(annotations, AnnotationKey)
			switch {
			case !v.Exists():
				w.insert(x, annotations, entryInserted)
			case v.Str != rw.value && differs(v.Str) && rw.over:
				w.replace(v, valueOverOld)
			}
		}
	}
	if w.out != nil {
		w.out = append(w.out, rw.text[w.from:]...)
	}
	return w.size + 2, w.groups, w.out
}

// groupPiece is a text groupsWriter writes into a task group.
type groupPiece uint8

const (
	annotationsInserted      groupPiece = iota // "annotations" with the entry, at the group's '{'
	annotationsInsertedComma                   // the same, before the group's members
	entryInserted                              // the entry, at the annotations' '{'
	entryInsertedComma                         // the same, before their members
	annotationsOverNull                        // an object with the entry, over "annotations": null
	valueOverOld                               // the value, over a different one
	groupPieces
)

// groupsWriter writes task groups again piece by piece: it counts the groups written and the text's
// length as a JSON string, and appends the text to out unless out is nil.
type groupsWriter struct {
	text               string
	out                []byte
	from, size, groups int
	pieces             [groupPieces]string
	lens               [groupPieces]int // each piece's length in a JSON string
}

func newGroupsWriter(text, value string, out []byte) groupsWriter {
	entry := quote(AnnotationKey) + ":" + quote(value)
	w := groupsWriter{text: text, out: out, size: rawjson.QuotedLen(text), pieces: [groupPieces]string{
		annotationsInserted: `"annotations":{` + entry + `}`, annotationsInsertedComma: `"annotations":{` + entry + `},`,
		entryInserted: entry, entryInsertedComma: entry + ",",
		annotationsOverNull: "{" + entry + "}", valueOverOld: quote(value),
	}}
	for i, p := range w.pieces {
		w.lens[i] = rawjson.QuotedLen(p)
	}
	return w
}

// insert writes piece at obj's '{', in its comma form when obj has members.
func (w *groupsWriter) insert(x *rawjson.Index, obj gjson.Result, piece groupPiece) {
	if x.HasMembers(obj) {
		piece++
	}
	at := rawjson.OffsetIn(w.text, obj.Raw) + 1
	w.write(at, at, piece, 0)
}

// replace writes piece over old.
func (w *groupsWriter) replace(old gjson.Result, piece groupPiece) {
	at := rawjson.OffsetIn(w.text, old.Raw)
	w.write(at, at+len(old.Raw), piece, rawjson.QuotedLen(old.Raw))
}

// write puts piece in place of text[start:end], whose length in a JSON string is removed.
func (w *groupsWriter) write(start, end int, piece groupPiece, removed int) {
	w.groups++
	w.size += w.lens[piece] - removed
	if w.out != nil {
		w.out = append(append(w.out, w.text[w.from:start]...), w.pieces[piece]...)
	}
	w.from = end
}
