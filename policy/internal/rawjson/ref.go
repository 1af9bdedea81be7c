package rawjson

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Ref is a JSON value of a walked document, kept as a few words: its offset and length, At being -1 when
// it is absent, and its gjson type. It holds no pointer, so a million of them cost a garbage collector
// nothing to scan.
type Ref struct {
	At, N int32
	Type  uint8 // a gjson.Type
}

// Absent is the Ref of a value that is not there.
var Absent = Ref{At: -1}

// RefOf records v, a value found by walking the document from its root (its Index is its offset).
func RefOf(v gjson.Result) Ref {
	if !v.Exists() {
		return Absent
	}
	// A document reaches the module through its 4 GiB memory, and policy-server takes at most 2 MB: offsets
	// and lengths fit in 31 bits.
	return Ref{At: int32(v.Index), N: int32(len(v.Raw)), Type: uint8(v.Type)} //nolint:gosec // see above
}

// Exists reports whether the value is there.
func (s Ref) Exists() bool { return s.At >= 0 }

// Result makes the value's gjson Result again: a view of doc, with the Index the walk gave it (and, for a
// string, its unescaped text).
func (s Ref) Result(doc string) gjson.Result {
	if s.At < 0 {
		return gjson.Result{}
	}
	raw := doc[s.At : s.At+s.N]
	r := gjson.Result{Type: gjson.Type(s.Type), Raw: raw, Index: int(s.At)}
	if r.Type == gjson.String {
		r.Str = StringValue(raw, strings.IndexByte(raw, '\\') >= 0)
	}
	return r
}
