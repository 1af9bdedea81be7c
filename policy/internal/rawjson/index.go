package rawjson

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Index records where each large container and long string of one valid document ends, so that reading
// members never rescans a value. A Result that is not a view of the document, or any with a nil Index, is
// read by gjson (docs/runtime.md "The JSON index").
type Index struct {
	doc        string
	containers []container // the containers and string values of minSize bytes or more, in document order
	minSize    int
}

// Doc is the indexed document.
func (x *Index) Doc() string { return x.doc }

// IndexedSize is the size from which a container is recorded: a smaller one costs less to read again
// than to record.
const IndexedSize = 128

// container is one object, array or string value of the indexed document.
type container struct {
	start int // offset of its '{', '[' or '"'
	end   int // offset just after the matching '}', ']' or '"'
	next  int // the number of the first container after its end (its next sibling, or an ancestor's)
	// escaped: a string that holds an escape
	escaped bool
}

// At returns the offset of raw in the indexed document, or -1 when raw is not a view of it.
func (x *Index) At(raw string) int {
	if x == nil {
		return -1
	}
	return OffsetIn(x.doc, raw)
}

// OffsetIn returns the offset of raw in doc when raw is a view of doc's bytes (a substring sharing its
// memory), or -1 (raw or doc empty, or raw held anywhere else).
func OffsetIn(doc, raw string) int {
	if raw == "" || doc == "" {
		return -1
	}
	d, p := uintptr(unsafe.Pointer(unsafe.StringData(doc))), uintptr(unsafe.Pointer(unsafe.StringData(raw)))
	if len(raw) > len(doc) || p < d || p-d > uintptr(len(doc)-len(raw)) {
		return -1
	}
	return int(p - d)
}

