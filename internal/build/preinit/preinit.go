// Package preinit pre-initialises a WASI command module: it runs the module's `_start` once, at build
// time, and writes a module whose memory and globals start where that run ended and whose `_start`
// does nothing.
//
// policy-server creates a fresh instance for every admission request and calls `_start` in each, so a
// TinyGo policy pays its runtime's start-up and every package initialiser (regexp's tables, onelog's
// pools, the waPC registration in main) per request. Those results never depend on the request: after
// pre-initialisation they are data in the module, copied in at instantiation.
//
// The run sees what policy-server's WASI offers a guest (no arguments, no environment, nothing on
// stdin) with deterministic clocks and randomness, so that the same input always gives the same module.
// A module that the snapshot cannot reproduce is refused rather than rewritten: one that writes to
// stdout or stderr, or calls a non-WASI import, during start-up, or that has a start section, imports
// its memory or a global, has passive data segments or more than one memory.
package preinit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/build/wasi"
)

// Report describes a pre-initialised module.
type Report struct {
	MemoryPages uint32 // the memory's initial size, in 64 KiB pages
	Segments    int    // active data segments written
	DataBytes   int    // bytes those segments hold
	Globals     int    // mutable globals whose initial value was set from the run
	StackBytes  int    // bytes of stack that _start left in use and the snapshot gives back (emptyStack)
}

// gap is the shortest run of zero bytes that ends a data segment: a segment's header costs about 10
// bytes, so shorter runs are cheaper to keep inside a segment.
const gap = 16

// exportPrefix names the exports added to read the globals; never present in the output.
const exportPrefix = "preinit.global."

type global struct {
	valType byte
	mutable bool
	init    []byte // the initialiser expression, end included
}

// Snapshot pre-initialises wasm (see the package documentation).
func Snapshot(ctx context.Context, wasm []byte) ([]byte, Report, error) {
	m, err := parseModule(wasm)
	if err != nil {
		return nil, Report{}, err
	}
	if m.find(secStart) != nil {
		return nil, Report{}, errors.New("the module has a start section, which would run again in every instance")
	}
	importedFuncs, err := checkImports(m)
	if err != nil {
		return nil, Report{}, err
	}
	globals, err := readGlobals(m)
	if err != nil {
		return nil, Report{}, err
	}
	exports, err := readExports(m)
	if err != nil {
		return nil, Report{}, err
	}
	start, ok := exports["_start"]
	if !ok || start.kind != kindFunc {
		return nil, Report{}, errors.New("the module exports no _start function: not a WASI command")
	}
	if err := checkMemoryAndData(m); err != nil {
		return nil, Report{}, err
	}

	memory, values, err := run(ctx, m, globals)
	if err != nil {
		return nil, Report{}, err
	}

	rep := Report{MemoryPages: pages32(len(memory) / 65536)}
	rep.StackBytes = emptyStack(m, globals, values, memory)
	if err := setMemoryPages(m, rep.MemoryPages); err != nil {
		return nil, Report{}, err
	}
	if len(globals) > 0 {
		body := appendLen(nil, len(globals))
		for i, g := range globals {
			init := g.init
			if g.mutable {
				if init, err = constant(g.valType, values[i]); err != nil {
					return nil, Report{}, err
				}
				rep.Globals++
			}
			body = append(append(body, g.valType, boolByte(g.mutable)), init...)
		}
		m.set(secGlobal, body)
	}
	data, segments, dataBytes := dataSection(memory)
	rep.Segments, rep.DataBytes = segments, dataBytes
	m.set(secData, data)
	if m.find(secDataCount) != nil {
		m.set(secDataCount, appendLen(nil, segments))
	}
	dropDataNames(m)
	if err := emptyFunction(m, int(start.index)-importedFuncs); err != nil {
		return nil, Report{}, err
	}
	return m.encode(), rep, nil
}

