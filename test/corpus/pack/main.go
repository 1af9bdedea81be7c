// Command pack turns the calls kwhost recorded (KWHOST_RECORD_CALLS, one JSON line each, in the order the
// suites ran) into the corpus: one entry per distinct operation and payload, in a stable order, gzipped
// without a timestamp so that the same calls give the same file.
//
//	go run ./test/corpus/pack RECORDED.jsonl test/corpus/calls.jsonl.gz
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pack RECORDED.jsonl CORPUS.jsonl.gz")
		os.Exit(2)
	}
	if err := pack(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "pack:", err)
		os.Exit(1)
	}
}

func pack(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	type keyed struct {
		key  [32]byte
		line []byte
	}
	seen := map[[32]byte][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	for n := 1; sc.Scan(); n++ {
		var e corpus.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("%s:%d: %w", in, n, err)
		}
		key := corpus.Key(e)
		line := bytes.Clone(sc.Bytes())
		if prev, ok := seen[key]; ok && !bytes.Equal(prev, line) {
			return fmt.Errorf("%s:%d: the same call was answered twice differently", in, n)
		}
		seen[key] = line
	}
	if err := sc.Err(); err != nil {
		return err
	}
	entries := make([]keyed, 0, len(seen))
	for k, l := range seen {
		entries = append(entries, keyed{k, l})
	}
	slices.SortFunc(entries, func(a, b keyed) int { return bytes.Compare(a.key[:], b.key[:]) })

	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid; the header has no time
	for _, e := range entries {
		_, _ = zw.Write(append(e.line, '\n'))
	}
	if err := zw.Close(); err != nil {
		return err
	}
	fmt.Printf("%d calls recorded, %d distinct, %d bytes gzipped\n", countLines(in), len(entries), buf.Len())
	return os.WriteFile(out, buf.Bytes(), 0o600)
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}
