package rawjson

import (
	"strconv"
	"unicode/utf8"
)

// PlainStrings reads raw, a valid JSON array, in one pass: whether it holds only strings (ok), how many,
// and whether it is plain, byte for byte encoding/json's text for them: no whitespace between strings, no
// escapes, none of <, >, &, U+2028, U+2029 (any 0xE2 byte is refused), valid UTF-8.
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

// HasLoneSurrogate reports whether valid JSON text escapes half of a surrogate pair on its own.
func HasLoneSurrogate(text string) bool {
	high := false // the escape before was a high surrogate, waiting for its pair
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			if high {
				return true
			}
			continue
		}
		i++
		if text[i] != 'u' {
			if high {
				return true
			}
			continue
		}
		u, _ := strconv.ParseUint(text[i+1:i+5], 16, 16) // valid JSON: four hex digits
		i += 4
		switch {
		case u >= 0xD800 && u < 0xDC00:
			if high {
				return true
			}
			high = true
		case u >= 0xDC00 && u < 0xE000:
			if !high {
				return true
			}
			high = false
		default:
			if high {
				return true
			}
		}
	}
	return high
}

// IsEmptyObject reports whether raw, an object, has no member.
func IsEmptyObject(raw string) bool {
	for i := 1; i < len(raw); i++ {
		if !IsSpace(raw[i]) {
			return raw[i] == '}'
		}
	}
	return false
}