// pages32 converts a wasm32 memory's page count, at most 65,536.
func pages32(pages int) uint32 {
	if pages < 0 || pages > 65536 {
		panic(fmt.Sprintf("preinit: %d pages in a 32-bit memory", pages))
	}
	return uint32(pages)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// checkImports refuses imported memories and globals (their state lives outside the module) and
// returns the number of imported functions, which come before the module's own in the index space.
func checkImports(m *module) (funcs int, err error) {
	s := m.find(secImport)
	if s == nil {
		return 0, nil
	}
	r := &reader{b: s.body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		mod, name := string(r.bytes()), string(r.bytes())
		switch kind := r.byte(); kind {
		case kindFunc:
			r.u32()
			funcs++
		case 1: // table: reference type and limits
			r.byte()
			readLimits(r)
		case kindMemory:
			return 0, fmt.Errorf("the module imports its memory (%s.%s): nothing to snapshot", mod, name)
		case kindGlobal:
			return 0, fmt.Errorf("the module imports a global (%s.%s), whose value the snapshot cannot keep", mod, name)
		default:
			return 0, fmt.Errorf("import %s.%s of kind %d is not supported", mod, name, kind)
		}
	}
	return funcs, r.err
}

func readLimits(r *reader) (flags byte, lo, hi uint32) {
	flags = r.byte()
	lo = r.u32()
	if flags&1 != 0 {
		hi = r.u32()
	}
	return flags, lo, hi
}

func readGlobals(m *module) ([]global, error) {
	s := m.find(secGlobal)
	if s == nil {
		return nil, nil
	}
	r := &reader{b: s.body}
	var globals []global
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		g := global{valType: r.byte(), mutable: r.byte() == 1}
		g.init = r.constExpr()
		globals = append(globals, g)
	}
	if r.err != nil {
		return nil, fmt.Errorf("global section: %w", r.err)
	}
	return globals, nil
}

type export struct {
	kind  byte
	index uint32
}

func readExports(m *module) (map[string]export, error) {
	exports := map[string]export{}
	s := m.find(secExport)
	if s == nil {
		return exports, nil
	}
	r := &reader{b: s.body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		name := string(r.bytes())
		exports[name] = export{kind: r.byte(), index: r.u32()}
	}
	if r.err != nil {
		return nil, fmt.Errorf("export section: %w", r.err)
	}
	return exports, nil
}

func checkMemoryAndData(m *module) error {
	s := m.find(secMemory)
	if s == nil {
		return errors.New("the module has no memory")
	}
	r := &reader{b: s.body}
	if n := r.u32(); n != 1 {
		return fmt.Errorf("the module has %d memories; one is supported", n)
	}
	if flags, _, _ := readLimits(r); flags > 1 {
		return fmt.Errorf("shared or 64-bit memories (limits flags %d) are not supported", flags)
	}
	return eachSegment(m, func([]byte) {})
}

// eachSegment calls fn with the offset expression of each of the module's data segments, all active
// (a passive one is an error: code may copy it again at any time).
func eachSegment(m *module, fn func(offset []byte)) error {
	s := m.find(secData)
	if s == nil {
		return nil
	}
	r := &reader{b: s.body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		switch flags := r.u32(); flags {
		case 0:
		case 2: // an explicit memory index
			r.u32()
		default:
			return errors.New("the module has passive data segments, which code may copy again at any time")
		}
		fn(r.constExpr())
		r.bytes()
	}
	if r.err != nil {
		return fmt.Errorf("data section: %w", r.err)
	}
	return nil
}

func setMemoryPages(m *module, pages uint32) error {
	r := &reader{b: m.find(secMemory).body}
	r.u32()
	flags, lo, hi := readLimits(r)
	if pages < lo || (flags&1 != 0 && pages > hi) {
		return fmt.Errorf("the memory has %d pages after _start, outside its limits [%d, %d]", pages, lo, hi)
	}
	body := appendU32([]byte{1, flags}, pages) // one memory
	if flags&1 != 0 {
		body = appendU32(body, hi)
	}
	m.set(secMemory, body)
	return nil
}

