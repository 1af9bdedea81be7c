package rawjson

import (
	"math/bits"
	"unsafe"
)

// Valid reports whether s is exactly one JSON value (surrounded by optional whitespace), with the same
// answer as encoding/json.Valid (a fuzz test compares them).
func Valid(s string) bool { return Parse(s) != nil }

// Parse is ParseFrom for the containers of IndexedSize bytes or more.
func Parse(s string) *Index { return ParseFrom(s, IndexedSize) }

// ParseFrom checks that s is exactly one JSON value, as Valid, and returns the index of its containers of
// minSize bytes or more (nil when s is not valid). It is iterative, whatever the nesting, and written for
// speed: every request pays this pass (docs/runtime.md "The JSON engine").
func ParseFrom(s string, minSize int) *Index {
	x, _ := newValidator(s, minSize, nil, nil).parse(s)
	return x
}

// Records is storage for an index's records that a caller keeps from one Parse to the next; it only
// grows. An index is valid until the next Parse with the same Records.
// See docs/runtime.md "Storage kept between evaluations".
type Records struct {
	containers []container
	open       []int
}

// Parse is the package's Parse, with the records in r.
func (r *Records) Parse(s string) *Index {
	x, v := newValidator(s, IndexedSize, r.containers, r.open).parse(s)
	r.containers, r.open = v.containers, v.open // grown or not, whether s was valid or not
	return x
}

// Reserve gives r room for the records of a document of up to size bytes.
func (r *Records) Reserve(size int) {
	r.containers, r.open = emptied(r.containers, recordsFor(size)), emptied(r.open, openRoom)
}

// newValidator starts the records of s in the storage kept (a Records'), or in new storage with room
// for a small document when that has less (docs/runtime.md "Pages").
func newValidator(s string, minSize int, containers []container, open []int) validator {
	return validator{minSize: minSize, containers: emptied(containers, recordsFor(len(s))), open: emptied(open, openRoom)}
}

// recordsFor is the room for the records of a document of size bytes a validator starts with, and
// openRoom its room for open containers.
func recordsFor(size int) int { return 8 + min(size/128, 120) }

const openRoom = 16

// emptied is kept emptied when it has room for n elements, otherwise an empty slice with that room. The
// elements hold no pointer: those left in kept keep nothing alive.
func emptied[T container | int](kept []T, n int) []T {
	if cap(kept) < n {
		return make([]T, 0, n)
	}
	return kept[:0]
}

// validator is ParseFrom's record of the containers: those recorded for the index (each entered
// one, dropped again when it closes small) and those entered and not yet closed.
type validator struct {
	containers []container
	open       []int // the numbers of the containers entered, innermost last
	minSize    int
}

// parse is ParseFrom with v's records; it returns them as grown.
func (v validator) parse(s string) (*Index, validator) {
	object := false // the innermost open container is an object (a local: read at every comma)
	i := 0
	for {
		// A value is expected at i.
		if i = skipSpace(s, i); i >= len(s) {
			return nil, v
		}
		entered := false
		switch c := s[i]; c {
		case '"':
			i = v.string(s, i)
		case '{', '[':
			if i, entered = v.enter(s, i); entered {
				object = c == '{'
			}
		default:
			i = scanScalar(s, i)
		}
		if i < 0 {
			return nil, v
		}
		if entered {
			continue // the container's first value
		}
		// After a value: close containers until a comma asks for the next value, or the document ends.
		for i = skipSpace(s, i); len(v.open) == 0 || i >= len(s) || s[i] != ','; i = skipSpace(s, i) {
			if len(v.open) == 0 { // the document's value: nothing but whitespace may follow
				if i != len(s) {
					return nil, v
				}
				return &Index{doc: s, containers: v.containers, minSize: v.minSize}, v
			}
			if i, object = v.leave(s, i, object); i < 0 {
				return nil, v
			}
		}
		i++
		if object {
			if i = scanKey(s, skipSpace(s, i)); i < 0 {
				return nil, v
			}
		}
	}
}

// string reads the string value at i and records it when it is long: a member lookup then steps over it
// without reading it again, however escaped it is (an annotation holding JSON text). Keys are not
// recorded: they are read to be compared.
func (v *validator) string(s string, i int) int {
	end, escaped := scanString(s, i)
	if end-i >= v.minSize {
		v.containers = append(v.containers, container{start: i, end: end, next: len(v.containers) + 1, escaped: escaped})
	}
	return end
}

// enter reads the container opening at i: an empty one (entered false, the offset after it), or the
// opening of another (entered true, the offset of its first value, after the key in an object); -1 when
// the text is not valid.
func (v *validator) enter(s string, i int) (next int, entered bool) {
	start, c := i, s[i]
	if i = skipSpace(s, i+1); i < len(s) && s[i] == c+2 { // empty: '{'+2 is '}', '['+2 is ']'
		i++
		if i-start >= v.minSize {
			v.containers = append(v.containers, container{start: start, end: i, next: len(v.containers) + 1})
		}
		return i, false
	}
	v.open = append(v.open, len(v.containers))
	v.containers = append(v.containers, container{start: start})
	if c == '{' {
		i = scanKey(s, i)
	}
	return i, true
}

