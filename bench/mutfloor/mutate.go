package main

import (
	"math/bits"
	"unsafe"
)

// annotation is the member the mutating floor adds to every object: the policy's annotation for a
// requester alice in one group (pod-create-alice.json's alice is in two: the policy's is 11 bytes longer).
const annotation = `"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"system:authenticated\"]}"`

// What goes into metadata.annotations, or into metadata when it has no annotations; each is cut before its
// comma when it goes into an empty object.
const (
	intoAnnotations = annotation + ","
	intoMetadata    = `"annotations":{` + annotation + `},`
)

const (
	accepted   = `{"accepted":true}`
	answerHead = `{"accepted":true,"mutated_object":`
)

// mutate answers a validate payload with request.object, annotation inserted as the first member of its
// metadata.annotations (of a new annotations object, the first member of metadata, when there is none),
// and with a plain acceptance when the payload has no such object. It reads nothing else and decides
// nothing: what remains is what every mutating policy pays for finding the object and answering it whole.
// The scan is linear and string-aware but no JSON parser: the host sends valid JSON, and member names
// are compared as written (an escaped name is not recognised).
func mutate(payload []byte) []byte {
	object := member(payload, member(payload, skipSpace(payload, 0), "request"), "object")
	metadata := member(payload, object, "metadata")
	if metadata < 0 || payload[metadata] != '{' {
		return []byte(accepted)
	}
	end := valueEnd(payload, object)
	at, insert := metadata+1, intoMetadata
	if annotations := member(payload, metadata, "annotations"); annotations >= 0 {
		if payload[annotations] != '{' {
			return []byte(accepted) // null: nowhere to add a member
		}
		at, insert = annotations+1, intoAnnotations
	}
	if end < 0 || at >= end {
		return []byte(accepted) // the text ends inside the object
	}
	if next := skipSpace(payload, at); next < len(payload) && payload[next] == '}' {
		insert = insert[:len(insert)-1] // an empty object: no comma
	}
	return answer(payload, object, at, end, insert)
}

// answer writes {"accepted":true,"mutated_object":<payload[object:end] with insert at at>}. As
// policy.ValidateOver does, it writes over the payload, up to its capacity, when the answer fits there
// (package wapcguest allows it: the request buffer is not read again), and into a buffer of its own
// otherwise.
func answer(payload []byte, object, at, end int, insert string) []byte {
	n := len(answerHead) + end - object + len(insert) + 1
	if n > cap(payload) {
		out := append(make([]byte, 0, n), answerHead...)
		out = append(out, payload[object:at]...)
		out = append(out, insert...)
		out = append(out, payload[at:end]...)
		return append(out, '}')
	}
	buf := payload[:max(n, len(payload))]
	head, tail := buf[object:at], buf[at:end]
	headTo, tailTo := len(answerHead), len(answerHead)+len(head)+len(insert)
	// copy moves each part as memmove does. When the head moves left, it goes first: it ends before the
	// tail's text. Otherwise both move right, and the tail goes first: it starts after the head's text.
	if headTo <= object {
		copy(buf[headTo:], head)
		copy(buf[tailTo:], tail)
	} else {
		copy(buf[tailTo:], tail)
		copy(buf[headTo:], head)
	}
	copy(buf[headTo+len(head):], insert)
	copy(buf, answerHead)
	buf[n-1] = '}'
	return buf[:n]
}

// member returns where the value of the member called name starts in the JSON object at text[i], or -1
// when it has none (or text[i] is not an object, or i is -1).
func member(text []byte, i int, name string) int {
	if i < 0 || i >= len(text) || text[i] != '{' {
		return -1
	}
	for i = skipSpace(text, i+1); i < len(text) && text[i] == '"'; {
		keyEnd := stringEnd(text, i)
		if keyEnd < 0 {
			return -1
		}
		key := text[i+1 : keyEnd-1]
		i = skipSpace(text, keyEnd)
		if i >= len(text) || text[i] != ':' {
			return -1
		}
		if i = skipSpace(text, i+1); i >= len(text) {
			return -1
		}
		if equal(key, name) {
			return i
		}
		if i = valueEnd(text, i); i < 0 {
			return -1
		}
		if i = skipSpace(text, i); i < len(text) && text[i] == ',' {
			i = skipSpace(text, i+1)
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value that starts at text[i], or -1 when the text ends
// first. Objects and arrays end at the bracket that closes the first; strings are skipped whole, so that
// the brackets in them do not count.
func valueEnd(text []byte, i int) int {
	depth := 0
	for i < len(text) {
		switch text[i] {
		case '"':
			if i = stringEnd(text, i); i < 0 || depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a number, true, false or null
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return -1
}

// stringEnd returns the index just past the JSON string that starts at text[i] (a quote), or -1. Most of
// a large object is string text, read here eight bytes at a time until a word holds a quote or a
// backslash, as the policy's scanner reads it: byte by byte, the floor's scan of a 1 MB Pod took longer
// than the policy's whole evaluation.
func stringEnd(text []byte, i int) int {
	for i++; i+8 <= len(text); i += 8 {
		w := load64(text, i)
		if m := hasByte(w, '"') | hasByte(w, '\\'); m != 0 {
			i += bits.TrailingZeros64(m) / 8 // the first byte flagged (little-endian: the first in the text) is a true one
			break
		}
	}
	for ; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// load64 reads text[i:i+8] as one word; the caller has checked that i+8 <= len(text). An unsafe load,
// with no bounds check, so that TinyGo inlines it (package rawjson's load64 says why).
func load64(text []byte, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(text)), i))
}

// hasByte is non-zero when a byte of w is b, and its lowest flag marks the first such byte; a flag above
// it may be false (Hacker's Delight 6-1).
func hasByte(w uint64, b byte) uint64 {
	const lowBits, highBits = 0x0101010101010101, 0x8080808080808080
	w ^= lowBits * uint64(b)
	return (w - lowBits) &^ w & highBits
}

func skipSpace(text []byte, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
		i++
	}
	return i
}

// equal compares without converting: TinyGo may allocate for string(b) == s.
func equal(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if b[i] != s[i] {
			return false
		}
	}
	return true
}
