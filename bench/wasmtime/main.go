// Command wasmtime runs the project's benchmark (bench/wasmbench) on wasmtime, the engine
// policy-server embeds, configured as policy-evaluator configures it: epoch interruption on, WASI, a new
// store and instance for every evaluation, `_start` (exit code 0 ignored) then `wapc_init`, then one
// `__guest_call`. It is a module of its own because wasmtime-go is a large cgo download (its static
// library is ~50 MB) that nothing else needs: `make bench-wasmtime`.
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/bytecodealliance/wasmtime-go/v37"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/bench/wasmbench"
)

func main() {
	os.Exit(wasmbench.Main(engine{}, os.Args[1:], os.Stderr))
}

type engine struct{}

func (engine) Name() string {
	return "wasmtime " + wasmtimeVersion + " (epoch interruption on, as policy-evaluator)"
}

// wasmtimeVersion is the wasmtime-go major version in go.mod.
const wasmtimeVersion = "v37"

func (engine) Load(_ context.Context, wasm []byte) (wasmbench.Module, error) {
	cfg := wasmtime.NewConfig()
	cfg.SetEpochInterruption(true)
	if os.Getenv("WASMBENCH_PERFMAP") != "" {
		// /tmp/perf-PID.map names the compiled guest functions for `perf report` (policy.wasm keeps its
		// name section). wasmtime-go names only the none and jitdump strategies; perfmap is 3 in wasmtime.h.
		cfg.SetProfiler(wasmtime.ProfilingStrategy(3))
	}
	eng := wasmtime.NewEngineWithConfig(cfg)
	mod, err := wasmtime.NewModule(eng, wasm)
	if err != nil {
		return nil, err
	}
	m := &module{engine: eng, module: mod, linker: wasmtime.NewLinker(eng)}
	if err := m.link(); err != nil {
		return nil, err
	}
	return m, nil
}

type module struct {
	engine *wasmtime.Engine
	module *wasmtime.Module
	linker *wasmtime.Linker
}

func (m *module) Close(context.Context) error { return nil }

// current is the instance whose call is running: the benchmark evaluates on one goroutine, and the
// linker's host functions are shared by every store.
var current *instance

// link defines WASI and the waPC host functions every TinyGo waPC guest imports.
func (m *module) link() error {
	if err := m.linker.DefineWasi(); err != nil {
		return err
	}
	mem := func(c *wasmtime.Caller) []byte { return c.GetExport("memory").Memory().UnsafeData(c) }
	for name, fn := range map[string]any{
		"__guest_request": func(c *wasmtime.Caller, opPtr, payloadPtr int32) {
			copy(mem(c)[opPtr:], current.operation)
			copy(mem(c)[payloadPtr:], current.payload)
		},
		"__guest_response": func(c *wasmtime.Caller, ptr, n int32) {
			current.response = append([]byte(nil), mem(c)[ptr:ptr+n]...)
		},
		"__guest_error": func(c *wasmtime.Caller, ptr, n int32) {
			current.guestError = string(mem(c)[ptr : ptr+n])
		},
		"__host_call": func(_ *wasmtime.Caller, _, _, _, _, _, _, _, _ int32) int32 {
			return 1 // logging: accepted and dropped, as a log sink would
		},
		"__host_response_len": func() int32 { return 0 },
		"__host_response":     func(int32) {},
		"__host_error_len":    func() int32 { return 0 },
		"__host_error":        func(int32) {},
		"__console_log":       func(int32, int32) {},
	} {
		if err := m.linker.FuncWrap("wapc", name, fn); err != nil {
			return fmt.Errorf("wapc.%s: %w", name, err)
		}
	}
	return nil
}

type instance struct {
	store      *wasmtime.Store
	inst       *wasmtime.Instance
	operation  string
	payload    []byte
	response   []byte
	guestError string
}

func (m *module) NewInstance(context.Context) (wasmbench.Instance, error) {
	store := wasmtime.NewStore(m.engine)
	store.SetWasi(wasmtime.NewWasiConfig())
	store.SetEpochDeadline(math.MaxUint32) // policy-evaluator arms a deadline per evaluation; none fires here
	inst, err := m.linker.Instantiate(store, m.module)
	if err != nil {
		store.Close()
		return nil, err
	}
	in := &instance{store: store, inst: inst}
	for _, name := range []string{"_start", "wapc_init"} {
		f := inst.GetFunc(store, name)
		if f == nil {
			continue
		}
		if _, err := f.Call(store); err != nil && !cleanExit(err) {
			store.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return in, nil
}

// cleanExit is WASI proc_exit(0), which TinyGo's _start makes when main returns.
func cleanExit(err error) bool {
	var werr *wasmtime.Error
	if errors.As(err, &werr) {
		status, ok := werr.ExitStatus()
		return ok && status == 0
	}
	return false
}

func (in *instance) Call(_ context.Context, operation string, payload []byte) ([]byte, error) {
	current, in.operation, in.payload, in.response, in.guestError = in, operation, payload, nil, ""
	defer func() { current = nil }()
	out, err := in.inst.GetFunc(in.store, "__guest_call").Call(in.store, int32(len(operation)), int32(len(payload)))
	if err != nil {
		return nil, err
	}
	if ok, _ := out.(int32); ok != 1 {
		return nil, fmt.Errorf("guest call %q failed: %s", operation, in.guestError)
	}
	return in.response, nil
}

func (in *instance) MemorySize() uint32 {
	return uint32(in.inst.GetExport(in.store, "memory").Memory().DataSize(in.store))
}

func (in *instance) Close(context.Context) error {
	in.store.Close()
	return nil
}
