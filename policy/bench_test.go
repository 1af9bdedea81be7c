package policy

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
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
	logger := NewLogger(io.Discard)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()

	for b.Loop() {
		validate(payload, logger)
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
	benchmarkValidate(b, "sparkapplication-create-alice", exampleSettings(b, "spark-operator"))
}

func BenchmarkValidate_RayJobCreate(b *testing.B) {
	benchmarkValidate(b, "rayjob-create-alice", exampleSettings(b, "kuberay"))
}

// BenchmarkValidate_DeploymentCreateWithCustomWorkloads: declared kinds cost a built-in kind nothing.
func BenchmarkValidate_DeploymentCreateWithCustomWorkloads(b *testing.B) {
	benchmarkValidate(b, "deployment-create-alice", exampleSettings(b, "argo-workflows"))
}

// exampleSettings reads an example's settings (testdata/settings/<name>.json).
func exampleSettings(tb testing.TB, name string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "settings", name+".json"))
	if err != nil {
		tb.Fatal(err)
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
	for i := 0; len(mustJSON(b, req)) < 100<<10; i++ {
		env = append(env, map[string]any{"name": "SETTING_" + strconv.Itoa(i), "value": "some-configuration-value"})
		container["env"] = env
	}
	benchmarkPayload(b, []byte(mustJSON(b, req)))
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

// A requester in 1,000 groups of 35 characters, as bench/wasmbench's groups-1000 scenario.
func BenchmarkValidate_Groups1000(b *testing.B) {
	req := benchRequest(b)
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = "cn=team-" + strconv.Itoa(100000+i) + ",ou=groups,dc=example"
	}
	path(req, "request", "userInfo").(map[string]any)["groups"] = groups
	benchmarkPayload(b, []byte(mustJSON(b, req)))
}

// Workflows of many templates (the Cost rule: deciding a custom resource is linear in its bytes and its
// targets): each beside a Pod of the same bytes, to compare.
func workflowPayload(templates int, template, operation, username string, lastApplied bool) []byte {
	var b []byte
	b = append(b, `{"spec":{"entrypoint":"main","templates":[`...)
	for i := range templates {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, template...)
	}
	b = append(b, `]}}`...)
	object := string(b)
	if lastApplied {
		object = `{"metadata":{"name":"wf","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + rawjson.Quote(object) + `}},` + object[1:]
	}
	req := `{"uid":"1","kind":{"group":"argoproj.io","version":"v1alpha1","kind":"Workflow"},"namespace":"team-a","operation":"` + operation +
		`","userInfo":{"username":"` + username + `","groups":["system:authenticated"]},"object":` + object
	if operation == "UPDATE" {
		req += `,"oldObject":` + object
	}
	return []byte(`{"request":` + req + `},"settings":` + benchArgoSettings + `}`)
}

// benchArgoSettings declares Workflow as the Argo example does (bench_test.go stands alone: the guest
// benchmarks, make bench-guest, build it without the other tests).
const benchArgoSettings = `{"systemUsers":["^system:serviceaccount:kube-system:","^system:serviceaccount:argo:argo$"],` +
	`"customWorkloads":[{"apiGroup":"argoproj.io","kind":"Workflow","annotationPaths":[` +
	`"spec>podMetadata.annotations","spec.templates[*]>metadata.annotations","spec.templateDefaults>metadata.annotations",` +
	`"spec.templates[*].steps[*][*].inline>metadata.annotations","spec.templates[*].dag.tasks[*].inline>metadata.annotations"]}]}`

// podPayload is a Pod CREATE of about size bytes (environment variables pad it).
func podPayload(size int) []byte {
	var env []byte
	for i := 0; len(env) < size; i++ {
		if i > 0 {
			env = append(env, ',')
		}
		env = append(env, `{"name":"V`+strconv.Itoa(i)+`","value":"0123456789abcdef0123456789"}`...)
	}
	return []byte(`{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"team-a","operation":"CREATE",` +
		`"userInfo":{"username":"bob","groups":["system:authenticated"]},"object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","env":[` +
		string(env) + `]}]}}},"settings":{}}`)
}

