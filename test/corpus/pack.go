package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Pack turns the calls kwhost recorded (KWHOST_RECORD_CALLS, one JSON line each, in the order the suites
// ran) into the corpus at out: one entry per distinct operation and payload, in a stable order, gzipped
// without a timestamp so that the same calls give the same file. It says how many it read and kept.
func Pack(in, out string) (string, error) {
	f, err := os.Open(in)
	if err != nil {
		return "", err
	}
	defer f.Close()
	type keyed struct {
		key  [32]byte
		line []byte
	}
	seen := map[[32]byte][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	recorded := 0
	for n := 1; sc.Scan(); n++ {
		recorded++
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return "", fmt.Errorf("%s:%d: %w", in, n, err)
		}
		key := Key(e)
		line := bytes.Clone(sc.Bytes())
		if prev, ok := seen[key]; ok && !bytes.Equal(prev, line) {
			return "", fmt.Errorf("%s:%d: the same call was answered twice differently", in, n)
		}
		seen[key] = line
	}
	if err := sc.Err(); err != nil {
		return "", err
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
		return "", err
	}
	summary := fmt.Sprintf("%d calls recorded, %d distinct, %d bytes gzipped", recorded, len(entries), buf.Len())
	return summary, os.WriteFile(out, buf.Bytes(), 0o600)
}
