package serdejson

import (
	"strings"
	"testing"
)

func TestParse_RefusesWhatSerdeJSONRefuses(t *testing.T) {
	for name, input := range map[string]string{
		"invalid UTF-8":                   "\"a\xffb\"",
		"lone high surrogate":             `"\ud800"`,
		"high surrogate then a letter":    `"\ud800\u0041"`,
		"lone low surrogate":              `"\udc00"`,
		"control character":               "\"a\tb\"",
		"trailing characters":             `{} {}`,
		"number out of range":             `1e400`,
		"leading zero":                    `012`,
		"128 levels of nesting":           strings.Repeat("[", 128) + strings.Repeat("]", 128),
		"unquoted key":                    `{a:1}`,
		"trailing comma":                  `[1,]`,
		"single quotes":                   `'a'`,
		"invalid escape":                  `"\x"`,
		"empty input":                     ``,
		"NaN":                             `NaN`,
		"a dot without digits":            `1.`,
		"an exponent without digits":      `1e`,
		"truncated surrogate pair escape": `"\ud800\udc`,
	} {
		if _, err := Parse([]byte(input)); err == nil {
			t.Errorf("%s: %q parsed, serde_json refuses it", name, input)
		}
	}
}

func TestParse_AcceptsDeepNestingUpToTheLimit(t *testing.T) {
	input := strings.Repeat("[", RecursionLimit-1) + strings.Repeat("]", RecursionLimit-1)
	if _, err := Parse([]byte(input)); err != nil {
		t.Fatalf("%d levels: %v", RecursionLimit-1, err)
	}
}

func TestMarshal_IsWhatSerdeJSONWrites(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":{"d":true,"c":null}}`, `{"a":{"c":null,"d":true},"b":1}`},
		{`{"a":1,"a":2}`, `{"a":2}`},                            // a map keeps the last duplicate
		{`{"b":1,"a":2,"b":3,"a":4}`, `{"a":4,"b":3}`},          // ... per key
		{` [ 1 , "x" ] `, `[1,"x"]`},                            // compact
		{`{"Z":1,"a":2,"_":3}`, `{"Z":1,"_":3,"a":2}`},          // byte order
		{`"<>&\u2028é\u00e9"`, "\"<>&\u2028éé\""},               // no HTML escaping, UTF-8 as is
		{`"\u0001\b\f\n\r\t\"\\\/"`, `"\u0001\b\f\n\r\t\"\\/"`}, // serde's escapes
		{`"\u007f"`, "\"\x7f\""},
		{`"\ud83d\ude00"`, `"😀"`},
		{`0`, `0`},
		{`-0`, `-0.0`},
		{`-12`, `-12`},
		{`18446744073709551615`, `18446744073709551615`},
		{`18446744073709551616`, `1.8446744073709552e19`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`-9223372036854775809`, `-9.223372036854776e18`},
		{`1.0`, `1.0`},
		{`1e3`, `1000.0`},
		{`1.5`, `1.5`},
		{`1e15`, `1000000000000000.0`},
		{`1e16`, `1e16`},
		{`1.23e16`, `1.23e16`},
		{`1e21`, `1e21`},
		{`0.001`, `0.001`},
		{`0.00001`, `0.00001`},
		{`0.000001`, `1e-6`},
		{`1.5e-7`, `1.5e-7`},
		{`-2.5E+2`, `-250.0`},
		{`1e-400`, `0.0`},
	} {
		v, err := Parse([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := string(Marshal(v)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestValue_DuplicateAndGet(t *testing.T) {
	v, err := Parse([]byte(`{"a":1,"b":2,"a":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Duplicate("b", "a"); got != "a" {
		t.Errorf("Duplicate = %q, want a", got)
	}
	if got, _ := v.Get("a"); got.Text != "3" {
		t.Errorf("Get(a) = %s, want the last, 3", got.Text)
	}
}
