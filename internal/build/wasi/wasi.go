// Package wasi offers a TinyGo guest the WASI that wasmtime (policy-server's engine) offers it, on
// wazero. It is shared by the shipped build's pre-initialiser (internal/build/preinit) and the local test
// host (internal/host/wapchost), so that the build does not import the test host. It is not a waPC host.
package wasi

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Instantiate registers wasi_snapshot_preview1 in rt as wasmtime's WASI offers it to a guest: wazero's
// functions, except proc_exit, which wazero implements by closing the module. TinyGo's _start calls
// proc_exit(0) when main returns, and the waPC calls come after that, so here it panics with an
// ExitError instead: that unwinds the guest's stack without closing anything, and the caller accepts
// code 0 (CleanExit) and reports others.
func Instantiate(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			panic(sys.NewExitError(uint32(stack[0]))) //nolint:gosec // proc_exit takes an i32: the low 32 bits
		}), []api.ValueType{api.ValueTypeI32}, nil).
		WithParameterNames("rval").
		Export("proc_exit")
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate WASI: %w", err)
	}
	return nil
}

// CleanExit reports a proc_exit(0), which TinyGo's _start makes when main returns. Hosts built on
// wasmtime treat it as a normal return; any other code is a failed start.
func CleanExit(err error) bool {
	var exit *sys.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 0
}
