package wapchost_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

const guestDir = "internal/host/wapchost/testdata/guest"

func load(t *testing.T, wasm []byte, opts wapchost.Options) *wapchost.Host {
	t.Helper()
	h, err := wapchost.Load(context.Background(), wasm, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func call(t *testing.T, h *wapchost.Host, op, payload string) string {
	t.Helper()
	out, err := h.Call(context.Background(), op, []byte(payload))
	if err != nil {
		t.Fatalf("Call(%q): %v", op, err)
	}
	return string(out)
}

func TestStart_RunsStartThenWapcInitBeforeTheFirstCall(t *testing.T) {
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{})
	if got := call(t, h, "events", ""); got != "_start,wapc_init" {
		t.Errorf("events = %q, want %q", got, "_start,wapc_init")
	}
}

func TestStart_ProcExitZeroIsANormalReturn(t *testing.T) {
	// This guest has no wapc_init and ends main with an explicit os.Exit(0).
	h := load(t, guesttest.Guest(t, "internal/host/wapchost/testdata/exit", "-ldflags=-X main.code=0"), wapchost.Options{})
	if got := call(t, h, "echo", "still here"); got != "still here" {
		t.Errorf("echo = %q after proc_exit(0)", got)
	}
}

func TestStart_NonZeroExitIsAnError(t *testing.T) {
	_, err := wapchost.Load(context.Background(), guesttest.Guest(t, "internal/host/wapchost/testdata/exit", "-ldflags=-X main.code=3"), wapchost.Options{})
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Load error = %v, want an exit error with code 3", err)
	}
	if !strings.HasPrefix(err.Error(), "_start: ") {
		t.Errorf("error %q does not name _start", err)
	}
}

func TestHostCall_EveryCallGetsAFreshInstance(t *testing.T) {
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{})
	for i := range 3 {
		if got := call(t, h, "incr", ""); got != "1" {
			t.Fatalf("call %d: counter = %s, want 1 (state leaked between evaluations)", i, got)
		}
	}
}

func TestInstance_KeepsStateAcrossCalls(t *testing.T) {
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{})
	ctx := context.Background()
	inst, err := h.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(ctx)
	for want := 1; want <= 3; want++ {
		out, err := inst.Call(ctx, "incr", nil)
		if err != nil || string(out) != fmt.Sprint(want) {
			t.Fatalf("call %d = %q, %v; want %d", want, out, err, want)
		}
	}
	if size := inst.MemorySize(); size == 0 || size%65536 != 0 {
		t.Errorf("MemorySize = %d, want a non-zero number of 64 KiB pages", size)
	}
}

func TestHostCall_LogLinesReachTheSink(t *testing.T) {
	var logs bytes.Buffer
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{Log: &logs})
	line := `{"level":"info","message":"hello"}`
	if got := call(t, h, "log", line); got != "logged" {
		t.Errorf("log op answered %q", got)
	}
	call(t, h, "log", line+"\n")
	if logs.String() != line+"\n"+line+"\n" {
		t.Errorf("sink = %q, want the line twice, each ending in exactly one newline", logs.String())
	}
}

func TestHostCall_UnknownCallIsAnErrorInTheGuest(t *testing.T) {
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{})
	want := "Host error: unknown host call kubewarden/net/v1/dns_lookup_host"
	if got := call(t, h, "unknown", ""); got != want {
		t.Errorf("guest saw %q, want %q", got, want)
	}
}

func TestConsoleLogGoesToStdio(t *testing.T) {
	var stdio bytes.Buffer
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{Stdio: &stdio})
	call(t, h, "console", "from the guest")
	if stdio.String() != "from the guest\n" {
		t.Errorf("stdio = %q", stdio.String())
	}
}

func TestGuestError_BecomesAGoError(t *testing.T) {
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{})
	for _, tc := range []struct{ op, payload, want string }{
		{"fail", "nope", "refused: nope"},
		{"no-such-op", "", `Could not find function "no-such-op"`},
	} {
		_, err := h.Call(context.Background(), tc.op, []byte(tc.payload))
		var ge *wapchost.GuestError
		if !errors.As(err, &ge) || ge.Message != tc.want || ge.Operation != tc.op {
			t.Errorf("Call(%q) error = %#v, want GuestError %q", tc.op, err, tc.want)
		}
	}
}

