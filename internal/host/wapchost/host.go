package wapchost

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/build/wasi"
)

// Options configures a Host. The zero value discards everything the guest prints.
type Options struct {
	// Log receives each line the guest logs through the kubewarden/tracing/log host call (a JSON
	// object from the SDK's logger), one newline-terminated Write per line. Nil discards them.
	Log io.Writer
	// Stdio receives what the guest writes to stdout, stderr and __console_log; TinyGo prints a
	// panic's message there just before it traps. Nil discards it.
	Stdio io.Writer
	// Interruptible lets a cancelled or expired ctx stop a running guest, as policy-server's
	// policy-timeout does. wazero then checks ctx inside every loop, which costs a little per call.
	Interruptible bool
	// LogProblem is told about every log entry policy-server would refuse (CheckLogEntry): an
	// unknown level, or an entry that is not its JSON object. policy-server answers the host call
	// with success and logs an error instead of the line; a test host must make that visible.
	// The entry is still written to Log.
	LogProblem func(entry []byte, err error)
	// Record, when set, is told every finished call of every instance: the operation, the payload, the
	// guest's answer (nil when it failed), the failure, and the log entries the call sent. The corpus of
	// test/corpus is recorded this way (kwhost's KWHOST_RECORD_CALLS).
	Record func(Call)
}

// Call is one finished guest call, as Options.Record receives it.
type Call struct {
	Operation string
	Payload   []byte
	Response  []byte
	Err       error
	Logs      [][]byte
}

// Host holds one compiled policy module. It is safe for concurrent use: every Call runs in an
// instance of its own.
type Host struct {
	runtime    wazero.Runtime
	module     wazero.CompiledModule
	config     wazero.ModuleConfig
	log        io.Writer
	logProblem func(entry []byte, err error)
	record     func(Call)
	stdio      io.Writer
	startFunc  []string
}

// Load compiles wasm and starts one throw-away instance, so that a module that is not waPC or whose
// main fails is reported now rather than on the first evaluation (policy-server fails at start-up).
func Load(ctx context.Context, wasm []byte, opts Options) (host *Host, err error) {
	var rt wazero.Runtime
	defer func() {
		// wazero panics when this platform has no compiler. The interpreter is no stand-in: it is
		// an order of magnitude slower than the wasmtime that policy-server runs.
		if r := recover(); r != nil {
			err = fmt.Errorf("wazero has no compiler for %s/%s: %v", runtime.GOOS, runtime.GOARCH, r)
		}
		if err != nil && rt != nil {
			host = nil
			_ = rt.Close(ctx)
		}
	}()
	rt = wazero.NewRuntimeWithConfig(ctx,
		wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(opts.Interruptible))
	h := &Host{runtime: rt, log: lockedOrDiscard(opts.Log), stdio: lockedOrDiscard(opts.Stdio), logProblem: opts.LogProblem,
		record: opts.Record}
	if err := h.instantiateImports(ctx); err != nil {
		return nil, err
	}
	if h.module, err = rt.CompileModule(ctx, wasm); err != nil {
		return nil, fmt.Errorf("compile module: %w", err)
	}
	exports := h.module.ExportedFunctions()
	if exports[guestCallExport] == nil {
		return nil, fmt.Errorf("module exports no %s: not a waPC module", guestCallExport)
	}
	for _, name := range []string{"_start", "wapc_init"} { // policy-server's order
		if exports[name] != nil {
			h.startFunc = append(h.startFunc, name)
		}
	}
	h.config = wazero.NewModuleConfig().
		WithName("").         // anonymous, so that any number of instances can coexist
		WithStartFunctions(). // started by NewInstance, which tolerates proc_exit(0)
		WithStdout(h.stdio).WithStderr(h.stdio).
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader) // as wasmtime's WASI does

	inst, err := h.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	_ = inst.Close(ctx)
	return h, nil
}

// Call evaluates operation in a fresh instance, as policy-server does for every request: main()
// and package initialisers run each time and no state survives between calls.
func (h *Host) Call(ctx context.Context, operation string, payload []byte) ([]byte, error) {
	inst, err := h.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	defer inst.Close(context.WithoutCancel(ctx))
	return inst.Call(ctx, operation, payload)
}

// StartError is an instance that could not be started: instantiation failed, or `_start` or
// `wapc_init` trapped or exited with a non-zero code. policy-server then has no AdmissionReview to
// answer with: its HTTP answer is a 500, and the webhook's failurePolicy decides.
type StartError struct {
	Phase string // "instantiate", "_start" or "wapc_init"
	Err   error
}

func (e *StartError) Error() string { return e.Phase + ": " + e.Err.Error() }

func (e *StartError) Unwrap() error { return e.Err }

// NewInstance instantiates the module and runs `_start` then `wapc_init` (each if exported). The
// instance keeps its state across calls; benchmarks use it to separate start-up from evaluation.
// A failure is a *StartError.
func (h *Host) NewInstance(ctx context.Context) (*Instance, error) {
	inst := &Instance{host: h}
	ctx = inst.bind(ctx)
	mod, err := h.runtime.InstantiateModule(ctx, h.module, h.config)
	if err != nil {
		return nil, &StartError{Phase: "instantiate", Err: err}
	}
	inst.mod = mod
	for _, name := range h.startFunc {
		if _, err := mod.ExportedFunction(name).Call(ctx); err != nil && !CleanExit(err) {
			_ = mod.Close(ctx)
			return nil, &StartError{Phase: name, Err: err}
		}
	}
	inst.guestCall = mod.ExportedFunction(guestCallExport)
	return inst, nil
}

// Close releases the compiled module and every instance still open.
func (h *Host) Close(ctx context.Context) error {
	return h.runtime.Close(ctx)
}

// Interrupted reports an evaluation stopped because its context ended: policy-server's
// --policy-timeout (an Interruptible host), or a caller that gave up.
func Interrupted(err error) bool {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// CleanExit reports a proc_exit(0), which TinyGo's _start makes when main returns (wasi.CleanExit).
func CleanExit(err error) bool { return wasi.CleanExit(err) }

// lockedWriter serialises writes from instances running on several goroutines, so that a sink such
// as a bytes.Buffer never sees two log lines interleaved.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// LockedBuffer is a sink that instances on several goroutines may write while another reads it: a log
// for a test or a report. Make it with NewLockedBuffer.
type LockedBuffer struct {
	lockedWriter
	buf bytes.Buffer
}

// NewLockedBuffer returns an empty LockedBuffer.
func NewLockedBuffer() *LockedBuffer {
	b := &LockedBuffer{}
	b.w = &b.buf
	return b
}

// Bytes returns a copy of what was written so far.
func (b *LockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String returns what was written so far.
func (b *LockedBuffer) String() string { return string(b.Bytes()) }

func lockedOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return &lockedWriter{w: w}
}
