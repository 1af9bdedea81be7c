package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `1.`, `1.5`, `-1.5e+10`,
	`1e`, `1E-`, `.5`, `-`, `"a"`, `"\u00e9"`, `"\u00g9"`, `"\x"`, "\"\x01\"", "\"\xff\"", `"abc`, `{"a":1}`,
	`{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `[1,2,]`, `[1 2]`, `[[[]]]`, `[[[]]`, `{"a":{"b":[1,{"c":null}]}}`,
	`{} {}`, `{}x`, " \t\r\n{}\n", `["\"\\\/\b\f\n\r\t"]`, `{"":""}`, `[,1]`, `{,}`, `[1,,2]`,
}

func TestValidJSON_AgreesWithEncodingJSON(t *testing.T) {
	for _, s := range validJSONCases {
		if got, want := validJSON(s), json.Valid([]byte(s)); got != want {
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
				if got, want := validJSON(s), json.Valid([]byte(s)); got != want {
					t.Errorf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
				}
			}
		}
	}
}

func TestValidJSON_DeepNestingIsNotRecursion(t *testing.T) {
	for _, depth := range []int{1_000, 100_000, 1_000_000} {
		deep := strings.Repeat(`{"a":[`, depth) + strings.Repeat(`]}`, depth)
		if !validJSON(deep) {
			t.Fatalf("depth %d: valid JSON refused", depth)
		}
		if validJSON(deep[:len(deep)-1]) {
			t.Fatalf("depth %d: unbalanced JSON accepted", depth)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validJSON(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}