// Following returns the number of the first recorded container that starts at offset at or after it.
func (x *Index) Following(at int) int {
	lo, hi := 0, len(x.containers) // a binary search by hand: sort.Search's closure is a heap allocation in the guest
	for lo < hi {
		if mid := lo + (hi-lo)/2; x.containers[mid].start < at {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// ForEach calls fn with every member (key, value) of the object v, or every element (key.Num = its
// position) of the array v, as gjson's v.ForEach does for valid JSON, until fn returns false. Results
// carry the same Raw, Str, Type and Index as gjson's.
func (x *Index) ForEach(v gjson.Result, fn func(key, value gjson.Result) bool) {
	it, ok := x.Members(v)
	if !ok {
		v.ForEach(fn)
		return
	}
	for {
		var key, value gjson.Result
		var more bool
		it, key, value, more = it.Next()
		if !more || !fn(key, value) {
			return
		}
	}
}

// MemberIter reads the members of a container of the indexed document one at a time: ForEach's loop
// without a closure, which allocates in the guest.
type MemberIter struct {
	x             *Index
	base, vIndex  int // where the container's view starts in the document, and its Index
	i, closing, c int // the next member, the closing bracket, the next recorded container
	object        bool
	key           gjson.Result
	// keysOnly leaves string values escaped (Str empty) and numbers unread (Num 0), for a lookup by key
	// (docs/runtime.md "The JSON index").
	keysOnly bool
}

// Members returns an iterator over v's Members, or false when v is not a container viewed in the
// indexed document (gjson reads those).
func (x *Index) Members(v gjson.Result) (MemberIter, bool) {
	base := x.At(v.Raw)
	if base < 0 || v.Type != gjson.JSON {
		return MemberIter{}, false
	}
	s := x.doc
	open := skipSpace(s, base)
	if open >= len(s) || s[open] != '{' && s[open] != '[' {
		return MemberIter{}, false // not a container, whatever its Type says
	}
	closing := base + len(v.Raw) - 1 // v.Raw is one container, maybe followed by whitespace
	for closing > open && s[closing] != '}' && s[closing] != ']' {
		closing--
	}
	it := MemberIter{x: x, base: base, vIndex: v.Index, i: skipSpace(s, open+1), closing: closing,
		c: x.Following(open + 1), object: s[open] == '{'}
	if it.object {
		it.key.Type = gjson.String
	} else {
		it.key.Type, it.key.Num = gjson.Number, -1
	}
	return it, true
}

// Next returns the next member (an array's key is its position) as gjson's ForEach gives it, or more
// false after the last. The iterator is a value, given and returned, as a pointer receiver allocates
// in the guest.
func (it MemberIter) Next() (_ MemberIter, key, value gjson.Result, more bool) {
	s, i := it.x.doc, it.i
	if i >= it.closing {
		return it, key, value, false
	}
	if it.object {
		end, escaped := StringEnd(s, i)
		it.key.Raw, it.key.Index = s[i:end], i-it.base+it.vIndex
		it.key.Str = StringValue(it.key.Raw, escaped)
		i = skipSpace(s, skipSpace(s, end)+1) // past the colon
	} else {
		it.key.Num++
	}
	end, escaped, c := it.x.valueEnd(i, it.c)
	it.c = c
	value = valueOf(s[i:end], escaped, !it.keysOnly)
	value.Index = i - it.base + it.vIndex
	it.i = memberAfter(s, end, it.closing)
	return it, it.key, value, true
}

// memberAfter returns where the member after the value ending at end starts, in a container of s that
// closes at closing: past the comma, or the closing bracket after the last.
func memberAfter(s string, end, closing int) int {
	i := skipSpace(s, end)
	if i < closing { // a comma
		i = skipSpace(s, i+1)
	}
	return i
}

// valueEnd returns the end of the value that starts at offset i of the document, whether it is a string
// that holds an escape, and the first recorded container (or long string) after it, c being the first at
// or after i.
func (x *Index) valueEnd(i, c int) (end int, escaped bool, next int) {
	s := x.doc
	if c < len(x.containers) && x.containers[c].start == i { // a large container or a long string
		return x.containers[c].end, x.containers[c].escaped, x.containers[c].next
	}
	switch s[i] {
	case '{', '[':
		return ContainerEnd(s, i), false, c
	case '"':
		end, escaped = StringEnd(s, i)
		return end, escaped, c
	}
	return ScalarEnd(s, i), false, c
}

// valueOf is the Result of the value raw (Index not set), escaped saying whether a string holds an
// escape. read false leaves a string's Str empty and a number's Num 0 (keysOnly).
func valueOf(raw string, escaped, read bool) gjson.Result {
	switch raw[0] {
	case '{', '[':
		return gjson.Result{Type: gjson.JSON, Raw: raw}
	case '"':
		if read {
			return gjson.Result{Type: gjson.String, Raw: raw, Str: StringValue(raw, escaped)}
		}
		return gjson.Result{Type: gjson.String, Raw: raw}
	}
	if read {
		return gjson.Parse(raw)
	}
	return literal(raw)
}

// member finds key in obj, comparing keys after unescaping (`user\u002einfo` is `user.info`). It reports
// whether the key occurs more than once: such a document is refused, since readers disagree on which
// occurrence counts (encoding/json takes the last, gjson the first).
func (x *Index) member(obj gjson.Result, key string) (keyResult, value gjson.Result, duplicate bool) {
	keyResult, value, duplicate = x.memberRaw(obj, key)
	return keyResult, WithStr(value), duplicate
}

// memberRaw is member leaving a string value's Str empty and a number's Num 0 when the index reads the
// object (gjson fills them in otherwise).
func (x *Index) memberRaw(obj gjson.Result, key string) (keyResult, value gjson.Result, duplicate bool) {
	it, ok := x.Members(obj)
	switch {
	case !ok:
		return memberOf(obj, key)
	case !it.object:
		return elementKeyed(it, key)
	}
	// Next's loop, without a Result for the keys that differ: every step of every path runs it. The other
	// cases are out of line (docs/runtime.md "Functions kept out of line").
	s, i, c := x.doc, it.i, it.c
	for i < it.closing {
		keyEnd, escaped := StringEnd(s, i)
		text := StringValue(s[i:keyEnd], escaped) // a view of the document unless escaped
		v := skipSpace(s, skipSpace(s, keyEnd)+1) // past the colon
		end, valueEscaped, next := x.valueEnd(v, c)
		c = next
		if text == key {
			if value.Exists() {
				return keyResult, value, true
			}
			keyResult = gjson.Result{Type: gjson.String, Raw: s[i:keyEnd], Str: text, Index: i - it.base + it.vIndex}
			value = valueOf(s[v:end], valueEscaped, false)
			value.Index = v - it.base + it.vIndex
		}
		i = memberAfter(s, end, it.closing)
	}
	return keyResult, value, false
}

// elementKeyed is memberRaw for an array, whose elements' keys are their positions, with an empty Str:
// only the key "" matches them, every one, as gjson's iteration reads them.
//
//go:noinline
func elementKeyed(it MemberIter, key string) (keyResult, value gjson.Result, duplicate bool) {
	it.keysOnly = true
	var k, v gjson.Result
	var more bool
	for it, k, v, more = it.Next(); more; it, k, v, more = it.Next() {
		if k.Str == key {
			if value.Exists() {
				return keyResult, value, true
			}
			keyResult, value = k, v
		}
	}
	return keyResult, value, false
}

// ChildRaw is child for a caller that needs where the value is, not its unescaped text.
func (x *Index) ChildRaw(obj gjson.Result, key string) (gjson.Result, bool) {
	_, v, dup := x.memberRaw(obj, key)
	return v, dup
}

// WithStr fills in what keysOnly leaves out of a value: a string's unescaped text, a number's Num.
func WithStr(v gjson.Result) gjson.Result {
	switch v.Type {
	case gjson.String:
		v.Str = StringValue(v.Raw, strings.IndexByte(v.Raw, '\\') >= 0)
	case gjson.Number:
		v.Num = gjson.Parse(v.Raw).Num
	}
	return v
}

// literal is the value of the number, true, false or null raw (valid JSON, as the index has checked) as
// gjson.Parse gives it, but a number's Num (WithStr reads it).
func literal(raw string) gjson.Result {
	switch raw[0] {
	case 't':
		return gjson.Result{Type: gjson.True, Raw: raw}
	case 'f':
		return gjson.Result{Type: gjson.False, Raw: raw}
	case 'n':
		return gjson.Result{Type: gjson.Null, Raw: raw}
	}
	return gjson.Result{Type: gjson.Number, Raw: raw}
}

// memberOf is member for an object gjson reads.
//
//go:noinline
func memberOf(obj gjson.Result, key string) (keyResult, value gjson.Result, duplicate bool) {
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

// Child returns obj[key] and whether the key occurs more than once.
func (x *Index) Child(obj gjson.Result, key string) (gjson.Result, bool) {
	_, v, dup := x.member(obj, key)
	return v, dup
}

// HasMembers reports whether the object obj has a member. The first member's value is not unescaped: it
// may be kubectl's last-applied-configuration, the whole object again as a string, and its text is not
// needed here.
func (x *Index) HasMembers(obj gjson.Result) bool {
	if it, ok := x.Members(obj); ok {
		it.keysOnly = true
		_, _, _, more := it.Next()
		return more
	}
	has := false
	obj.ForEach(func(_, _ gjson.Result) bool {
		has = true
		return false
	})
	return has
}
