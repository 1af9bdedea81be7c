package policy

// validJSON reports whether s is exactly one JSON value (surrounded by optional whitespace), with the same
// answer as encoding/json.Valid (a fuzz test compares them). It is iterative, keeping the open containers
// in a slice: gjson.Valid recurses once per nesting level, and ~1,300 levels exhaust the 64 KiB stack of
// the wasm guest, a trap the host turns into an HTTP 500 (docs/rules.md "Bad input": never). It is also the one
// full pass over the payload that every request pays, so it is written for speed.
func validJSON(s string) bool {
	var open []byte // '{' or '[' for every container entered
	i := 0
	for {
		var entered, ok bool
		if i, open, entered, ok = scanValueStart(s, i, open); !ok {
			return false
		}
		if entered {
			continue // a value is expected inside the new container
		}
		var done bool
		if i, open, done, ok = scanValueEnd(s, i, open); !ok || done {
			return ok
		}
	}
}

// scanValueStart reads the value expected at i: a scalar or an empty container (entered false, i after
// it), or the opening of a non-empty one (entered true, i at its first value).
func scanValueStart(s string, i int, open []byte) (next int, _ []byte, entered, ok bool) {
	i = skipSpace(s, i)
	if i >= len(s) {
		return i, open, false, false
	}
	switch c := s[i]; {
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		if i = skipSpace(s, i+1); i < len(s) && s[i] == closing {
			return i + 1, open, false, true
		}
		if c == '{' {
			i, ok = scanKey(s, i)
			return i, append(open, c), true, ok
		}
		return i, append(open, c), true, true
	case c == '"':
		i, ok = scanString(s, i)
	case c == 't':
		i, ok = scanLiteral(s, i, "true")
	case c == 'f':
		i, ok = scanLiteral(s, i, "false")
	case c == 'n':
		i, ok = scanLiteral(s, i, "null")
	case c == '-' || isDigit(c):
		i, ok = scanNumber(s, i)
	}
	return i, open, false, ok
}

// scanValueEnd closes containers after a value until a comma asks for the next value (done false), or
// the document ends (done true; ok when nothing but whitespace follows).
func scanValueEnd(s string, i int, open []byte) (next int, _ []byte, done, ok bool) {
	for {
		i = skipSpace(s, i)
		if len(open) == 0 {
			return i, open, true, i == len(s)
		}
		if i >= len(s) {
			return i, open, true, false
		}
		top := open[len(open)-1]
		switch {
		case s[i] == ',' && top == '{':
			i, ok = scanKey(s, skipSpace(s, i+1))
			return i, open, !ok, ok
		case s[i] == ',':
			return i + 1, open, false, true
		case top == '{' && s[i] == '}', top == '[' && s[i] == ']':
			open = open[:len(open)-1]
			i++
		default:
			return i, open, true, false
		}
	}
}

// scanKey reads `"key" :` at i and returns the position after the colon.
func scanKey(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return i, false
	}
	i, ok := scanString(s, i)
	if !ok {
		return i, false
	}
	if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
		return i, false
	}
	return i + 1, true
}

// scanString reads the string starting with the quote at i and returns the position after its end.
func scanString(s string, i int) (int, bool) {
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func scanLiteral(s string, i int, literal string) (int, bool) {
	if len(s)-i < len(literal) || s[i:i+len(literal)] != literal {
		return i, false
	}
	return i + len(literal), true
}

// scanNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func scanNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
		i = skipDigits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
		i = skipDigits(s, i)
	}
	return i, true
}

func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
