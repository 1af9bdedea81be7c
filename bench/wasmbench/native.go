package wasmbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// nativeResult is one scenario's timing of YuniKorn's own admission handler, as bench/yunikorn writes it.
type nativeResult struct {
	Scenario string        `json:"scenario"`
	N        int           `json:"n"`
	Min      time.Duration `json:"min_ns"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	Checked  string        `json:"checked"` // what the handler's response was verified to do
}

// nativeTimeout bounds one run of the native binary: one scenario stops past maxScenarioTime, and the
// rest is the process's start.
const nativeTimeout = 2*maxScenarioTime + 30*time.Second

// runNative measures YuniKorn's admission handler natively (bench/yunikorn's binary at path) on the
// scenario's request, the same bytes as in the policy's payload, n timed evaluations (fewer past
// maxScenarioTime). Run calls it scenario by scenario, right after the modules, so that both see the
// same load on the machine. The binary checks the response itself and fails when the handler did not do
// the scenario's user-info work. YuniKorn's logs (its stdout) go to /dev/null: written, as when deployed,
// and dropped, as the policy's logs are by the benchmark's host.
func runNative(ctx context.Context, path string, sc scenario, n int) (nativeResult, error) {
	var r nativeResult
	dir, err := os.MkdirTemp("", "wasmbench-yunikorn-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	review, results := filepath.Join(dir, sc.name+".json"), filepath.Join(dir, "results.json")
	if err := os.WriteFile(review, nativeReview(sc.request), 0o600); err != nil {
		return r, err
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return r, err
	}
	defer devNull.Close()
	ctx, cancel := context.WithTimeout(ctx, nativeTimeout)
	defer cancel()
	//nolint:gosec // the binary the benchmark was given to run (-native)
	cmd := exec.CommandContext(ctx, path, "-n", strconv.Itoa(n), "-max-time", maxScenarioTime.String(), "-o", results, review)
	cmd.Stdout, cmd.Stderr = devNull, os.Stderr
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("YuniKorn's handler on %s: %s: %w", sc.name, path, err)
	}
	out, err := os.ReadFile(results)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("YuniKorn's handler on %s: results: %w", sc.name, err)
	}
	if r.Scenario != sc.name || r.N == 0 || r.P50 <= 0 {
		return r, fmt.Errorf("YuniKorn's handler on %s: no timing in %.200s", sc.name, out)
	}
	return r, nil
}

// nativeReview wraps an AdmissionRequest the way the API server sends it to a webhook.
func nativeReview(request []byte) []byte {
	return append(append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":`), request...), '}')
}

// printNative puts YuniKorn's handler next to the policy and returns the worst p50 ratio (policy over
// YuniKorn: below 1, the policy is faster) and its scenario; it prints nothing when YuniKorn was not measured.
func printNative(scenarios []scenario, results map[string]result, native map[string]nativeResult) (worst float64, worstName string) {
	if len(native) == 0 {
		return 0, ""
	}
	fmt.Printf("\nYuniKorn's own admission handler, native Go: yunikorn-k8shim v1.4.0 AdmissionController.Serve on the same request\n" +
		"bytes as an AdmissionReview (policy: a fresh instance per evaluation, as above; below 1 the policy is faster):\n")
	fmt.Printf("%-22s %8s | %-26s | %-17s | %-13s | %s\n", "scenario", "payload", "YuniKorn", "policy", "x YuniKorn", "YuniKorn's response (checked)")
	fmt.Printf("%-22s %8s | %8s %8s %8s | %8s %8s | %6s %6s |\n", "", "", "min", "p50", "p99", "min", "p50", "min", "p50")
	for _, sc := range scenarios {
		y, ok := native[sc.name]
		if !ok {
			continue
		}
		p := results[sc.name]
		r := ratio(p.p50, y.P50)
		if r > worst {
			worst, worstName = r, sc.name
		}
		fmt.Printf("%-22s %6.0fKB | %8s %8s %8s | %8s %8s | %6.2f %6.2f | %s\n", sc.name, float64(len(sc.payload))/1024,
			us(y.Min), us(y.P50), us(y.P99), us(p.min), us(p.p50), ratio(p.min, y.Min), r, y.Checked)
	}
	return worst, worstName
}
