package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// The objects the cluster suite's adoption scenario recorded (see internal/preflight).
var adoptionObjects = filepath.Join(guesttest.RepoRoot(), "internal", "preflight", "testdata", "adoption-objects.json")

// policyFile writes the policy module to a file, as an operator downloads it.
func policyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.wasm")
	if err := os.WriteFile(path, guesttest.Policy(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPreflight_ReadsTheKubectlListOnStdinAndPrintsATable(t *testing.T) {
	path := policyFile(t)
	objects, err := os.ReadFile(adoptionObjects)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--policy", path}, bytes.NewReader(objects), &stdout, &stderr); code != kwctl.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	out := stdout.String()
	t.Log(out)
	if !strings.HasPrefix(out, "NAMESPACE") || !strings.Contains(out, "18 objects: 4 stamp, 4 keep, 3 refuse, 7 leave-alone, 0 skip") ||
		!strings.Contains(out, "\nYuniKorn: admissionController.filtering.generateUniqueAppId is off (default)") ||
		// no scheduler Deployment in the recording: the Helm chart's account, not in the default systemUsers
		!strings.Contains(out, "\nYuniKorn's scheduler: system:serviceaccount:yunikorn:yunikorn-admin (the Helm chart's default: ") ||
		!strings.Contains(out, "\n  its placeholders: stamp: the scheduler is not trusted") ||
		!strings.HasSuffix(out, "\nno gang application of the input's YuniKorn pods has placeholders with another identity than its originator\n") {
		t.Errorf("unexpected report:\n%s", out)
	}

	// The scheduler account of the flag, untrusted while reject is set: every placeholder is refused.
	stdout.Reset()
	if code := run([]string{"--policy", path, "-f", adoptionObjects, "--scheduler-account", "yk/scheduler",
		"--settings-json", `{"onUntrustedAnnotation":"reject"}`}, nil, &stdout, &stderr); code != kwctl.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "\nYuniKorn's scheduler: system:serviceaccount:yk:scheduler (--scheduler-account)\n"+
		"  its placeholders: refuse: the scheduler is not trusted and the policy refuses every placeholder it creates") {
		t.Errorf("unexpected report:\n%s", out)
	}

	stdout.Reset()
	if code := run([]string{"--policy", path, "-o", "json", "-f", adoptionObjects, "--controllers", "single"}, nil, &stdout, &stderr); code != kwctl.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	var findings []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &findings); err != nil || len(findings) != 18 {
		t.Fatalf("json output: %d findings, %v\n%s", len(findings), err, stdout.String())
	}

	stderr.Reset()
	if code := run([]string{"--policy", path, "--settings-json", `{"bypassAuth":true}`}, bytes.NewReader(objects), &stdout, &stderr); code != kwctl.ExitSettings ||
		!strings.HasPrefix(stderr.String(), "Provided settings are not valid: ") {
		t.Errorf("refused settings: exit %d, want %d; stderr: %s", code, kwctl.ExitSettings, stderr.String())
	}
}

func TestPreflight_AModuleThatIsNotThePolicyExits3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.wasm")
	if err := os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--policy", path}, strings.NewReader(`{"items":[]}`), &stdout, &stderr); code != kwctl.ExitStart {
		t.Errorf("exit %d, want %d; stderr: %s", code, kwctl.ExitStart, stderr.String())
	}
}

func TestPreflight_BadInvocationsExit2(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--policy", "p.wasm", "extra"},
		{"--policy", "p.wasm", "--controllers", "some"},
		{"--policy", "p.wasm", "--output", "yaml"},
		{"--policy", "p.wasm", "--scheduler-account", "yunikorn-admin"},
		{"--policy", "p.wasm", "--settings-json", "{}", "-s", "f.yaml"},
		{"--policy", filepath.Join(t.TempDir(), "missing.wasm")},
		{"--policy", "p.wasm", "--version"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(`{"items":[]}`), &stdout, &stderr); code != kwctl.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, kwctl.ExitUsage)
		}
		if !strings.HasPrefix(stderr.String(), "yunikorn-user-info-preflight: ") {
			t.Errorf("%q: stderr does not say which command failed: %q", args, stderr.String())
		}
	}
}

// --version prints the version the release stamps (-ldflags -X main.version=...); --help the usage.
func TestPreflight_VersionAndHelp(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "1.2.3"
	for _, tc := range []struct {
		arg, want string
	}{
		{"--version", "yunikorn-user-info-preflight 1.2.3\n"},
		{"--help", usage},
		{"-h", usage},
	} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{tc.arg}, nil, &stdout, &stderr); code != kwctl.ExitOK || stdout.String() != tc.want {
			t.Errorf("%s: exit %d, stdout %q, want %q", tc.arg, code, stdout.String(), tc.want)
		}
	}
}
