package corpus_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

// pack re-records the corpus (make corpus): the calls kwhost recorded in this file are packed into
// calls.jsonl.gz, which the test then replays.
var pack = flag.String("pack", "", "pack the calls kwhost recorded in this file into calls.jsonl.gz first")

// minEntries guards the corpus itself: a re-recording that lost a suite fails here.
const minEntries = 2000

// TestCorpus_EveryCallGivesTheRecordedBytes replays every recorded call in a fresh instance, as
// policy-server runs each request, and wants the recorded answer, failure and log entries byte for byte.
// The module is $POLICY when set (make check: policy.wasm as shipped), else the policy built from source.
func TestCorpus_EveryCallGivesTheRecordedBytes(t *testing.T) {
	if *pack != "" {
		summary, err := corpus.Pack(*pack, "calls.jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		t.Log(summary)
	}
	var got corpus.Entry
	host, err := wapchost.Load(t.Context(), policyModule(t), wapchost.Options{Record: func(c wapchost.Call) { got = corpus.NewEntry(c) }})
	if err != nil {
		t.Fatal(err)
	}
	entries := readCorpus(t)
	if len(entries) < minEntries {
		t.Fatalf("the corpus has %d entries, want at least %d", len(entries), minEntries)
	}
	failures := 0
	for n, want := range entries {
		got = corpus.Entry{}
		_, _ = host.Call(t.Context(), want.Operation, want.Payload)
		for _, field := range []struct {
			name      string
			want, got []byte
		}{
			{"response", want.Response, got.Response},
			{"error", []byte(want.Error), []byte(got.Error)},
			{"logs", joinLogs(want.Logs), joinLogs(got.Logs)},
		} {
			if !bytes.Equal(field.want, field.got) {
				failures++
				t.Errorf("entry %d (%s, payload of %d bytes, %.120q...): the %s differs\n%s", n, want.Operation,
					len(want.Payload), want.Payload, field.name, firstDifference(field.want, field.got))
			}
		}
		if failures >= 20 {
			t.Fatal("20 differences: stopping")
		}
	}
}

// policyModule is the module the corpus runs: $POLICY when set (make check: policy.wasm as shipped), else the
// policy built from source.
func policyModule(t *testing.T) []byte {
	t.Helper()
	if p := os.Getenv("POLICY"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return guesttest.Policy(t)
}

func joinLogs(logs []corpus.Bytes) []byte {
	var b []byte
	for _, l := range logs {
		b = append(append(b, l...), '\n')
	}
	return b
}

// firstDifference shows both texts around the first byte where they differ.
func firstDifference(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-150)
	excerpt := func(b []byte) []byte { return b[min(from, len(b)):min(i+150, len(b))] }
	return fmt.Sprintf("at byte %d of %d recorded and %d got:\nrecorded ...%q...\n     got ...%q...", i, len(want), len(got), excerpt(want), excerpt(got))
}

func readCorpus(t *testing.T) []corpus.Entry {
	t.Helper()
	f, err := os.Open("calls.jsonl.gz") // go test runs in the package directory
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var entries []corpus.Entry
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var e corpus.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("entry %d: %v", len(entries), err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return entries
}
