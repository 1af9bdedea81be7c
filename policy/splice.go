package policy

import (
	"strings"

	"github.com/mailru/easyjson/jwriter"
	"github.com/tidwall/gjson"
)

// The mutation is a splice of the raw JSON text (SPEC.md "Host protocol"): a typed decode and re-encode
// would drop fields such as `replicas: 0` or `allowPrivilegeEscalation: false`, and the host's diff would
// then remove them from the object. Every function here takes an object Result found by walking the
// document with gjson from its root, so Result.Index is the byte offset of the value in the document.

// docRoot returns the root object of a document for walking with member.
func docRoot(text string) gjson.Result {
	return gjson.Result{Type: gjson.JSON, Raw: text}
}

// member finds key in obj, comparing keys after unescaping (`user\u002einfo` is `user.info`). It reports
// whether the key occurs more than once: such a document is refused, since readers disagree on which
// occurrence counts (encoding/json takes the last, gjson the first).
func member(obj gjson.Result, key string) (keyResult, value gjson.Result, duplicate bool) {
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			if value.Exists() {
				duplicate = true
				return false
			}
			keyResult, value = k, v
		}
		return true
	})
	return keyResult, value, duplicate
}

// isMissing reports a member that is absent or JSON null: both mean "create it" (SPEC.md "stamp").
func isMissing(v gjson.Result) bool { return !v.Exists() || v.Type == gjson.Null }

// jsonString encodes s as a JSON string with Go's escaping.
func jsonString(s string) string {
	w := jwriter.Writer{}
	w.String(s)
	return string(w.Buffer.BuildBytes())
}

// setMember returns doc with obj[key] set to valueJSON: the existing value's bytes are replaced, or the
// member is inserted first in the object. Nothing else in doc changes.
func setMember(doc string, obj gjson.Result, key, valueJSON string) string {
	_, old, _ := member(obj, key)
	if old.Exists() {
		return splice(doc, old.Index, old.Index+len(old.Raw), valueJSON)
	}
	open := obj.Index + 1 // just after '{'
	entry := jsonString(key) + ":" + valueJSON
	if hasMembers(obj) {
		entry += ","
	}
	return splice(doc, open, open, entry)
}

// setPath sets the nested member path (the last element is the key, the rest are objects) below obj,
// creating the objects that are missing or null. The caller has checked that present ones are objects.
func setPath(doc string, obj gjson.Result, path []string, valueJSON string) string {
	for i, key := range path[:len(path)-1] {
		_, next, _ := member(obj, key)
		if isMissing(next) {
			return setMember(doc, obj, key, nestedObject(path[i+1:], valueJSON))
		}
		obj = next
	}
	return setMember(doc, obj, path[len(path)-1], valueJSON)
}

// nestedObject builds {"a":{"b":value}} for path [a b].
func nestedObject(path []string, valueJSON string) string {
	var b strings.Builder
	for _, key := range path {
		b.WriteString("{")
		b.WriteString(jsonString(key))
		b.WriteString(":")
	}
	b.WriteString(valueJSON)
	b.WriteString(strings.Repeat("}", len(path)))
	return b.String()
}

// removeMember returns doc without obj[key] and one separating comma.
func removeMember(doc string, obj gjson.Result, key string) string {
	k, v, _ := member(obj, key)
	if !v.Exists() {
		return doc
	}
	start, end := k.Index, v.Index+len(v.Raw)
	if after := skipSpace(doc, end); after < len(doc) && doc[after] == ',' {
		end = after + 1
	} else if before := skipSpaceBack(doc, start); before > 0 && doc[before-1] == ',' {
		start = before - 1
	}
	return splice(doc, start, end, "")
}

func hasMembers(obj gjson.Result) bool {
	has := false
	obj.ForEach(func(_, _ gjson.Result) bool {
		has = true
		return false
	})
	return has
}

func splice(doc string, start, end int, insert string) string {
	var b strings.Builder
	b.Grow(len(doc) - (end - start) + len(insert))
	b.WriteString(doc[:start])
	b.WriteString(insert)
	b.WriteString(doc[end:])
	return b.String()
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func skipSpaceBack(s string, i int) int {
	for i > 0 && isSpace(s[i-1]) {
		i--
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
