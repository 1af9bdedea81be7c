package rawjson

import (
	"strings"
	"unicode/utf8"
)

// PlainStrings reads raw, a JSON array from the validated payload, in one pass: whether it holds only
// strings (ok), how many, and whether it is plain: byte for byte encoding/json's text for the same
// strings, so that it can be copied as it is. Plain means no whitespace outside the strings, no escapes (so
// every quote is a delimiter), none of the characters encoding/json escapes although JSON does not need it
// (<, >, &, U+2028, U+2029: any 0xE2 byte is refused, which covers them), and valid UTF-8 (encoding/json
// replaces invalid bytes).
func PlainStrings(raw string) (ok, plain bool, count int) {
	plain, ascii, in := true, true, false
	for i := 1; i < len(raw)-1; i++ {
		if in {
			// Eight bytes at a time through a group's ordinary ASCII text, to the first byte that is not.
			for ; i+8 < len(raw); i += 8 {
				w := load64(raw, i)
				// '"' or '&' are the bytes that are 0x26 with bit 0x04 set, '<' or '>' 0x3E with 0x02 set.
				if m := hasByte(w|lowBits*0x04, '&') | hasByte(w|lowBits*0x02, '>') | hasByte(w, '\\') | hasHigh(w); m != 0 {
					i += firstFlagged(m)
					break
				}
			}
		}
		c := raw[i]
		if in {
			switch {
			case c == '"':
				in = false
			case c == '\\':
				plain = false
				i++ // the escaped character: a quote or a backslash must not end the string
			case c == '<' || c == '>' || c == '&' || c == 0xE2:
				plain = false
			case c >= utf8.RuneSelf:
				ascii = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
			count++
		case ',':
		case ' ', '\t', '\n', '\r':
			plain = false
		default:
			return false, false, 0 // an element that is not a string
		}
	}
	if plain && !ascii {
		plain = utf8.ValidString(raw)
	}
	return true, plain, count
}

// Strings calls fn with every string of text (keys and values, unescaped) until fn returns true, and
// reports whether it did. When text is not valid JSON, its quoted runs are read as strings all the same:
// a reader more lenient than the policy's (Go's decoder takes invalid UTF-8) must not find a string the
// policy did not look at.
func Strings(text string, fn func(string) bool) bool {
	valid := Valid(text)
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
			s = StringValue(s, escaped)
		}
		if fn(s) {
			return true
		}
		i = end - 1
	}
	return false
}

// closedStringEnd is StringEnd that also reports whether the string has its closing quote.
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
	return StringValue(quoted, true) + "\x00" + strings.ReplaceAll(quoted, `\`, "")
}
