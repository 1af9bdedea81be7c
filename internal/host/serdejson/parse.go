package serdejson

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// RecursionLimit is serde_json's: it counts down from 128 at every array or object and fails when it
// reaches zero, so 127 levels of nesting parse and 128 do not.
const RecursionLimit = 128

// SyntaxError is input serde_json would refuse, with the byte offset where it stopped.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

// Parse reads one JSON document as serde_json::from_slice does.
func Parse(data []byte) (Value, error) {
	p := parser{data: data, depth: RecursionLimit}
	p.space()
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.i < len(p.data) {
		return Value{}, p.fail("trailing characters")
	}
	return v, nil
}

type parser struct {
	data  []byte
	i     int
	depth int
}

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.i, Msg: msg} }

func (p *parser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (Value, error) {
	if p.i >= len(p.data) {
		return Value{}, p.fail("EOF while parsing a value")
	}
	switch c := p.data[p.i]; {
	case c == '{' || c == '[':
		p.depth--
		if p.depth == 0 {
			return Value{}, p.fail("recursion limit exceeded")
		}
		defer func() { p.depth++ }()
		if c == '{' {
			return p.object()
		}
		return p.array()
	case c == '"':
		s, err := p.str()
		return Value{Kind: String, Text: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return Value{Kind: Bool, Bool: true}, nil
	case p.literal("false"):
		return Value{Kind: Bool}, nil
	case p.literal("null"):
		return Value{Kind: Null}, nil
	}
	return Value{}, p.fail("expected value")
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.i >= len(word) && string(p.data[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) object() (Value, error) {
	v := Value{Kind: Object, Members: []Member{}}
	p.i++ // {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return Value{}, p.fail("key must be a string")
		}
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return Value{}, p.fail("expected `:`")
		}
		p.i++
		p.space()
		val, err := p.value()
		if err != nil {
			return Value{}, err
		}
		v.Members = append(v.Members, Member{Key: key, Value: val})
		p.space()
		if p.i >= len(p.data) {
			return Value{}, p.fail("EOF while parsing an object")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v, nil
		default:
			return Value{}, p.fail("expected `,` or `}`")
		}
	}
}

func (p *parser) array() (Value, error) {
	v := Value{Kind: Array, Elems: []Value{}}
	p.i++ // [
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		el, err := p.value()
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, el)
		p.space()
		if p.i >= len(p.data) {
			return Value{}, p.fail("EOF while parsing a list")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return Value{}, p.fail("expected `,` or `]`")
		}
	}
}

// str reads a string: control characters, invalid UTF-8 and lone surrogate escapes are errors, as in
// serde_json (Go's encoding/json would replace them with U+FFFD instead).
func (p *parser) str() (string, error) {
	p.i++ // opening quote
	var out []byte
	start := p.i
	for {
		if p.i >= len(p.data) {
			return "", p.fail("EOF while parsing a string")
		}
		c := p.data[p.i]
		switch {
		case c == '"':
			out = append(out, p.data[start:p.i]...)
			p.i++
			if !utf8.Valid(out) {
				return "", p.fail("invalid unicode code point")
			}
			return string(out), nil
		case c < 0x20:
			return "", p.fail("control character (\\u0000-\\u001F) found while parsing a string")
		case c != '\\':
			p.i++
			continue
		}
		out = append(out, p.data[start:p.i]...)
		p.i++
		if p.i >= len(p.data) {
			return "", p.fail("EOF while parsing a string")
		}
		esc := p.data[p.i]
		p.i++
		switch esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := p.unicodeEscape()
			if err != nil {
				return "", err
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", p.fail("invalid escape")
		}
		start = p.i
	}
}

// unicodeEscape reads the hex digits after \u, and a low surrogate's escape after a high one.
func (p *parser) unicodeEscape() (rune, error) {
	r1, err := p.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case r1 >= 0xDC00 && r1 <= 0xDFFF:
		return 0, p.fail("lone leading surrogate in hex escape")
	case r1 < 0xD800 || r1 > 0xDBFF:
		return r1, nil
	}
	if len(p.data)-p.i < 2 || p.data[p.i] != '\\' || p.data[p.i+1] != 'u' {
		return 0, p.fail("unexpected end of hex escape")
	}
	p.i += 2
	r2, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, p.fail("lone leading surrogate in hex escape")
	}
	return utf16.DecodeRune(r1, r2), nil
}

func (p *parser) hex4() (rune, error) {
	if len(p.data)-p.i < 4 {
		return 0, p.fail("EOF while parsing a string")
	}
	n, err := strconv.ParseUint(string(p.data[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, p.fail("invalid escape")
	}
	p.i += 4
	return rune(n), nil
}

var errNumber = errors.New("invalid number")

// number checks the JSON number grammar and keeps the literal; a number too large for an f64 is an
// error, as in serde_json.
func (p *parser) number() (Value, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.data) && p.data[p.i] == '0':
		p.i++
		if p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			return Value{}, p.fail(errNumber.Error())
		}
	case digits() == 0:
		return Value{}, p.fail(errNumber.Error())
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return Value{}, p.fail(errNumber.Error())
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return Value{}, p.fail(errNumber.Error())
		}
	}
	text := string(p.data[start:p.i])
	if _, err := formatNumber(text); err != nil {
		p.i = start
		return Value{}, p.fail(err.Error())
	}
	return Value{Kind: Number, Text: text}, nil
}
