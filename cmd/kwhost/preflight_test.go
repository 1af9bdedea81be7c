package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost/guesttest"
)

// The objects the cluster suite's adoption scenario recorded (see internal/preflight).
var adoptionObjects = filepath.Join(guesttest.RepoRoot(), "internal", "preflight", "testdata", "adoption-objects.json")

func TestPreflight_ReadsTheKubectlListOnStdinAndPrintsATable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.wasm")
	if err := os.WriteFile(path, guesttest.Policy(t), 0o644); err != nil {
		t.Fatal(err)
	}
	objects, err := os.ReadFile(adoptionObjects)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := kwhost([]string{"preflight", "--policy", path}, bytes.NewReader(objects), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	out := stdout.String()
	t.Log(out)
	if !strings.HasPrefix(out, "NAMESPACE") || !strings.Contains(out, "18 objects: 4 stamp, 4 keep, 3 refuse, 7 leave-alone, 0 skip") {
		t.Errorf("unexpected table:\n%s", out)
	}

	stdout.Reset()
	if code := kwhost([]string{"preflight", "--policy", path, "-o", "json", "-f", adoptionObjects, "--controllers", "single"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	var findings []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &findings); err != nil || len(findings) != 18 {
		t.Fatalf("json output: %d findings, %v\n%s", len(findings), err, stdout.String())
	}

	stderr.Reset()
	if code := kwhost([]string{"preflight", "--policy", path, "--settings-json", `{"bypassAuth":true}`}, bytes.NewReader(objects), &stdout, &stderr); code != exitSettings {
		t.Errorf("refused settings: exit %d, want %d; stderr: %s", code, exitSettings, stderr.String())
	}
}

func TestPreflight_BadInvocationsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"preflight"},
		{"preflight", "--policy", "p.wasm", "extra"},
		{"preflight", "--policy", "p.wasm", "--controllers", "some"},
		{"preflight", "--policy", "p.wasm", "--output", "yaml"},
		{"preflight", "--policy", "p.wasm", "--settings-json", "{}", "-s", "f.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		if code := kwhost(args, strings.NewReader(`{"items":[]}`), &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}
