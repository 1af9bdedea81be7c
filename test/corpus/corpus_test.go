package corpus_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost/guesttest"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

// minEntries guards the corpus itself: a re-recording that lost a suite fails here.
const minEntries = 2000

// TestCorpus_EveryCallGivesTheRecordedBytes replays every recorded call in a fresh instance, as
// policy-server runs each request, and wants the recorded answer, failure and log entries byte for byte.
// The module is $POLICY when set (make check: policy.wasm as shipped), else the policy built from source.
func TestCorpus_EveryCallGivesTheRecordedBytes(t *testing.T) {
	var wasm []byte
	if p := os.Getenv("POLICY"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		wasm = b
	} else {
		wasm = guesttest.Policy(t)
	}
	var got corpus.Entry
	host, err := wapchost.Load(t.Context(), wasm, wapchost.Options{Record: func(c wapchost.Call) { got = corpus.NewEntry(c) }})
	if err != nil {
		t.Fatal(err)
	}
	entries := readCorpus(t)
	if len(entries) < minEntries {
		t.Fatalf("the corpus has %d entries, want at least %d", len(entries), minEntries)
	}
	for n, want := range entries {
		got = corpus.Entry{}
		_, _ = host.Call(t.Context(), want.Operation, want.Payload)
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Errorf("entry %d (%s, payload %.300q):\nrecorded %.2000s\n     got %.2000s", n, want.Operation, want.Payload, a, b)
		}
	}
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
