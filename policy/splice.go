package policy

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mailru/easyjson/buffer"
	"github.com/mailru/easyjson/jwriter"
	"github.com/tidwall/gjson"
)

// The mutation is a splice of the raw JSON text (docs/rules.md "Host protocol"): a typed decode and re-encode
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

// isMissing reports a member that is absent or JSON null: both mean "create it" (docs/rules.md "Words": stamp).
func isMissing(v gjson.Result) bool { return !v.Exists() || v.Type == gjson.Null }

// jsonString encodes s as a JSON string with Go's escaping.
func jsonString(s string) string {
	if !needsEscape(s) {
		return `"` + s + `"`
	}
	w := jwriter.Writer{Buffer: buffer.Buffer{Buf: make([]byte, 0, len(s)+16)}}
	w.String(s)
	out := w.Buffer.BuildBytes()
	return unsafe.String(unsafe.SliceData(out), len(out)) // out is ours and never written again
}

// needsEscape reports whether Go's encoding/json would escape anything in s (or replace invalid UTF-8).
func needsEscape(s string) bool {
	for i := range len(s) {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

// setMember returns doc with obj[key] set to the JSON text made of valueParts: the existing value's bytes
// are replaced, or the member is inserted first in the object. Nothing else in doc changes.
func setMember(doc string, obj gjson.Result, key string, valueParts []string) edit {
	_, old, _ := member(obj, key)
	return putMember(doc, obj, key, old, valueParts)
}

// putMember is setMember for a caller that already holds obj[key] (old, absent when there is none).
func putMember(doc string, obj gjson.Result, key string, old gjson.Result, valueParts []string) edit {
	if old.Exists() {
		return edit{doc: doc, start: old.Index, end: old.Index + len(old.Raw), parts: valueParts}
	}
	open := obj.Index + 1 // just after '{'
	parts := append([]string{jsonString(key), ":"}, valueParts...)
	if hasMembers(obj) {
		parts = append(parts, ",")
	}
	return edit{doc: doc, start: open, end: open, parts: parts}
}

// setPath sets the nested member path (the last element is the key, the rest are objects) below obj to
// valueJSON, creating the objects that are missing or null. The caller has checked that present ones are
// objects.
func setPath(doc string, obj gjson.Result, path []string, valueJSON string) edit {
	for i, key := range path[:len(path)-1] {
		_, next, _ := member(obj, key)
		if isMissing(next) {
			// {"b":{"c":value}} for the rest of the path [b c].
			parts := make([]string, 0, 3*len(path))
			for _, k := range path[i+1:] {
				parts = append(parts, "{", jsonString(k), ":")
			}
			parts = append(parts, valueJSON, strings.Repeat("}", len(path)-i-1))
			return setMember(doc, obj, key, parts)
		}
		obj = next
	}
	return setMember(doc, obj, path[len(path)-1], []string{valueJSON})
}

// removeMember returns doc without obj[key] and one separating comma.
func removeMember(doc string, obj gjson.Result, key string) edit {
	k, v, _ := member(obj, key)
	if !v.Exists() {
		return edit{doc: doc}
	}
	start, end := k.Index, v.Index+len(v.Raw)
	if after := skipSpace(doc, end); after < len(doc) && doc[after] == ',' {
		end = after + 1
	} else if before := skipSpaceBack(doc, start); before > 0 && doc[before-1] == ',' {
		start = before - 1
	}
	return edit{doc: doc, start: start, end: end}
}

func hasMembers(obj gjson.Result) bool {
	has := false
	obj.ForEach(func(_, _ gjson.Result) bool {
		has = true
		return false
	})
	return has
}

// edit is a document with doc[start:end] replaced by parts. It is kept in pieces, and written straight into
// the response, so that a large object is not copied once more on its way out.
type edit struct {
	doc        string
	start, end int
	parts      []string
}

// changed reports whether the edit holds a document (the zero edit means "no mutation").
func (e edit) changed() bool { return e.doc != "" }

// Len is the length of the edited document.
func (e edit) Len() int {
	n := len(e.doc) - (e.end - e.start)
	for _, p := range e.parts {
		n += len(p)
	}
	return n
}

// String returns the edited document, in one allocation.
func (e edit) String() string {
	var b strings.Builder
	b.Grow(e.Len())
	e.writeTo(func(s string) { b.WriteString(s) })
	return b.String()
}

func (e edit) writeTo(write func(string)) {
	write(e.doc[:e.start])
	for _, p := range e.parts {
		write(p)
	}
	write(e.doc[e.end:])
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
