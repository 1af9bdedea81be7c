// Package serdejson reads and writes JSON the way policy-server does (it is written in Rust and uses
// serde_json), so that the project's host sees and sends exactly what policy-server would: the same
// refusals (invalid UTF-8, lone surrogate escapes, nesting deeper than serde_json's recursion limit,
// numbers out of range), duplicate object keys resolved as a serde_json map resolves them (the last one
// wins), and the same output (every object's keys sorted, compact, serde_json's escapes and number
// formatting). It is test tooling for the host, not a general JSON library.
package serdejson

import (
	"slices"
	"strings"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON types.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// Value is a parsed JSON value. Objects keep their members in document order, duplicates included, so
// that a caller can apply serde's rules for typed structs (a duplicate field is an error) or for maps
// (the last one wins).
type Value struct {
	Kind    Kind
	Bool    bool
	Text    string // a string's unescaped text, or a number's literal as written
	Elems   []Value
	Members []Member
}

// Member is one key and value of an object.
type Member struct {
	Key   string
	Value Value
}

// Get returns the last member named key, as a serde_json map would hold it.
func (v Value) Get(key string) (Value, bool) {
	for i := len(v.Members) - 1; i >= 0; i-- {
		if v.Members[i].Key == key {
			return v.Members[i].Value, true
		}
	}
	return Value{}, false
}

// Duplicate returns the first key among keys that occurs more than once in the object, or "".
func (v Value) Duplicate(keys ...string) string {
	for _, key := range keys {
		n := 0
		for _, m := range v.Members {
			if m.Key == key {
				n++
			}
		}
		if n > 1 {
			return key
		}
	}
	return ""
}

// Sorted returns the object's members as a serde_json map holds them: one per key (the last), in
// byte order of the keys, which is how Rust orders strings.
func (v Value) Sorted() []Member {
	sorted := slices.Clone(v.Members)
	slices.SortStableFunc(sorted, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	out := sorted[:0]
	for i, m := range sorted {
		if i+1 < len(sorted) && sorted[i+1].Key == m.Key {
			continue // a later duplicate replaces it (stable sort keeps document order within a key)
		}
		out = append(out, m)
	}
	return out
}

// Obj builds an object from members, in the order given.
func Obj(members ...Member) Value { return Value{Kind: Object, Members: members} }
