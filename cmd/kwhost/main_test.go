package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

const (
	deployment = "../../internal/host/kwctl/testdata/deployment-create.json"
	deployUID  = `"uid":"b1e0c2d4-0000-4000-8000-000000000001"`
)

func TestParseFlags_AcceptsKwctlSpellings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want flags
	}{
		{[]string{"-r", "req.json", "p.wasm"}, flags{requestPath: "req.json", positional: []string{"p.wasm"}}},
		{[]string{"--request-path=req.json", "--settings-json", `{"a":1}`, "p.wasm"},
			flags{requestPath: "req.json", SettingsFlags: kwctl.SettingsFlags{JSON: `{"a":1}`}, positional: []string{"p.wasm"}}},
		{[]string{"p.wasm", "--request-path", "req.json", "-s", "s.yaml"},
			flags{requestPath: "req.json", SettingsFlags: kwctl.SettingsFlags{Path: "s.yaml"}, positional: []string{"p.wasm"}}},
		{[]string{"--settings-path=s.yaml", "p.wasm", "a.json", "-r=req.json", "b.json"},
			flags{requestPath: "req.json", SettingsFlags: kwctl.SettingsFlags{Path: "s.yaml"}, positional: []string{"p.wasm", "a.json", "b.json"}}},
	} {
		got, err := parseFlags("run", tc.args, true)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		// policy-server's defaults unless told otherwise
		tc.want.payload, tc.want.policyTimeout = kwctl.PayloadPolicyServer, 2*time.Second
		if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(flags{})); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestParseFlags_Refusals(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		withRequest bool
		want        string
	}{
		{[]string{"--settings-json", "{}", "-s", "x.yaml", "p.wasm"}, true, "mutually exclusive"},
		{[]string{"--bogus", "p.wasm"}, true, "flag provided but not defined: -bogus"},
		{[]string{"-r", "req.json", "p.wasm"}, false, "flag provided but not defined: -r"}, // demo takes no -r
		{[]string{"p.wasm", "-r"}, true, "flag needs an argument: -r"},
	} {
		if _, err := parseFlags("run", tc.args, tc.withRequest); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// scripted writes the scripted test guest (see internal/host/kwctl/testdata/scripted) to a file.
func scripted(t *testing.T) string {
	t.Helper()
	return guestFile(t, "internal/host/kwctl/testdata/scripted")
}

// guestFile builds the test guest in dir (guesttest caches the build) and returns the module's path.
func guestFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), filepath.Base(dir)+".wasm")
	if err := os.WriteFile(path, guesttest.Guest(t, dir), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type result struct {
	code           int
	stdout, stderr string
}

func runKwhost(stdin string, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := kwhost(args, strings.NewReader(stdin), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func TestRun_PrintsOneLineOfJSONAndLogsOnStderr(t *testing.T) {
	policy := scripted(t)
	for _, tc := range []struct {
		name, settings string
		want           result
	}{
		{"allowed", `{"log":"evaluating"}`, result{0,
			`{` + deployUID + `,"allowed":true,"auditAnnotations":null,"warnings":null}` + "\n",
			`{"level":"info","message":"evaluating"}` + "\n"}},
		{"rejected still exits 0", `{"response":{"accepted":false,"message":"no","code":403}}`, result{0,
			`{` + deployUID + `,"allowed":false,"status":{"message":"no","code":403},"auditAnnotations":null,"warnings":null}` + "\n", ""}},
		{"refused settings exit 1 with kwctl's words", `{"invalid":"queue is required"}`, result{1,
			"", "Provided settings are not valid: queue is required\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runKwhost("", "run", "-r", deployment, "--settings-json", tc.settings, policy)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(result{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRun_ReadsTheRequestFromStdinAndSettingsFromYAML(t *testing.T) {
	policy := scripted(t)
	request, err := os.ReadFile(deployment)
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "settings.yaml")
	yaml := "response:\n  accepted: false\n  message: from yaml\n"
	if err := os.WriteFile(settings, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runKwhost(string(request), "run", policy, "--request-path=-", "-s", settings)
	want := `{` + deployUID + `,"allowed":false,"status":{"message":"from yaml"},"auditAnnotations":null,"warnings":null}` + "\n"
	if got.code != 0 || got.stdout != want {
		t.Errorf("got %+v\nwant stdout %s", got, want)
	}
}

// badInvocation is a command line kwhost refuses, and how its error starts.
type badInvocation struct {
	name   string
	args   []string
	stderr string
}

// wantExit2 runs each command line and wants exit code 2, nothing on stdout and the error on stderr.
func wantExit2(t *testing.T, cases []badInvocation) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runKwhost("", tc.args...)
			if got.code != 2 || got.stdout != "" || !strings.HasPrefix(got.stderr, tc.stderr) {
				t.Errorf("got %+v, want exit 2 and stderr starting %q", got, tc.stderr)
			}
		})
	}
}

func TestRun_BadInvocationsExit2(t *testing.T) {
	policy := scripted(t)
	wantExit2(t, []badInvocation{
		{"no request", []string{"run", policy}, "kwhost run: --request-path is required\n\nusage:"},
		{"no module", []string{"run", "-r", deployment}, "kwhost run: want exactly one policy module, got 0 arguments"},
		{"unknown flag", []string{"run", "--nope", policy}, "kwhost run: flag provided but not defined: -nope"},
		{"unreadable request", []string{"run", "-r", "/nonexistent.json", policy}, "kwhost run: cannot read the request: open /nonexistent.json"},
		{"malformed settings", []string{"run", "-r", deployment, "--settings-json", "[1]", policy}, "kwhost run: cannot parse settings JSON: settings must be an object"},
		{"not a module", []string{"run", "-r", deployment, deployment}, "kwhost run: cannot load policy " + deployment + ": compile module:"},
		{"unknown command", []string{"bench"}, `kwhost: unknown command "bench"`},
	})
}

func TestDemo_PrintsReadableBlocks(t *testing.T) {
	policy := scripted(t)
	object, err := os.ReadFile(deployment)
	if err != nil {
		t.Fatal(err)
	}
	// The guest's mutated_object: the fixture's object plus one annotation, minus replicas.
	var obj string
	{
		s := string(object)
		s = s[strings.Index(s, `"object": {`)+len(`"object": `):]
		end := strings.Index(s, `"oldObject"`)
		if end < 0 {
			t.Fatal("fixture has no oldObject")
		}
		s = s[:end]
		obj = strings.TrimSuffix(strings.TrimSpace(s), ",")
	}
	mutated := strings.NewReplacer(`"annotations": {"team": "a"}`, `"annotations": {"team": "a", "yunikorn.apache.org/user.info": "{\"user\":\"alice\"}"}`,
		`"replicas": 0,`, ``).Replace(obj)
	settings := `{"response":{"accepted":true,"warnings":["stamped"],"mutated_object":` + mutated + `}}`

	got := runKwhost("", "demo", "--settings-json", settings, policy, deployment, "../../internal/host/kwctl/testdata/pod-delete.json", "missing.json")
	want := result{2, `deployment-create.json
  request   CREATE Deployment by alice
  decision  ALLOWED
  warning   stamped
  patch     add /metadata/annotations/yunikorn.apache.org~1user.info = "{\"user\":\"alice\"}"
            remove /spec/replicas

pod-delete.json
  request   DELETE Pod by bob
  decision  REJECTED
  message   Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed
  patch     no patch

missing.json
  error     open missing.json: no such file or directory
`, ""}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDemo_RefusedSettingsExit1(t *testing.T) {
	got := runKwhost("", "demo", "--settings-json", `{"invalid":"bad"}`, scripted(t), deployment)
	if want := (result{1, "", "Provided settings are not valid: bad\n"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestDemo_RunsTheRealPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.wasm")
	if err := os.WriteFile(path, guesttest.Policy(t), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only the host's side is asserted: the decisions belong to the policy's own tests.
	got := runKwhost("", "demo", path, deployment)
	if got.code != 0 || !strings.HasPrefix(got.stdout, "deployment-create.json\n  request   CREATE Deployment by alice\n  decision  ") {
		t.Errorf("got %+v", got)
	}
}

func TestHelp_GoesToStdoutAndExits0(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"run", "-h"}, {"demo", "--help"}} {
		if got := runKwhost("", args...); got.code != 0 || !strings.HasPrefix(got.stdout, "usage:\n  kwhost run") || got.stderr != "" {
			t.Errorf("%q: got %+v", args, got)
		}
	}
}
