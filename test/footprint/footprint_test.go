// Package footprint checks how many pages of linear memory policy.wasm writes to decide a request in a
// fresh instance. On wasmtime, policy-server's engine, the first write to each 4 KiB page of a fresh
// instance is a page fault, a few microseconds each (docs/runtime.md "Pages"), so a change that spreads a
// small request over more pages is a cost every request pays.
package footprint

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

const pageSize = 4096

// TestFootprint_SmallRequestsWriteFewPages: the module as shipped ($POLICY: make check sets it to
// policy.wasm) writes at most the pages below for each small request, the request the host writes into
// it included: a ratchet at today's count plus one page (docs/runtime.md "Pages" has the counts and their
// history). A page counts when its bytes differ after the call or when the evaluation logs its line
// (logDecisions asks for one); pages only read are not counted.
func TestFootprint_SmallRequestsWriteFewPages(t *testing.T) {
	path := os.Getenv("POLICY")
	if path == "" {
		t.Skip("POLICY is not set: the pages written are those of the pre-initialised module as shipped (make check sets it)")
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The memory as it is when the evaluation logs its line, mid-way: a page written and then zeroed again
	// before the call returns (the storage forgets the request once answered) differs there, not after.
	var inst *wapchost.Instance
	var midway [][]byte
	logged := writerFunc(func(line []byte) (int, error) {
		midway = append(midway, inst.Memory())
		return len(line), nil
	})
	host, err := wapchost.Load(ctx, wasm, wapchost.Options{Log: logged})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(ctx)
	for _, c := range []struct {
		fixture string
		pages   int
		logs    bool // evaluated with logDecisions, so that it logs a line: its memory mid-way is seen too
	}{
		// Today's count plus one page (docs/runtime.md "Pages").
		{"pod-create-alice", 9, true},        // a stamp
		{"deployment-create-alice", 9, true}, // a template stamped
		{"pod-update-status", 10, false},     // the most frequent request once pods/status is registered
	} {
		req, err := os.ReadFile(filepath.Join("..", "..", "testdata", "requests", c.fixture+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, req); err != nil {
			t.Fatal(err)
		}
		settings := `{}`
		if c.logs { // the line's own buffer counts too: at most what the default settings write
			settings = `{"logDecisions":true}`
		}
		payload := []byte(`{"request":` + compact.String() + `,"settings":` + settings + `}`)
		if inst, err = host.NewInstance(ctx); err != nil {
			t.Fatal(err)
		}
		before := inst.Memory()
		midway = nil
		if _, err := inst.Call(ctx, "validate", payload); err != nil {
			t.Fatal(err)
		}
		if c.logs && len(midway) == 0 {
			t.Fatalf("%s: the evaluation logged no line, so its memory mid-way was not seen", c.fixture)
		}
		written := writtenPages(before, append(midway, inst.Memory())...)
		_ = inst.Close(ctx)
		t.Logf("%s: %d pages %v", c.fixture, len(written), written)
		if len(written) > c.pages {
			t.Errorf("%s: %d pages written (%v), want at most %d", c.fixture, len(written), written, c.pages)
		}
	}
}

// writtenPages lists the pages whose bytes differ from before in any of the memories seen later (or
// that one of them added).
func writtenPages(before []byte, later ...[]byte) []int {
	var pages []int
	for p := 0; ; p++ {
		start, seen, written := p*pageSize, false, false
		for _, after := range later {
			if start >= len(after) {
				continue
			}
			seen = true
			end := min(start+pageSize, len(after))
			written = written || end > len(before) || !bytes.Equal(before[start:end], after[start:end])
		}
		if !seen {
			return pages
		}
		if written {
			pages = append(pages, p)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
