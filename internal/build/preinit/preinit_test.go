package preinit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/build/preinit"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

const startupGuest = "internal/build/preinit/testdata/startup"

func snapshot(t *testing.T, wasm []byte) []byte {
	t.Helper()
	out, rep, err := preinit.Snapshot(context.Background(), wasm)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if rep.Globals == 0 || rep.Segments == 0 || rep.MemoryPages == 0 {
		t.Fatalf("Snapshot report %+v: a TinyGo module has a stack pointer, data and memory", rep)
	}
	return out
}

func load(t *testing.T, wasm []byte) *wapchost.Host {
	t.Helper()
	h, err := wapchost.Load(context.Background(), wasm, wapchost.Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func call(t *testing.T, c interface {
	Call(context.Context, string, []byte) ([]byte, error)
}, op, payload string) string {
	t.Helper()
	out, err := c.Call(context.Background(), op, []byte(payload))
	if err != nil {
		t.Fatalf("Call(%q): %v", op, err)
	}
	return string(out)
}

var draw = regexp.MustCompile(` draw=-?\d+`)

func TestSnapshot_InstancesStartWhereStartUpEnded(t *testing.T) {
	raw := guesttest.Guest(t, startupGuest)
	pre := snapshot(t, raw)
	want := draw.ReplaceAllString(call(t, load(t, raw), "state", ""), "")
	if want != "starts=1 calls=1 sum=332833500 bob=2" {
		t.Fatalf("the guest as built answers %q", want)
	}
	h := load(t, pre)
	for i := range 3 { // fresh instances: main ran once, at build time, and calls never leak between them
		if got := draw.ReplaceAllString(call(t, h, "state", ""), ""); got != want {
			t.Fatalf("fresh instance %d of the snapshot answers %q, want %q", i, got, want)
		}
	}
	inst, err := h.NewInstance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	call(t, inst, "state", "")
	if got := draw.ReplaceAllString(call(t, inst, "state", ""), ""); got != "starts=1 calls=2 sum=332833500 bob=2" {
		t.Fatalf("second call on one instance answers %q", got)
	}
}

func TestSnapshot_HeapGrowsPastTheSnapshotsMemory(t *testing.T) {
	h := load(t, snapshot(t, guesttest.Guest(t, startupGuest)))
	inst, err := h.NewInstance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, inst, "grow", "4096"); got != "525288" { // 1000 + 4096*128 ints: 4 MiB, many pages
		t.Fatalf("grow answers %q", got)
	}
	if got := draw.ReplaceAllString(call(t, inst, "state", ""), ""); !strings.HasPrefix(got, "starts=1 calls=1 ") {
		t.Fatalf("state after growing answers %q", got)
	}
}

func TestSnapshot_IsReproducible(t *testing.T) {
	raw := guesttest.Guest(t, startupGuest)
	a, b := snapshot(t, raw), snapshot(t, raw)
	if !bytes.Equal(a, b) {
		t.Fatal("two snapshots of the same module differ: the release would not be reproducible")
	}
}

func TestSnapshot_RefusesStartUpItCannotReplay(t *testing.T) {
	for mode, want := range map[string]string{
		"print":    `_start wrote "hello from start-up\n"`,
		"hostcall": "_start called the import wapc.__host_call",
	} {
		t.Run(mode, func(t *testing.T) {
			wasm := guesttest.Guest(t, startupGuest, "-ldflags=-X main.mode="+mode)
			if _, _, err := preinit.Snapshot(context.Background(), wasm); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Snapshot error = %v, want one containing %q", err, want)
			}
		})
	}
}

// section encodes one section of a hand-made module.
func section(id byte, body ...byte) []byte {
	return append([]byte{id, byte(len(body))}, body...)
}

func module(sections ...[]byte) []byte {
	return append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, bytes.Join(sections, nil)...)
}

var (
	typeSec   = section(1, 1, 0x60, 0, 0)                                  // () -> ()
	funcSec   = section(3, 1, 0)                                           // one function of type 0
	memSec    = section(5, 1, 0, 1)                                        // one memory, one page
	exportSec = section(7, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0)       // _start = function 0
	codeSec   = section(10, 1, 2, 0, 0x0b)                                 // an empty body
	importMem = section(2, 1, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1) // env.mem, one page
)

func TestSnapshot_RefusesModulesItCannotRewrite(t *testing.T) {
	for name, tc := range map[string]struct {
		wasm []byte
		want string
	}{
		"not wasm":        {[]byte("\x00asm\x02\x00\x00\x00"), "not a WebAssembly 1.0 binary module"},
		"truncated":       {module(typeSec, []byte{3, 9, 1}), "section 3: at byte"},
		"no _start":       {module(typeSec, funcSec, memSec, codeSec), "exports no _start function"},
		"start section":   {module(typeSec, funcSec, memSec, exportSec, section(8, 0), codeSec), "start section"},
		"imported memory": {module(typeSec, importMem, funcSec, exportSec, codeSec), "imports its memory (env.mem)"},
		"no memory":       {module(typeSec, funcSec, exportSec, codeSec), "has no memory"},
		"passive data": {
			module(typeSec, funcSec, memSec, exportSec, section(12, 1), codeSec, section(11, 1, 1, 1, 'x')),
			"passive data segments",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := preinit.Snapshot(context.Background(), tc.wasm); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Snapshot error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The shipped module is the pre-initialised one: it must decide every bundled request exactly as the
// module TinyGo built does.
func TestSnapshot_PolicyDecidesEveryRequestAsBuilt(t *testing.T) {
	raw := guesttest.Policy(t)
	built, pre := load(t, raw), load(t, snapshot(t, raw))
	requests, err := filepath.Glob(filepath.Join(guesttest.RepoRoot(), "testdata", "requests", "*.json"))
	if err != nil || len(requests) < 10 {
		t.Fatalf("requests: %v (%d found)", err, len(requests))
	}
	for _, path := range requests {
		input, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, settings := range []string{`{}`, `{"externalUsers":["^ci-.*$"],"bypassControllers":false}`} {
			want := decide(t, built, input, settings)
			if got := decide(t, pre, input, settings); got != want {
				t.Errorf("%s with %s:\n pre-initialised: %s\n as built:        %s", filepath.Base(path), settings, got, want)
			}
		}
	}
}

func decide(t *testing.T, h *wapchost.Host, input []byte, settings string) string {
	t.Helper()
	resp, err := kwctl.Run(context.Background(), h, input, json.RawMessage(settings), kwctl.PayloadPolicyServer)
	if err != nil {
		return "error: " + err.Error()
	}
	out, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