const ordinaryTemplate = `{"name":"step","metadata":{"labels":{"app":"x"}},"container":{"image":"registry.example.com/team/app:1.4.2",` +
	`"command":["/bin/app"],"args":["--input","{{inputs.parameters.x}}","--verbose"],"resources":{"requests":{"cpu":"250m","memory":"128Mi"}},` +
	`"env":[{"name":"MODE","value":"production"},{"name":"LEVEL","value":"info"}]},"inputs":{"parameters":[{"name":"x"}]}}`

func BenchmarkCost_Workflow16000EmptyTemplatesCreate(b *testing.B) {
	benchmarkPayload(b, workflowPayload(16000, `{}`, "CREATE", "bob", false))
}

func BenchmarkCost_Workflow40000EmptyTemplatesCreate(b *testing.B) {
	benchmarkPayload(b, workflowPayload(40000, `{}`, "CREATE", "bob", false))
}

func BenchmarkCost_Workflow800TemplatesLastAppliedCreate(b *testing.B) {
	benchmarkPayload(b, workflowPayload(800, ordinaryTemplate, "CREATE", "bob", true))
}

func BenchmarkCost_Workflow6000TemplatesControllerStatusUpdate(b *testing.B) {
	benchmarkPayload(b, workflowPayload(6000, `{"name":"t","metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"bob\"}"}}}`,
		"UPDATE", "system:serviceaccount:argo:argo", false))
}

func BenchmarkCost_PodOf48KB(b *testing.B)   { benchmarkPayload(b, podPayload(48<<10)) }
func BenchmarkCost_PodOf1500KB(b *testing.B) { benchmarkPayload(b, podPayload(1500<<10)) }

// phaseEvaluation is the evaluation of a Workflow of 16,000 empty templates, read and ready to decide: the
// phase benchmarks time its walk and its decision apart, and policy/internal/rawjson's BenchmarkPhase_Index
// and BenchmarkPhase_ForEach its read (make bench-guest BENCH=Phase_ shows the four in the guest).
func phaseEvaluation() *evaluation {
	payload := workflowPayload(16000, `{}`, "CREATE", "bob", false)
	text := string(payload)
	index := rawjson.Parse(text)
	var r request
	readRequest(index, &r)
	settings, _ := ParseSettings(r.settings.Raw)
	custom, _ := settings.customKind(r.group, r.kind)
	who, _ := readRequester(&r)
	e := new(evaluation)
	e.begin(settings, &r, who, declared(r.kind, custom), NewLogger(io.Discard))
	return e
}

func BenchmarkPhase_Walk(b *testing.B) {
	e := phaseEvaluation()
	b.ReportAllocs()
	for b.Loop() {
		e.walk(&e.now, false, e.mostTargets(e.req.object))
	}
}

func BenchmarkPhase_Decide(b *testing.B) {
	e := phaseEvaluation()
	b.ReportAllocs()
	for b.Loop() {
		e.create()
	}
}

// Rule 16's reading and sizing of task groups, on 100,000 empty groups (300 KB): linear in the groups.
var manyEmptyGroups = "[" + strings.Repeat("{},", 99999) + "{}]"

func BenchmarkTaskGroups_Read100k(b *testing.B) {
	for b.Loop() {
		readTaskGroups(manyEmptyGroups, "")
	}
}

func BenchmarkTaskGroups_Size100k(b *testing.B) {
	tg := readTaskGroups(manyEmptyGroups, "")
	rw := groupsRewrite{text: tg.text, x: tg.x, value: `{"user":"bob","groups":["qa","system:authenticated"]}`, over: true}
	for b.Loop() {
		rw.stamp(nil, func(string) bool { return true })
	}
}
