package wasmbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeNative stands in for bench/yunikorn's binary: it checks its arguments and the review it is given
// (the scenario's request wrapped as an AdmissionReview), logs to stdout as YuniKorn does, and writes
// result as its results, with the review's scenario name for %s.
func fakeNative(t *testing.T, result string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "yunikorn-native")
	script := `#!/bin/sh
set -eu
[ "$1 $2 $3 $4 $5" = "-n 7 -max-time 10s -o" ] || { echo "arguments: $*" >&2; exit 2; }
out=$6 review=$7
[ "$(cat "$review")" = '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1"}}' ] ||
  { echo "review: $(cat "$review")" >&2; exit 3; }
echo "INFO admission AdmissionReview"
printf '` + result + `\n' "$(basename "$review" .json)" > "$out"
`
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunNative(t *testing.T) {
	sc := scenario{name: "pod-4k-stamp", payload: []byte(`{"request":{"uid":"u1"},"settings":{}}`), request: []byte(`{"uid":"u1"}`)}
	ctx := context.Background()

	got, err := runNative(ctx, fakeNative(t, `{"scenario":"%s","n":7,"min_ns":1000,"p50_ns":2000,"p99_ns":3000,"checked":"stamped"}`), sc, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := nativeResult{Scenario: "pod-4k-stamp", N: 7, Min: time.Microsecond, P50: 2 * time.Microsecond, P99: 3 * time.Microsecond, Checked: "stamped"}
	if got != want {
		t.Errorf("runNative = %+v, want %+v", got, want)
	}

	for name, result := range map[string]string{
		"no timing":      `{"scenario":"%s","n":0,"checked":"stamped"}`,
		"other scenario": `{"scenario":"pod-update%s","n":7,"min_ns":1000,"p50_ns":2000,"p99_ns":3000}`,
		"not JSON":       `%s`,
	} {
		if _, err := runNative(ctx, fakeNative(t, result), sc, 7); err == nil || !strings.Contains(err.Error(), "pod-4k-stamp") {
			t.Errorf("%s: runNative error = %v, want one naming the scenario", name, err)
		}
	}
	// The binary's own failure (here: a review it does not expect) stops the benchmark.
	other := sc
	other.request = []byte(`{"uid":"u2"}`)
	if _, err := runNative(ctx, fakeNative(t, `{}`), other, 7); err == nil {
		t.Error("runNative ignored the binary's failure")
	}
}