func TestTrap_BecomesAGoErrorAndTheHostCarriesOn(t *testing.T) {
	var stdio bytes.Buffer
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{Stdio: &stdio})
	for op, want := range map[string]string{
		"panic": "unreachable",
		"oob":   "out of bounds memory access",
	} {
		_, err := h.Call(context.Background(), op, nil)
		var te *wapchost.TrapError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
			t.Errorf("Call(%q) error = %v, want a TrapError mentioning %q", op, err, want)
		}
	}
	if !strings.Contains(stdio.String(), "kaboom") {
		t.Errorf("stdio = %q, want TinyGo's panic message", stdio.String())
	}
	if got := call(t, h, "echo", "alive"); got != "alive" {
		t.Errorf("echo after traps = %q", got)
	}
}

func TestInterruptible_DeadlineStopsARunawayGuest(t *testing.T) {
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{Interruptible: true})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.Call(ctx, "spin", nil)
	var te *wapchost.TrapError
	if !errors.As(err, &te) {
		t.Fatalf("spin error = %v, want a TrapError", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("spin stopped after %v", elapsed)
	}
}

func TestCall_IsSafeForConcurrentUse(t *testing.T) {
	var logs bytes.Buffer
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{Log: &logs})
	const workers, calls = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				payload := fmt.Sprintf("worker %d call %d", w, c)
				out, err := h.Call(context.Background(), "echo", []byte(payload))
				if err == nil && string(out) != payload {
					err = fmt.Errorf("echo(%q) = %q", payload, out)
				}
				if err == nil {
					_, err = h.Call(context.Background(), "log", []byte(`{"w":`+fmt.Sprint(w)+`}`))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != workers*calls {
		t.Errorf("%d log lines, want %d", len(lines), workers*calls)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"w":`) || !strings.HasSuffix(l, "}") {
			t.Errorf("interleaved log line %q", l)
		}
	}
}

func TestLoad_RejectsModulesThatAreNotWaPC(t *testing.T) {
	emptyModule := []byte("\x00asm\x01\x00\x00\x00")
	if _, err := wapchost.Load(context.Background(), emptyModule, wapchost.Options{}); err == nil ||
		!strings.Contains(err.Error(), "not a waPC module") {
		t.Errorf("empty module: error = %v", err)
	}
	if _, err := wapchost.Load(context.Background(), []byte("not wasm"), wapchost.Options{}); err == nil {
		t.Error("garbage loaded without error")
	}
}

func TestPolicy_AnswersProtocolVersionV1(t *testing.T) {
	h := load(t, guesttest.Policy(t), wapchost.Options{})
	if got := call(t, h, "protocol_version", ""); got != `"v1"` {
		t.Errorf("protocol_version = %s, want \"v1\" as a JSON string", got)
	}
}

func TestCheckLogEntry_AsPolicyEvaluatorReadsIt(t *testing.T) {
	for entry, ok := range map[string]bool{
		`{"level":"info","message":"m","user":"alice"}`: true,
		`{"level":"WARNING","message":"m"}`:             true, // case-insensitive
		`{"level":"trace"}`:                             true, // the message is optional
		`{"level":"error","message":null}`:              true,
		`{"level":"warn","message":"m"}`:                false, // onelog's default text
		`{"level":"fatal","message":"m"}`:               false,
		`{"message":"m"}`:                               false,
		`{"level":1}`:                                   false,
		`{"level":"info","message":1}`:                  false,
		`{"level":"info","level":"debug"}`:              false,
		`not JSON`:                                      false,
		`["level","info"]`:                              false,
	} {
		if err := wapchost.CheckLogEntry([]byte(entry)); (err == nil) != ok {
			t.Errorf("%s: error %v, want ok=%v", entry, err, ok)
		}
	}
}

func TestHostCall_LogEntriesPolicyServerRefusesAreReported(t *testing.T) {
	var problems []string
	var mu sync.Mutex
	h := load(t, guesttest.Guest(t, guestDir), wapchost.Options{LogProblem: func(entry []byte, err error) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf("%s: %v", entry, err))
	}})
	call(t, h, "log", `{"level":"info","message":"fine"}`)
	call(t, h, "log", `{"level":"warn","message":"refused"}`)
	if len(problems) != 1 || !strings.Contains(problems[0], `unknown level "warn"`) {
		t.Errorf("problems = %q, want exactly the warn entry", problems)
	}
}
