package policy

import "unsafe"

// validJSON reports whether s is exactly one JSON value (surrounded by optional whitespace), with the same
// answer as encoding/json.Valid (a fuzz test compares them).
func validJSON(s string) bool { return indexJSON(s) != nil }

// indexJSON is indexJSONFrom for the containers of indexedSize bytes or more.
func indexJSON(s string) *jsonIndex { return indexJSONFrom(s, indexedSize) }

// indexJSONFrom checks that s is exactly one JSON value, as validJSON, and returns the index of its
// containers of minSize bytes or more (nil when s is not valid). It is iterative, keeping the open
// containers in a slice: gjson.Valid recurses once per nesting level, and ~1,300 levels exhaust the 64 KiB
// stack of the wasm guest, a trap the host turns into an HTTP 500 (docs/rules.md "Bad input": never). It
// is also the one full pass over the payload that every request pays, so it is written for speed.
func indexJSONFrom(s string, minSize int) *jsonIndex {
	x := &jsonIndex{doc: s, minSize: minSize}
	var open []int // the numbers of the containers entered
	i := 0
	for {
		var entered, ok bool
		if i, open, entered, ok = x.scanValueStart(i, open); !ok {
			return nil
		}
		if entered {
			continue // a value is expected inside the new container
		}
		var done bool
		if i, open, done, ok = x.scanValueEnd(i, open); !ok || done {
			if !ok {
				return nil
			}
			return x
		}
	}
}

// scanValueStart reads the value expected at i: a scalar or an empty container (entered false, i after
// it), or the opening of a non-empty one (entered true, i at its first value).
func (x *jsonIndex) scanValueStart(i int, open []int) (next int, _ []int, entered, ok bool) {
	s := x.doc
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
		start := i
		if i = skipSpace(s, i+1); i < len(s) && s[i] == closing {
			if i+1-start >= x.minSize {
				x.containers = append(x.containers, container{start: start, end: i + 1, next: len(x.containers) + 1})
			}
			return i + 1, open, false, true
		}
		open = append(open, len(x.containers))
		x.containers = append(x.containers, container{start: start})
		if c == '{' {
			i, ok = scanKey(s, i)
			return i, open, true, ok
		}
		return i, open, true, true
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
func (x *jsonIndex) scanValueEnd(i int, open []int) (next int, _ []int, done, ok bool) {
	s := x.doc
	for {
		i = skipSpace(s, i)
		if len(open) == 0 {
			return i, open, true, i == len(s)
		}
		if i >= len(s) {
			return i, open, true, false
		}
		top := &x.containers[open[len(open)-1]]
		switch kind := s[top.start]; {
		case s[i] == ',' && kind == '{':
			i, ok = scanKey(s, skipSpace(s, i+1))
			return i, open, !ok, ok
		case s[i] == ',':
			return i + 1, open, false, true
		case kind == '{' && s[i] == '}', kind == '[' && s[i] == ']':
			if n := open[len(open)-1]; i+1-top.start < x.minSize && n == len(x.containers)-1 {
				x.containers = x.containers[:n] // small: read again rather than looked up
			} else {
				top.end, top.next = i+1, len(x.containers)
			}
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
		// Eight ordinary bytes at a time: most of a payload is the text of strings.
		for i+8 <= len(s) {
			w := load64(s, i)
			if hasLess(w, 0x20)|hasByte(w, '"')|hasByte(w, '\\') != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
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

// Word-at-a-time tests on eight bytes of text (Hacker's Delight 6-1): each is non-zero exactly when one
// of the eight bytes qualifies (which bit is set says nothing reliable about which byte).
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// load64 reads the eight bytes s[i:i+8] as one word, in memory order; the caller has checked that
// i+8 <= len(s). It is one unaligned load with no bounds check, so that TinyGo inlines it (with the check,
// or with a word assembled from eight byte loads, it stays a call in the guest, and the word-at-a-time
// loops are slower than byte loops). The tests below ask whether any byte qualifies, so the order of the
// bytes in the word does not matter.
func load64(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// hasLess: a byte of w is below n (n <= 0x80).
func hasLess(w uint64, n byte) uint64 { return (w - lowBits*uint64(n)) &^ w & highBits }

// hasByte: a byte of w is b.
func hasByte(w uint64, b byte) uint64 { return hasLess(w^(lowBits*uint64(b)), 1) }

// hasHigh: a byte of w is 0x80 or above (not ASCII).
func hasHigh(w uint64) uint64 { return w & highBits }
