package preinit

import (
	"context"
	"math"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// TestSnapshot_GivesTheStackBackEmpty: TinyGo's _start ends by proc_exit from inside its frames; the
// snapshot starts every instance with the stack pointer where the module as built starts it, and no byte
// of the stack in its data.
func TestSnapshot_GivesTheStackBackEmpty(t *testing.T) {
	raw := guesttest.Guest(t, "internal/build/preinit/testdata/startup")
	out, rep, err := Snapshot(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StackBytes <= 0 {
		t.Errorf("StackBytes = %d: TinyGo's _start exits with frames in use", rep.StackBytes)
	}
	built, snap := stackTop(t, raw), stackTop(t, out)
	if snap != built {
		t.Errorf("the snapshot starts the stack pointer at %d, the module as built at %d", snap, built)
	}
	m, err := parseModule(out)
	if err != nil {
		t.Fatal(err)
	}
	if low := lowestData(m); low < built {
		t.Errorf("a data segment starts at %d, inside the stack (below %d)", low, built)
	}
}

// stackTop returns the initial value of wasm's __stack_pointer.
func stackTop(t *testing.T, wasm []byte) uint32 {
	t.Helper()
	m, err := parseModule(wasm)
	if err != nil {
		t.Fatal(err)
	}
	globals, err := readGlobals(m)
	if err != nil {
		t.Fatal(err)
	}
	sp := globalNamed(m, "__stack_pointer")
	if sp < 0 || sp >= len(globals) {
		t.Fatalf("no global named __stack_pointer (%d of %d)", sp, len(globals))
	}
	top, ok := i32Constant(globals[sp].init)
	if !ok {
		t.Fatalf("__stack_pointer's initialiser %x is not an i32.const", globals[sp].init)
	}
	return top
}

// TestI32Constant_ReadsWhatConstantWrites: every i32 initialiser the snapshot writes reads back.
func TestI32Constant_ReadsWhatConstantWrites(t *testing.T) {
	for _, v := range []int64{0, 1, 63, 64, -1, -64, -65, 8191, 8192, 65536, 65328, math.MaxInt32, math.MinInt32} {
		expr, err := constant(typeI32, uint64(v))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := i32Constant(expr); !ok || int32(got) != int32(v) {
			t.Errorf("i32Constant(%x) = %d, %v; want %d", expr, int32(got), ok, v)
		}
	}
	for _, bad := range [][]byte{nil, {opI32Const, opEnd}, {opI64Const, 1, opEnd}, {opI32Const, 0x80, opEnd}, {opI32Const, 1, 2, opEnd}} {
		if _, ok := i32Constant(bad); ok {
			t.Errorf("i32Constant(%x) accepted", bad)
		}
	}
}