// dataSection writes memory's non-zero bytes as active segments; a fresh memory is zero elsewhere.
func dataSection(memory []byte) (body []byte, segments, size int) {
	var out []byte
	for i := 0; i < len(memory); {
		for i < len(memory) && memory[i] == 0 {
			i++
		}
		if i == len(memory) {
			break
		}
		start, end := i, i
		for zeros := 0; i < len(memory) && zeros < gap; i++ {
			if memory[i] == 0 {
				zeros++
			} else {
				zeros, end = 0, i+1
			}
		}
		out = append(out, 0, opI32Const) // active, memory 0, at i32.const start
		// i32.const takes the offset's 32 bits as a signed number; start < len(memory) <= 4 GiB.
		out = append(appendS64(out, int64(int32(uint32(start)))), opEnd) //nolint:gosec // see above
		out = append(appendLen(out, end-start), memory[start:end]...)
		segments++
		size += end - start
	}
	return append(appendLen(nil, segments), out...), segments, size
}

// emptyFunction replaces the body of the module's function index (imports excluded) with one that
// returns at once: _start takes no parameters and returns nothing.
func emptyFunction(m *module, index int) error {
	s := m.find(secCode)
	if s == nil || index < 0 {
		return errors.New("_start is not a function of the module")
	}
	r := &reader{b: s.body}
	n := int(r.u32())
	if index >= n {
		return fmt.Errorf("_start is function %d of %d", index, n)
	}
	body := appendLen(nil, n)
	for i := 0; i < n && r.err == nil; i++ {
		code := r.bytes()
		if i == index {
			code = []byte{0, opEnd} // no locals; end
		}
		body = append(appendLen(body, len(code)), code...)
	}
	if r.err != nil {
		return fmt.Errorf("code section: %w", r.err)
	}
	s.body = body
	return nil
}

// run instantiates m, with an export added for each global, calls _start and returns the memory
// and the globals' values after it.
func run(ctx context.Context, m *module, globals []global) (memory []byte, values []uint64, err error) {
	probe := &module{sections: append([]section(nil), m.sections...)}
	var exports []byte
	count := uint32(0)
	if s := m.find(secExport); s != nil {
		r := &reader{b: s.body}
		count = r.u32()
		exports = append(exports, s.body[r.off:]...)
	}
	for i := range globals {
		exports = append(appendName(exports, exportPrefix+strconv.Itoa(i)), kindGlobal)
		exports = appendLen(exports, i)
	}
	probe.set(secExport, append(appendLen(nil, int(count)+len(globals)), exports...))

	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	compiled, err := rt.CompileModule(ctx, probe.encode())
	if err != nil {
		return nil, nil, fmt.Errorf("compile: %w", err)
	}
	if err := wasi.Instantiate(ctx, rt); err != nil {
		return nil, nil, err
	}
	if err := stubImports(ctx, rt, compiled); err != nil {
		return nil, nil, err
	}
	var output bytes.Buffer
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().
		WithName("").WithStartFunctions().WithStdout(&output).WithStderr(&output))
	if err != nil {
		return nil, nil, fmt.Errorf("instantiate: %w", err)
	}
	if _, err := mod.ExportedFunction("_start").Call(ctx); err != nil && !wasi.CleanExit(err) {
		return nil, nil, fmt.Errorf("_start: %w", err)
	}
	if output.Len() > 0 {
		return nil, nil, fmt.Errorf("_start wrote %q, which a pre-initialised module would never write", output.String())
	}
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		return nil, nil, errors.New("cannot read the memory")
	}
	for i := range globals {
		values = append(values, mod.ExportedGlobal(exportPrefix+strconv.Itoa(i)).Get())
	}
	return bytes.Clone(mem), values, nil
}

// stubImports satisfies every import outside WASI with a function that fails the run: a host call
// made during start-up (such as a log line) has an effect the snapshot cannot replay.
func stubImports(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule) error {
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, def := range compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		b := builders[mod]
		if b == nil {
			b = rt.NewHostModuleBuilder(mod)
			builders[mod] = b
			order = append(order, mod)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
			panic(fmt.Errorf("_start called the import %s.%s, whose effect a snapshot cannot replay", mod, name))
		}), def.ParamTypes(), def.ResultTypes()).Export(name)
	}
	for _, mod := range order {
		if _, err := builders[mod].Instantiate(ctx); err != nil {
			return fmt.Errorf("stub the imports of %s: %w", mod, err)
		}
	}
	return nil
}

