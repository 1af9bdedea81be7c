package walk

import (
	"strconv"
	"strings"
)

// One path mechanism for every kind: Kind.Path and a declared kind's paths are parsed into a
// Path and walked by the same code. Syntax: segments separated by "."; a name, optionally
// followed by [*] (array elements) or {*} (member values); one ">" where creation may begin; the last
// segment names the map (docs/rules.md "Custom-resource workloads (rules 11-13)").

// MaxSegments bounds the walk's recursion (TinyGo's stack is small); real paths have fewer than ten.
const MaxSegments = 32

// The wildcards a segment may carry after its name, one or more ("steps[*][*]": an array of arrays).
const (
	everyElement = "[*]"
	everyMember  = "{*}"
	wildcardLen  = 3
)

// Segment is a member name and its wildcards as written ("", "[*]", "{*}[*]", ...).
type Segment struct {
	Name string
	Wild string
}

// Path is a parsed path; segments from Create on are created when missing or null.
type Path struct {
	text     string
	Segments []Segment
	Create   int // len(Segments) for a guard path: nothing is created
	// Required: a missing segment before Create is bad input (a built-in workload's pod template).
	Required bool
	Plain    string // without wildcards, the concrete path of the one map it names
	// wildcards is how many [*] and {*} the path has: the values a target's place records.
	wildcards int
}

// Parse parses an annotation or guard path; only a built-in path may start with ">" (rootMarker).
func Parse(text string, guard, rootMarker bool) (Path, string) {
	p := Path{text: text, Create: -1}
	if text == "" {
		return p, "the path is empty: name the annotations map, such as spec.driver>annotations"
	}
	p.Segments = make([]Segment, 0, 1+strings.Count(text, ".")+strings.Count(text, ">"))
	rest := text
	if rootMarker && strings.HasPrefix(rest, ">") {
		p.Create, rest = 0, rest[1:]
	}
	for rest != "" {
		at := len(p.Segments) + 1
		seg, after, problem := parseSegment(rest, at)
		if problem != "" {
			return p, problem
		}
		p.Segments, rest = append(p.Segments, seg), after
		if len(p.Segments) > MaxSegments {
			return p, "the path has more than " + strconv.Itoa(MaxSegments) + " segments"
		}
		if rest == "" {
			break
		}
		switch rest[0] {
		case '.':
		case '>':
			switch {
			case guard:
				return p, `a guard path names existing maps only: it may not contain ">"`
			case p.Create >= 0:
				return p, `the path has more than one ">"`
			}
			p.Create = len(p.Segments)
		default:
			return p, "unexpected " + strconv.QuoteRune(rune(rest[0])) + " after segment " + strconv.Itoa(at) +
				": segments are separated by '.' (or one '>'), and a wildcard is [*] or {*}"
		}
		rest = rest[1:]
		if rest == "" {
			return p, "the path ends with a separator: the last segment names the map"
		}
	}
	return p.finish(guard)
}

// parsesegment reads segment number at from the start of rest.
func parseSegment(rest string, at int) (Segment, string, string) {
	n := 0
	for n < len(rest) && isNameByte(rest[n]) {
		n++
	}
	if n == 0 {
		if rest[0] == '.' || rest[0] == '>' {
			return Segment{}, rest, "segment " + strconv.Itoa(at) + " is empty"
		}
		return Segment{}, rest, "segment " + strconv.Itoa(at) + " starts with " + strconv.QuoteRune(rune(rest[0])) +
			": a segment is a member name of letters, digits, '_' and '-', optionally followed by [*] or {*}"
	}
	seg := Segment{Name: rest[:n]}
	rest = rest[n:]
	w := 0
	for strings.HasPrefix(rest[w:], everyElement) || strings.HasPrefix(rest[w:], everyMember) {
		w += wildcardLen
	}
	seg.Wild, rest = rest[:w], rest[w:]
	return seg, rest, ""
}

// finish checks the parsed segments as a whole and fills in create and plain.
func (p Path) finish(guard bool) (Path, string) {
	last := len(p.Segments) - 1
	switch {
	case p.Segments[last].Wild != "":
		return p, "the last segment must be a plain name (the map), not a wildcard"
	case guard:
		p.Create = len(p.Segments)
	case p.Create < 0:
		p.Create = last
	}
	for i := p.Create; i < len(p.Segments); i++ {
		if p.Segments[i].Wild != "" {
			return p, `a wildcard may not follow ">": creation makes plain objects only`
		}
	}
	for _, s := range p.Segments {
		p.wildcards += len(s.Wild) / wildcardLen
	}
	if !p.hasWildcard() {
		p.Plain = strings.Replace(strings.TrimPrefix(p.text, ">"), ">", ".", 1)
	}
	return p, ""
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '_' || c == '-'
}

func (p *Path) hasWildcard() bool {
	for _, s := range p.Segments {
		if s.Wild != "" {
			return true
		}
	}
	return false
}

// SegmentsKey is the first n segments of p as one string, whatever the marker.
func (p *Path) SegmentsKey(n int) string {
	var b strings.Builder
	for _, s := range p.Segments[:n] {
		b.WriteString(s.Name)
		b.WriteString(s.Wild)
		b.WriteByte('.')
	}
	return b.String()
}

// IsPathName reports whether name could be a path segment's name.
func IsPathName(name string) bool {
	plain := name != ""
	for i := 0; i < len(name) && plain; i++ {
		plain = isNameByte(name[i])
	}
	return plain
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