// leave reads the bracket at i that closes the innermost container, an object or not, and returns the
// offset after it (-1 when there is no such bracket: the document ended, or another byte is there) and
// whether the container now innermost is an object.
func (v *validator) leave(s string, i int, object bool) (next int, _ bool) {
	if len(v.open) == 0 || i >= len(s) || s[i] != '}' && s[i] != ']' || (s[i] == '}') != object {
		return -1, false
	}
	i++
	n := v.open[len(v.open)-1]
	if top := &v.containers[n]; i-top.start < v.minSize && n == len(v.containers)-1 {
		v.containers = v.containers[:n] // small: read again rather than looked up
	} else {
		top.end, top.next = i, len(v.containers)
	}
	if v.open = v.open[:len(v.open)-1]; len(v.open) > 0 {
		object = s[v.containers[v.open[len(v.open)-1]].start] == '{'
	}
	return i, object
}

// scanScalar reads the literal or number at i and returns the offset after it, or -1.
func scanScalar(s string, i int) int {
	switch s[i] {
	case 't':
		return scanLiteral(s, i, "true")
	case 'f':
		return scanLiteral(s, i, "false")
	case 'n':
		return scanLiteral(s, i, "null")
	}
	return scanNumber(s, i)
}

// scanKey reads `"key" :` at i and returns the offset after the colon, or -1.
func scanKey(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	if i, _ = scanString(s, i); i < 0 {
		return -1
	}
	if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
		return -1
	}
	return i + 1
}

// scanString reads the string starting with the quote at i and returns the offset after its end, or -1,
// and whether it holds an escape: ordinary text eight bytes at a time, the rest by scanEscaped.
func scanString(s string, i int) (end int, escaped bool) {
	for i++; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		if m := stringSpecial(w); m != 0 {
			if i += firstFlagged(m); s[i] == '"' {
				return i + 1, false
			}
			break
		}
	}
	return scanEscaped(s, i)
}

// scanEscaped is scanString from i, inside the string.
func scanEscaped(s string, i int) (end int, escaped bool) {
	for ; ; i++ {
		if i = plainRun(s, i); i >= len(s) {
			return -1, escaped
		}
		switch c := s[i]; {
		case c == '"':
			return i + 1, escaped
		case c < 0x20:
			return -1, escaped
		}
		// A backslash: i is left on the escape's last byte.
		escaped = true
		i++
		if i >= len(s) {
			return -1, escaped
		}
		switch s[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
				return -1, escaped
			}
			i += 4
		default:
			return -1, escaped
		}
	}
}

// plainRun returns the offset of the first quote, backslash or control character at or after i, or
// len(s), reading eight bytes at a time.
func plainRun(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		if m := stringSpecial(w); m != 0 {
			return i + firstFlagged(m)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// scanLiteral reads literal at i and returns the offset after it, or -1.
func scanLiteral(s string, i int, literal string) int {
	if len(s)-i < len(literal) || s[i:i+len(literal)] != literal {
		return -1
	}
	return i + len(literal)
}

// scanNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i and returns the offset after it, or
// -1.
func scanNumber(s string, i int) int {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return -1
		}
		i = skipDigits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return -1
		}
		i = skipDigits(s, i)
	}
	return i
}

func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// Word-at-a-time tests on eight bytes of text (Hacker's Delight 6-1): each is non-zero exactly when one
// of the eight bytes qualifies, and its lowest flag marks the first byte that does (firstFlagged); a
// flag above it may be false.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// load64 reads s[i:i+8] as one word, in memory order; the caller has checked that i+8 <= len(s). One
// unaligned load without a bounds check, so that TinyGo inlines it (docs/runtime.md "The JSON engine").
func load64(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// firstFlagged returns the position of the first byte flagged in m, a non-zero result of the tests below:
// a test's lowest flag is a true one (a false flag needs a borrow from a true one below it), and load64
// reads little-endian (wasm, amd64, arm64).
func firstFlagged(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

// store64 writes w to b[i:i+8], the counterpart of load64 (same byte order); the caller has checked
// that i+8 <= len(b).
func store64(b []byte, i int, w uint64) {
	*(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), i)) = w
}

// stringSpecial: a byte of w is a quote, a backslash or a control character. A quote (0x22) with bit 0x02
// flipped is 0x20, the only non-control byte then below 0x21: one test for both.
func stringSpecial(w uint64) uint64 {
	return hasLess(w^(lowBits*0x02), 0x21) | hasByte(w, '\\')
}

// hasLess: a byte of w is below n (n <= 0x80).
func hasLess(w uint64, n byte) uint64 { return (w - lowBits*uint64(n)) &^ w & highBits }

// hasByte: a byte of w is b.
func hasByte(w uint64, b byte) uint64 { return hasLess(w^(lowBits*uint64(b)), 1) }

// hasHigh: a byte of w is 0x80 or above (not ASCII).
func hasHigh(w uint64) uint64 { return w & highBits }
