package rawjson

import "github.com/tidwall/gjson"

// The lexing helpers: where a JSON token ends, and what a string token holds.

// StringEnd returns the offset after the JSON string starting with the quote at i, and whether the
// string holds an escape.
func StringEnd(s string, i int) (end int, escaped bool) {
	for i++; ; i++ {
		if i = plainRun(s, i); i >= len(s) {
			return len(s), escaped
		}
		switch s[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			i++
		}
	}
}

// ContainerEnd returns the offset after the object or array starting at i, by reading it.
func ContainerEnd(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			i, _ = StringEnd(s, i)
			i--
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// StringValue is the text of the JSON string raw, unescaped by gjson as its own iteration does.
func StringValue(raw string, escaped bool) string {
	if !escaped {
		return raw[1 : len(raw)-1]
	}
	return unescape(raw)
}

// unescape is StringValue for a string with an escape, out of line: docs/runtime.md "Functions kept out of line".
//
//go:noinline
func unescape(raw string) string { return gjson.Parse(raw).Str }

// ScalarEnd returns the offset after the number or literal starting at i.
func ScalarEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

func skipSpace(s string, i int) int {
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	return i
}

func skipSpaceBack(s string, i int) int {
	for i > 0 && IsSpace(s[i-1]) {
		i--
	}
	return i
}

// IsSpace reports JSON whitespace: one comparison for the bytes of text, a bit test for the rest.
func IsSpace(c byte) bool {
	return c <= ' ' && uint64(1)<<c&(1<<' '|1<<'\t'|1<<'\n'|1<<'\r') != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
