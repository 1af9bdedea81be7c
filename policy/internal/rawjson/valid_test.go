package rawjson

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

var validJSONCases = []string{
	``, ` `, `0,[]`, `1,2`, `"a",`, `{},{}`, `{}`, `[]`, `{ }`, `[ ]`, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `1.`, `1.5`, `-1.5e+10`,
	`1e`, `1E-`, `.5`, `-`, `"a"`, `"\u00e9"`, `"\u00g9"`, `"\x"`, "\"\x01\"", "\"\xff\"", `"abc`, `{"a":1}`,
	`{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `[1,2,]`, `[1 2]`, `[[[]]]`, `[[[]]`, `{"a":{"b":[1,{"c":null}]}}`,
	`{} {}`, `{}x`, " \t\r\n{}\n", `["\"\\\/\b\f\n\r\t"]`, `{"":""}`, `[,1]`, `{,}`, `[1,,2]`,
}

func TestValidJSON_AgreesWithEncodingJSON(t *testing.T) {
	for _, s := range validJSONCases {
		if got, want := Valid(s), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

// Strings are read eight bytes at a time: a quote, a backslash or a control character is found at every
// offset of a long string, and a string that ends within the last eight bytes is still read to its end.
func TestValidJSON_LongStringsAtEveryOffset(t *testing.T) {
	for _, special := range []string{`\"`, `\\`, `\u0041`, `\x`, "\x00", "\x1f", "\n", "é", "\x7f", `"`} {
		for at := range 20 {
			for _, s := range []string{
				`"` + strings.Repeat("a", at) + special + strings.Repeat("b", 19-at) + `"`,
				`["` + strings.Repeat("a", at) + special + `"]`,
				`"` + strings.Repeat("a", at) + special,
			} {
				if got, want := Valid(s), json.Valid([]byte(s)); got != want {
					t.Errorf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
				}
			}
		}
	}
}

func TestValidJSON_DeepNestingIsNotRecursion(t *testing.T) {
	for _, depth := range []int{1_000, 100_000, 1_000_000} {
		deep := strings.Repeat(`{"a":[`, depth) + strings.Repeat(`]}`, depth)
		if !Valid(deep) {
			t.Fatalf("depth %d: valid JSON refused", depth)
		}
		if Valid(deep[:len(deep)-1]) {
			t.Fatalf("depth %d: unbalanced JSON accepted", depth)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

// firstFlagged finds the first byte a word test flags, wherever it is in the word and whatever follows
// it (a flag above the first may be false): the scans that use it are strings.IndexByte and friends.
func TestFirstFlagged_IsTheFirstByte(t *testing.T) {
	for n := range 20 {
		for at := range n + 1 {
			s := []byte(strings.Repeat("a", n))
			if at < n {
				s[at] = '"'
			}
			for _, tail := range []string{"", `"`, "\x00", `\`, "\x01\"\\\x1f"} {
				text := string(s) + tail
				checkQuotesEscaped(t, text)
				want := strings.IndexAny(text, "\"\\\x00\x01\x1f")
				if want < 0 {
					want = len(text)
				}
				if got := plainRun(text, 0); got != want {
					t.Fatalf("plainRun(%q) = %d, want %d", text, got, want)
				}
			}
		}
	}
}

// checkQuotesEscaped checks appendQuotesEscaped on text: the text with its quotes escaped, appended
// after what out held, and not a byte written past it in out's capacity (WriteOver has written what
// follows already).
func checkQuotesEscaped(t *testing.T, text string) {
	t.Helper()
	want := strings.ReplaceAll(text, `"`, `\"`)
	buf := []byte("abc" + strings.Repeat("#", len(want)+16))
	got := appendQuotesEscaped(buf[:3], text, strings.Count(text, `"`))
	if string(got) != "abc"+want {
		t.Fatalf("appendQuotesEscaped(%q) = %q, want %q", text, got[3:], want)
	}
	if rest := string(buf[len(got):]); rest != strings.Repeat("#", 16) {
		t.Fatalf("appendQuotesEscaped(%q) wrote past its end: %q", text, rest)
	}
}

// TestRecords_ReservedHoldsADocumentOfItsSize: Records reserved for documents of 4 KB (the evaluator's, at
// start-up) index a 4 KB document deeply nested in many containers in the room reserved.
func TestRecords_ReservedHoldsADocumentOfItsSize(t *testing.T) {
	doc := `{"a":[` + strings.Repeat(`{"b":{"c":[1]}},`, 250) + `{}],"d":` + strings.Repeat("[", 15) + strings.Repeat("]", 15) + `}`
	doc = doc[:len(doc)-1] + strings.Repeat(" ", 4<<10-len(doc)) + "}"
	var r Records
	r.Reserve(4 << 10)
	containers, open := unsafe.SliceData(r.containers), unsafe.SliceData(r.open)
	if r.Parse(doc) == nil {
		t.Fatalf("not valid: %s", doc)
	}
	if unsafe.SliceData(r.containers) != containers || unsafe.SliceData(r.open) != open {
		t.Errorf("a %d-byte document's records made in storage of their own", len(doc))
	}
}

// TestRecords_ParseIsAFreshParse: documents parsed one after another with one Records are indexed as
// each is on its own, whatever came before (larger, smaller, not valid JSON), and a document no larger
// than one parsed before reuses the storage.
func TestRecords_ParseIsAFreshParse(t *testing.T) {
	large := `{"a":[` + strings.Repeat(`{"b":"`+strings.Repeat("x", 130)+`"},`, 40) + `{}],"c":{"d":` +
		strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`
	docs := append([]string{large, `{"a":[`, `[]`}, jsonIndexCases...)
	docs = append(docs, large[:len(large)-1], large, `{"a":1}`, large)
	var r Records
	for i, doc := range docs {
		before := r.containers
		got, want := r.Parse(doc), Parse(doc)
		if (got == nil) != (want == nil) {
			t.Fatalf("document %d: parsed after the others: valid %v, on its own %v", i, got != nil, want != nil)
		}
		if want != nil && (got.doc != want.doc || got.minSize != want.minSize || !slices.Equal(got.containers, want.containers)) {
			t.Fatalf("document %d: parsed after the others, its records are %v; on its own %v", i, got.containers, want.containers)
		}
		if i > 0 && len(doc) <= len(large) && cap(before) > 0 && unsafe.SliceData(r.containers) != unsafe.SliceData(before) {
			t.Errorf("document %d: new storage for its records, where the storage kept had room", i)
		}
	}
}
