package policy

import (
	"strings"
)

// Reading structured values without recursion: a guard map's member may be nested YAML (Flink flattens
// it, rule 13) and a task-groups annotation is a JSON document of its own (rule 15). Both are read by one
// loop with an explicit stack, so that no nesting depth can exhaust the guest's small stack.

// leaf is one scalar (or empty container) of a structured value: key is the member names from the top
// down to it joined with "." (array elements add no name), text its value when that is a string.
type leaf struct {
	key      string
	text     string
	isString bool
}

// eachLeaf calls fn with every leaf of raw, one valid JSON value, whose own key is prefix, until fn
// returns false. Keys and strings are unescaped.
func eachLeaf(raw, prefix string, fn func(leaf) bool) {
	type frame struct {
		object bool
		keyLen int // the key's length when the container was entered
		empty  bool
	}
	key := append(make([]byte, 0, len(prefix)+64), prefix...)
	var stack []frame
	expectKey := false
	emit := func(text string, isString bool) bool {
		if n := len(stack); n > 0 {
			stack[n-1].empty = false
		}
		return fn(leaf{key: string(key), text: text, isString: isString})
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case isSpace(c) || c == ':':
			i++
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
			i++
		case c == '{' || c == '[':
			if n := len(stack); n > 0 {
				stack[n-1].empty = false
			}
			stack = append(stack, frame{object: c == '{', keyLen: len(key), empty: true})
			expectKey = c == '{'
			i++
		case c == '}' || c == ']':
			f := stack[len(stack)-1]
			key = key[:f.keyLen]
			stack = stack[:len(stack)-1]
			if f.empty && !fn(leaf{key: string(key)}) {
				return
			}
			i++
		case c == '"':
			end, escaped := stringEnd(raw, i)
			s := stringValue(raw[i:end], escaped)
			i = end
			if expectKey {
				top := &stack[len(stack)-1]
				top.empty = false
				key = key[:top.keyLen]
				if len(key) > 0 {
					key = append(key, '.')
				}
				key = append(key, s...)
				expectKey = false
				continue
			}
			if !emit(s, true) {
				return
			}
		default:
			i = scalarEnd(raw, i)
			if !emit("", false) {
				return
			}
		}
	}
}

// stringsOf calls fn with every string of text (keys and values, unescaped) until fn returns true, and
// reports whether it did. When text is not valid JSON, its quoted runs are read as strings all the same:
// a reader more lenient than the policy's (Go's decoder takes invalid UTF-8) must not find a string the
// policy did not look at.
func stringsOf(text string, fn func(string) bool) bool {
	valid := validJSON(text)
	for i := 0; i < len(text); i++ {
		if text[i] != '"' {
			continue
		}
		end, escaped, closed := closedStringEnd(text, i)
		if !closed {
			return false
		}
		s := text[i:end]
		if escaped && !valid {
			s = unescapeLeniently(s)
		} else {
			s = stringValue(s, escaped)
		}
		if fn(s) {
			return true
		}
		i = end - 1
	}
	return false
}

// closedStringEnd is stringEnd that also reports whether the string has its closing quote.
func closedStringEnd(s string, i int) (end int, escaped, closed bool) {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i + 1, escaped, true
		case '\\':
			escaped = true
			i++
		}
	}
	return len(s), escaped, false
}

// unescapeLeniently unescapes a quoted run of text that may not be a valid JSON string: what gjson can
// read, and the text without its backslashes too, so that either reading is looked at.
func unescapeLeniently(quoted string) string {
	return stringValue(quoted, true) + "\x00" + strings.ReplaceAll(quoted, `\`, "")
}

// namesAnnotation reports whether a task-groups value, read as JSON, holds a key or a string that
// contains the annotation key (rule 15): YuniKorn copies each task group's annotations onto the
// placeholder pods it creates under its own account.
func namesAnnotation(taskGroups string) bool {
	if !strings.Contains(taskGroups, "user") && !strings.Contains(taskGroups, `\`) {
		return false // neither the key nor an escape that could spell it
	}
	return stringsOf(taskGroups, func(s string) bool { return strings.Contains(s, AnnotationKey) })
}
