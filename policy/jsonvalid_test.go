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
