package policy

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/francoispqt/onelog"
)

// benchPayload wraps a fixture in a validate payload.
func benchPayload(b *testing.B, name, settings string) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "requests", name+".json"))
	if err != nil {
		b.Fatal(err)
	}
	return []byte(`{"request":` + string(data) + `,"settings":` + settings + `}`)
}

func benchmarkValidate(b *testing.B, name, settings string) {
	b.Helper()
	benchmarkPayload(b, benchPayload(b, name, settings))
}

// benchmarkPayload times Validate on payload.
func benchmarkPayload(b *testing.B, payload []byte) {
	b.Helper()
	logger := onelog.New(io.Discard, onelog.ALL)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()

	for b.Loop() {
		Validate(payload, logger)
	}
}

func BenchmarkValidate_PodCreateStamp(b *testing.B) { benchmarkValidate(b, "pod-create-alice", `{}`) }
func BenchmarkValidate_PodCreateTrustedKeep(b *testing.B) {
	benchmarkValidate(b, "pod-create-replicaset-controller", `{}`)
}
func BenchmarkValidate_DeploymentCreate(b *testing.B) {
	benchmarkValidate(b, "deployment-create-alice", `{}`)
}

// A declared kind (rules 11-13) costs about what a built-in workload does: the settings name five paths,
// of which the request's kind parses only its own.
func BenchmarkValidate_SparkApplicationCreate(b *testing.B) {
	benchmarkValidate(b, "sparkapplication-create-alice", benchSettings(b, "spark-operator"))
}

func BenchmarkValidate_RayJobCreate(b *testing.B) {
	benchmarkValidate(b, "rayjob-create-alice", benchSettings(b, "kuberay"))
}

// BenchmarkValidate_DeploymentCreateWithCustomWorkloads: declared kinds cost a built-in kind nothing.
func BenchmarkValidate_DeploymentCreateWithCustomWorkloads(b *testing.B) {
	benchmarkValidate(b, "deployment-create-alice", benchSettings(b, "argo-workflows"))
}

// benchSettings reads an example's settings (testdata/settings/<name>.json).
func benchSettings(b *testing.B, name string) string {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "settings", name+".json"))
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

func BenchmarkValidate_PodUpdate(b *testing.B) { benchmarkValidate(b, "pod-update-label-change", `{}`) }
func BenchmarkValidate_ManyRegexes(b *testing.B) {
	benchmarkValidate(b, "pod-create-bob-forged", `{"bypassAuth":true,`+
		`"systemUsers":["^system:serviceaccount:kube-system:","^system:kube-controller-manager$","^ctrl-[a-z]+$","^operator:.*$"],`+
		`"externalUsers":["^airflow$","^livy-[0-9]+$","^spark:(driver|gateway)$","^svc:.*:submit$"],`+
		`"externalGroups":["^spark-submitters$","^workflow-engines$","^batch-[a-z]+$","^platform$"]}`)
}

// BenchmarkValidate_Pod100K stamps a Pod padded to ~100 KB with environment variables.
func BenchmarkValidate_Pod100K(b *testing.B) {
	req := benchRequest(b)
	container := path(req, "request", "object", "spec", "containers").([]any)[0].(map[string]any)
	env := container["env"].([]any)
	for i := 0; len(mustMarshal(b, req)) < 100<<10; i++ {
		env = append(env, map[string]any{"name": "SETTING_" + strconv.Itoa(i), "value": "some-configuration-value"})
		container["env"] = env
	}
	benchmarkPayload(b, mustMarshal(b, req))
}

// benchRequest is alice's Pod CREATE payload as a generic map, for a benchmark to grow.
func benchRequest(b *testing.B) map[string]any {
	b.Helper()
	req := map[string]any{}
	if err := json.Unmarshal(benchPayload(b, "pod-create-alice", `{}`), &req); err != nil {
		b.Fatal(err)
	}
	return req
}

func mustMarshal(b *testing.B, v any) []byte {
	b.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// A requester in 1,000 groups of 35 characters, as internal/wasmbench's groups-1000 scenario.
func BenchmarkValidate_Groups1000(b *testing.B) {
	req := benchRequest(b)
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = "cn=team-" + strconv.Itoa(100000+i) + ",ou=groups,dc=example"
	}
	path(req, "request", "userInfo").(map[string]any)["groups"] = groups
	benchmarkPayload(b, mustMarshal(b, req))
}

// BenchmarkIndexJSON_Pod100K times the validating pass alone on the Pod of BenchmarkValidate_Pod100K.
func BenchmarkIndexJSON_Pod100K(b *testing.B) {
	req := benchRequest(b)
	container := path(req, "request", "object", "spec", "containers").([]any)[0].(map[string]any)
	env := container["env"].([]any)
	for i := range 1700 {
		env = append(env, map[string]any{"name": "SETTING_" + strconv.Itoa(i), "value": "some-configuration-value"})
	}
	container["env"] = env
	payload := string(mustMarshal(b, req))
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if indexJSON(payload) == nil {
			b.Fatal("not valid")
		}
	}
}
