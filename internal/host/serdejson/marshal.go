package serdejson

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Marshal writes v as serde_json::to_vec writes a serde_json::Value: compact, every object's keys in
// byte order with duplicates resolved to the last, serde_json's string escapes and number formats.
func Marshal(v Value) []byte { return appendValue(nil, v) }

func appendValue(b []byte, v Value) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Bool:
		return strconv.AppendBool(b, v.Bool)
	case Number:
		s, err := formatNumber(v.Text)
		if err != nil { // a Value that Parse did not make; write it as serde_json writes NaN
			return append(b, "null"...)
		}
		return append(b, s...)
	case String:
		return AppendString(b, v.Text)
	case Array:
		b = append(b, '[')
		for i, el := range v.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, el)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, m := range v.Sorted() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, m.Key), ':')
		b = appendValue(b, m.Value)
	}
	return append(b, '}')
}

// AppendString writes s with serde_json's escapes: only the quote, the backslash and control
// characters, the latter as \b \t \n \f \r or \u00xx. `<`, `>`, `&`, U+2028 and non-ASCII text are
// written as they are (Go's encoding/json escapes several of them).
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := range len(s) {
		c := s[i]
		switch {
		case shortEscapes[c] != 0:
			b = append(b, '\\', shortEscapes[c])
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// shortEscapes are the characters serde_json writes as a backslash and one character.
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

var errRange = errors.New("number out of range")

// formatNumber turns a JSON number literal into serde_json's output for the number it parses to: an
// integer that fits a u64 or an i64 stays as written; -0 and every other number become an f64,
// written as the ryu crate writes it (1.0, 1e21, 1.5e-7, 0.001).
func formatNumber(lit string) (string, error) {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return "-0.0", nil
		}
		if _, err := strconv.ParseUint(lit, 10, 64); err == nil {
			return lit, nil
		}
		if _, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return lit, nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && math.IsInf(f, 0) {
		return "", errRange
	}
	return formatFloat(f), nil
}

// formatFloat is ryu's format64 over Go's shortest round-trip digits.
func formatFloat(f float64) string {
	sign := ""
	if math.Signbit(f) {
		sign, f = "-", -f
	}
	if f == 0 {
		return sign + "0.0"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expText, _ := strings.Cut(sci, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expText)
	length := len(digits)
	kk := exp + 1 // the decimal point sits after digit kk
	k := kk - length
	var s string
	switch {
	case k >= 0 && kk <= 16:
		s = digits + strings.Repeat("0", k) + ".0"
	case kk > 0 && kk <= 16:
		s = digits[:kk] + "." + digits[kk:]
	case kk > -5 && kk <= 0:
		s = "0." + strings.Repeat("0", -kk) + digits
	case length == 1:
		s = digits + "e" + strconv.Itoa(kk-1)
	default:
		s = digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(kk-1)
	}
	return sign + s
}
