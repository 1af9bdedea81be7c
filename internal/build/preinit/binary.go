package preinit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The WebAssembly binary format, as far as pre-initialisation needs it: the sections as they are, and
// a reader and writer for the few (memory, global, export, code, data) that it rewrites.
// https://webassembly.github.io/spec/core/binary/modules.html

const (
	secCustom    = 0
	secImport    = 2
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secCode      = 10
	secData      = 11
	secDataCount = 12

	kindFunc   = 0
	kindMemory = 2
	kindGlobal = 3

	opEnd      = 0x0b
	opI32Const = 0x41
	opI64Const = 0x42
	opF32Const = 0x43
	opF64Const = 0x44

	typeI32 = 0x7f
	typeI64 = 0x7e
	typeF32 = 0x7d
	typeF64 = 0x7c
)

var magic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

type section struct {
	id   byte
	body []byte
}

type module struct {
	sections []section
}

func parseModule(wasm []byte) (*module, error) {
	if !bytes.HasPrefix(wasm, magic) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	r := &reader{b: wasm, off: len(magic)}
	m := &module{}
	for r.off < len(r.b) {
		id := r.byte()
		body := r.bytes()
		if r.err != nil {
			return nil, fmt.Errorf("section %d: %w", id, r.err)
		}
		m.sections = append(m.sections, section{id: id, body: body})
	}
	return m, nil
}

func (m *module) find(id byte) *section {
	for i := range m.sections {
		if m.sections[i].id == id {
			return &m.sections[i]
		}
	}
	return nil
}

// set replaces the body of section id, or inserts the section before the first one of a greater id
// (custom sections aside), which is where the format wants it.
func (m *module) set(id byte, body []byte) {
	if s := m.find(id); s != nil {
		s.body = body
		return
	}
	at := len(m.sections)
	for i, s := range m.sections {
		if s.id != secCustom && order(s.id) > order(id) {
			at = i
			break
		}
	}
	m.sections = append(m.sections[:at], append([]section{{id: id, body: body}}, m.sections[at:]...)...)
}

// order is a section's place in a module: the data count section comes before the code section.
func order(id byte) int {
	if id == secDataCount {
		return int(secCode) - 1
	}
	return int(id) * 2
}

func (m *module) encode() []byte {
	out := append([]byte(nil), magic...)
	for _, s := range m.sections {
		out = append(out, s.id)
		out = appendLen(out, len(s.body))
		out = append(out, s.body...)
	}
	return out
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.failf("unexpected end")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) u32() uint32 {
	v, _, ok := r.leb32()
	if ok && v > math.MaxUint32 {
		r.failf("u32 out of range")
	}
	return uint32(v)
}

// s32 reads a signed LEB128 number of 32 bits (an i32.const's operand).
func (r *reader) s32() int32 {
	u, bits, ok := r.leb32()
	v := int64(u) //nolint:gosec // at most 35 bits
	if ok && v&(1<<(bits-1)) != 0 {
		v |= -1 << bits // the sign bit of the last group, extended
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.failf("i32 out of range")
	}
	return int32(v)
}

// leb32 reads the groups of a LEB128 number of at most 32 bits (five groups): their bits, how many, and
// whether the number ended within five groups (r fails otherwise).
func (r *reader) leb32() (v uint64, bits int, ok bool) {
	for bits < 35 {
		c := r.byte()
		v |= uint64(c&0x7f) << bits
		bits += 7
		if c < 0x80 {
			return v, bits, true
		}
	}
	r.failf("LEB128 number too long")
	return 0, bits, false
}

// skipSigned skips a signed LEB128 number of up to 64 bits.
func (r *reader) skipSigned() {
	for range 10 {
		if r.byte() < 0x80 {
			return
		}
	}
	r.failf("integer too long")
}

func (r *reader) n(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.failf("unexpected end")
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *reader) bytes() []byte { return r.n(int(r.u32())) }

// constExpr reads a constant expression (a global's or a segment's initialiser) up to its end and
// returns its bytes, end included.
func (r *reader) constExpr() []byte {
	start := r.off
	for r.err == nil {
		switch op := r.byte(); op {
		case opEnd:
			return r.b[start:r.off]
		case opI32Const, opI64Const:
			r.skipSigned()
		case opF32Const:
			r.n(4)
		case opF64Const:
			r.n(8)
		case 0x23, 0xd2: // global.get, ref.func
			r.u32()
		case 0xd0: // ref.null
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constants: i32/i64 add, sub, mul
		default:
			r.failf("opcode 0x%02x in a constant expression", op)
		}
	}
	return nil
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, name string) []byte {
	return append(appendLen(b, len(name)), name...)
}

// appendLen appends a length or a count: every one in a module is far below 4 GiB, since the module
// itself is read into memory, so a larger one is a bug here.
func appendLen(b []byte, n int) []byte {
	if n < 0 || n > math.MaxUint32 {
		panic(fmt.Sprintf("preinit: length %d does not fit a WebAssembly u32", n))
	}
	return appendU32(b, uint32(n))
}

// constant encodes a global's value, as the instance holds it, as its initialiser. wazero hands every
// value over as the 64 bits of a uint64: an i32 or f32 in the low 32, which the conversions keep.
//
//nolint:gosec // the conversions reinterpret bits on purpose (see above)
func constant(valType byte, v uint64) ([]byte, error) {
	switch valType {
	case typeI32:
		return append(appendS64([]byte{opI32Const}, int64(int32(uint32(v)))), opEnd), nil
	case typeI64:
		return append(appendS64([]byte{opI64Const}, int64(v)), opEnd), nil
	case typeF32:
		return append(binary.LittleEndian.AppendUint32([]byte{opF32Const}, uint32(v)), opEnd), nil
	case typeF64:
		return append(binary.LittleEndian.AppendUint64([]byte{opF64Const}, v), opEnd), nil
	}
	return nil, fmt.Errorf("a mutable global of type 0x%02x cannot be snapshotted", valType)
}
