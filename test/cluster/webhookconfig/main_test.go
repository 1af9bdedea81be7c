package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// generate runs the command with o and a CA file, decodes the configuration it prints into cfg and returns it.
func generate(t *testing.T, o options, cfg any) string {
	t.Helper()
	o.caFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(o.caFile, []byte("PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out.Bytes(), cfg); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// parseFile reads a file of the repository with parse.
func parseFile[T any](t *testing.T, path string, parse func([]byte) (T, error)) T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRun_RulesAreMetadataYmlsVerbatim(t *testing.T) {
	var cfg struct {
		Kind     string
		Webhooks []struct {
			Rules             []rule
			ClientConfig      struct{ URL, CABundle string }
			NamespaceSelector struct{ MatchLabels map[string]string }
			FailurePolicy     string
		}
	}
	out := generate(t, options{metadata: "../../../metadata.yml", url: "https://127.0.0.1:9443/validate",
		namespaceLabel: "e2e=on", name: "x", timeoutSeconds: 10}, &cfg)
	want := parseFile(t, "../../../metadata.yml", rulesOf)
	if cfg.Kind != "MutatingWebhookConfiguration" || len(cfg.Webhooks) != 1 {
		t.Fatalf("got %s", out)
	}
	h := cfg.Webhooks[0]
	if diff := cmp.Diff(want, h.Rules); diff != "" {
		t.Errorf("rules differ from metadata.yml (-metadata +config):\n%s", diff)
	}
	if h.ClientConfig.CABundle != "UEVN" || h.ClientConfig.URL != "https://127.0.0.1:9443/validate" ||
		h.NamespaceSelector.MatchLabels["e2e"] != "on" || h.FailurePolicy != "Fail" {
		t.Errorf("got %s", out)
	}
}

func TestRulesOf_Refusals(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"mutating: false\nrules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [CREATE]}]", "mutating is not true"},
		{"mutating: true\n", "no rules"},
		{"mutating: true\nrules: [{apiGroups: [''], apiVersions: [v1], resources: [], operations: [CREATE]}]", "rules[0]: resources is empty"},
	} {
		if _, err := rulesOf([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestRun_MatchConditionsAreTheExamples(t *testing.T) {
	var cfg struct {
		Webhooks []struct{ MatchConditions []matchCondition }
	}
	generate(t, options{metadata: "../../../metadata.yml", url: "https://x/validate", name: "x",
		matchConditions: "../../../examples/default.yaml"}, &cfg)
	want := parseFile(t, "../../../examples/default.yaml", matchConditionsOf)
	if diff := cmp.Diff(want, cfg.Webhooks[0].MatchConditions); diff != "" || len(want) == 0 {
		t.Errorf("matchConditions differ from the example (-example +config):\n%s", diff)
	}
	if _, err := matchConditionsOf([]byte("kind: ClusterAdmissionPolicy\nspec: {}\n")); err == nil {
		t.Error("an example without matchConditions must be refused")
	}
}

// -extra-rules appends the operator examples' custom-resource rules, and only those.
func TestRun_ExtraRulesAreTheExamplesCustomResources(t *testing.T) {
	var cfg struct{ Webhooks []struct{ Rules []rule } }
	generate(t, options{metadata: "../../../metadata.yml", url: "https://127.0.0.1:9443/validate", name: "x",
		extraRules: "../../../examples/spark-operator.yaml,../../../examples/kuberay.yaml"}, &cfg)
	base := parseFile(t, "../../../metadata.yml", rulesOf)
	want := slices.Concat(base, []rule{
		{APIGroups: []string{"sparkoperator.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"sparkapplications", "scheduledsparkapplications"}, Operations: []string{"CREATE", "UPDATE"}},
		{APIGroups: []string{"ray.io"}, APIVersions: []string{"*"}, Resources: []string{"rayclusters", "rayjobs", "rayservices"}, Operations: []string{"CREATE", "UPDATE"}}})
	if diff := cmp.Diff(want, cfg.Webhooks[0].Rules); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := extraRulesOf([]byte("kind: ClusterAdmissionPolicy\nspec:\n  rules: []\n"), base); err == nil {
		t.Error("an example without custom-resource rules must be refused")
	}
}
