package preinit_test

import (
	"fmt"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// The name section of the written module names only what the module has: `kwctl annotate` (walrus)
// warns "in name section: index N is out of bounds" for every name past the end, as it did for the data
// segments TinyGo wrote and the snapshot merged.
func TestSnapshot_NameSectionIndicesAreInRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm func(testing.TB) []byte
	}{
		{"policy", guesttest.Policy},
		{"startup guest", func(t testing.TB) []byte { t.Helper(); return guesttest.Guest(t, startupGuest) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.wasm(t)
			pre := snapshot(t, raw)
			counts, names, err := wasmNames(pre)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) == 0 {
				t.Fatal("the written module has no name section: TinyGo's names (the stack pointer's) are gone")
			}
			for sub, indices := range names {
				for _, index := range indices {
					if index >= counts[sub] {
						t.Errorf("name subsection %d names index %d; the module has %d", sub, index, counts[sub])
					}
				}
			}
			if _, ok := names[subData]; ok {
				t.Error("the data segments are named: they are cut from the snapshot's memory, not TinyGo's segments, so any name mislabels one")
			}
			if _, ok := names[subFunctions]; !ok {
				t.Error("the function names are gone: profiles and traps would show indices only")
			}
		})
	}
}

// The name section's subsections (the extended name section's ids) that name a module's items directly,
// and the items each names.
const (
	subFunctions = 1
	subLocals    = 2
	subTypes     = 4
	subTables    = 5
	subMemories  = 6
	subGlobals   = 7
	subElements  = 8
	subData      = 9
)

// wasmNames reads a module's item counts per name subsection and the indices each subsection names
// (for local names, the functions whose locals it names).
func wasmNames(wasm []byte) (counts map[byte]uint32, names map[byte][]uint32, err error) {
	r := &wasmReader{b: wasm, off: 8}
	counts, names = map[byte]uint32{}, map[byte][]uint32{}
	for r.off < len(r.b) && r.err == nil {
		id, body := r.byte(), r.bytes()
		s := &wasmReader{b: body}
		switch id {
		case 0:
			if string(s.bytes()) == "name" {
				readNames(s, names)
			}
		case 1, 3, 4, 5, 6, 9, 11: // type, function, table, memory, global, element, data
			sub := map[byte]byte{1: subTypes, 3: subFunctions, 4: subTables, 5: subMemories, 6: subGlobals, 9: subElements, 11: subData}[id]
			counts[sub] += s.u32()
		case 2: // imports come first in their index spaces
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				s.bytes()
				s.bytes()
				switch kind := s.byte(); kind {
				case 0:
					s.u32()
					counts[subFunctions]++
				case 1:
					s.byte()
					s.limits()
					counts[subTables]++
				case 2:
					s.limits()
					counts[subMemories]++
				case 3:
					s.byte()
					s.byte()
					counts[subGlobals]++
				default:
					return nil, nil, fmt.Errorf("import of kind %d", kind)
				}
			}
		}
		if s.err != nil {
			return nil, nil, fmt.Errorf("section %d: %w", id, s.err)
		}
	}
	counts[subLocals] = counts[subFunctions]
	return counts, names, r.err
}

func readNames(s *wasmReader, names map[byte][]uint32) {
	for s.off < len(s.b) && s.err == nil {
		id, body := s.byte(), s.bytes()
		sub := &wasmReader{b: body}
		if id == 0 || id > subData {
			continue // the module's name, labels, fields, tags
		}
		names[id] = []uint32{}
		for n := sub.u32(); n > 0 && sub.err == nil; n-- {
			names[id] = append(names[id], sub.u32())
			if id == subLocals {
				for m := sub.u32(); m > 0 && sub.err == nil; m-- {
					sub.u32()
					sub.bytes()
				}
				continue
			}
			sub.bytes()
		}
		if sub.err != nil {
			s.err = fmt.Errorf("name subsection %d: %w", id, sub.err)
		}
	}
}

type wasmReader struct {
	b   []byte
	off int
	err error
}

func (r *wasmReader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.err = fmt.Errorf("unexpected end at byte %d", r.off)
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *wasmReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.err = fmt.Errorf("LEB128 number too long at byte %d", r.off)
	return 0
}

func (r *wasmReader) bytes() []byte {
	n := int(r.u32())
	if r.err != nil || n > len(r.b)-r.off {
		r.err = fmt.Errorf("unexpected end at byte %d", r.off)
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *wasmReader) limits() {
	if r.byte()&1 != 0 {
		r.u32()
	}
	r.u32()
}