// emptyStack gives the stack back empty. A WASI command's `_start` ends with proc_exit, called from inside
// its frames (TinyGo's runtime exits from the function that ran main), so when the run stops the stack
// pointer is still below its initial value. Those frames never run again: kept, every instance would start
// with them in use and its requests would reach deeper into the stack, each new 4 KiB page a page fault
// on wasmtime. The stack pointer (the global LLVM names __stack_pointer; a module without that name is
// left as it is) goes back to its initial value and the bytes of the abandoned frames are zeroed; with
// the stack first in memory, below every data segment (TinyGo's layout), all of it is. It returns how
// many bytes of stack were in use.
func emptyStack(m *module, globals []global, values []uint64, memory []byte) int {
	sp := globalNamed(m, "__stack_pointer")
	if sp < 0 || sp >= len(globals) || !globals[sp].mutable || globals[sp].valType != typeI32 {
		return 0
	}
	top, ok := i32Constant(globals[sp].init)
	end := uint32(values[sp]) //nolint:gosec // an i32 global's value is its low 32 bits
	if !ok || end >= top || uint64(top) > uint64(len(memory)) {
		return 0
	}
	from := end
	if lowestData(m) >= top {
		from = 0
	}
	clear(memory[from:top])
	values[sp] = uint64(top)
	return int(top - end)
}

// globalNamed returns the index of the global the name section names name, or -1.
func globalNamed(m *module, name string) int {
	const globalNames = 7 // the name section's subsection of global names
	for _, s := range m.sections {
		if s.id != secCustom {
			continue
		}
		r := &reader{b: s.body}
		if string(r.bytes()) != "name" {
			continue
		}
		for r.off < len(r.b) && r.err == nil {
			id, body := r.byte(), r.bytes()
			if id != globalNames {
				continue
			}
			sub := &reader{b: body}
			for n := sub.u32(); n > 0 && sub.err == nil; n-- {
				index, got := sub.u32(), string(sub.bytes())
				if got == name && sub.err == nil {
					return int(index)
				}
			}
		}
	}
	return -1
}

// dropDataNames removes the data segments' names from the name section: they named TinyGo's segments,
// which the snapshot's, cut from memory, replace. Left in, `kwctl annotate` (walrus) warns for every name
// past the last segment. A name section it cannot read is dropped whole: names are for debuggers and
// profilers, never for running the module.
func dropDataNames(m *module) {
	const dataNames = 9 // the (extended) name section's subsection of data segment names
	for i := 0; i < len(m.sections); i++ {
		s := m.sections[i]
		r := &reader{b: s.body}
		if s.id != secCustom || string(r.bytes()) != "name" || r.err != nil {
			continue
		}
		body := append([]byte(nil), s.body[:r.off]...)
		for r.off < len(r.b) && r.err == nil {
			start := r.off
			if id := r.byte(); r.bytes() != nil && id != dataNames {
				body = append(body, r.b[start:r.off]...)
			}
		}
		if r.err != nil {
			m.sections = append(m.sections[:i], m.sections[i+1:]...)
			i--
			continue
		}
		m.sections[i].body = body
	}
}

// i32Constant reads an initialiser that is one i32.const.
func i32Constant(expr []byte) (uint32, bool) {
	if len(expr) < 3 || expr[0] != opI32Const || expr[len(expr)-1] != opEnd {
		return 0, false
	}
	r := &reader{b: expr[1 : len(expr)-1]}
	v := r.s32()
	return uint32(v), r.err == nil && r.off == len(r.b) //nolint:gosec // the i32's bits, as the engine reads them
}

// lowestData returns the lowest offset of the module's data segments (checkMemoryAndData has read them),
// 0 when one is not at an i32.const (an offset read from a global: anywhere), or the largest uint32 when
// it has none.
func lowestData(m *module) uint32 {
	lowest := uint32(math.MaxUint32)
	_ = eachSegment(m, func(expr []byte) {
		offset, ok := i32Constant(expr)
		if !ok {
			offset = 0
		}
		lowest = min(lowest, offset)
	})
	return lowest
}
