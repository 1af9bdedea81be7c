package rawjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The package's benchmarks. This file stands alone (no helper of the other tests): make bench-guest
// (hack/bench-guest.sh) builds it with TinyGo without them, and runs it in the guest beside policy's.
// The requests are the policy's: a read costs what it costs on what the policy is given.

// pod100K is alice's Pod CREATE payload (testdata/requests/pod-create-alice.json, with empty settings)
// with 1,700 more environment variables in its first container: ~100 KB, the Pod of policy's
// BenchmarkValidate_Pod100K, written as encoding/json writes it (keys sorted).
func pod100K(b *testing.B) string {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "requests", "pod-create-alice.json"))
	if err != nil {
		b.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(`{"request":`+string(data)+`,"settings":{}}`), &payload); err != nil {
		b.Fatal(err)
	}
	spec := payload["request"].(map[string]any)["object"].(map[string]any)["spec"].(map[string]any)
	container := spec["containers"].([]any)[0].(map[string]any)
	env := container["env"].([]any)
	for i := range 1700 {
		env = append(env, map[string]any{"name": "SETTING_" + strconv.Itoa(i), "value": "some-configuration-value"})
	}
	container["env"] = env
	out, err := json.Marshal(payload)
	if err != nil {
		b.Fatal(err)
	}
	return string(out)
}

// BenchmarkIndexJSON_Pod100K times the validating pass alone on the Pod of policy's
// BenchmarkValidate_Pod100K.
func BenchmarkIndexJSON_Pod100K(b *testing.B) {
	payload := pod100K(b)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if Parse(payload) == nil {
			b.Fatal("not valid")
		}
	}
}

// phaseWorkflow is the payload of policy's phase benchmarks byte for byte (policy/bench_test.go,
// workflowPayload(16000, `{}`, "CREATE", "bob", false)): a Workflow CREATE of 16,000 empty templates with
// the Argo example's settings. BenchmarkPhase_Index and BenchmarkPhase_ForEach here time its read, policy's
// BenchmarkPhase_Walk and BenchmarkPhase_Decide its walk and its decision (make bench-guest BENCH=Phase_
// runs the four in the guest).
func phaseWorkflow() string {
	object := `{"spec":{"entrypoint":"main","templates":[` + strings.Repeat(`{},`, 15999) + `{}]}}`
	return `{"request":{"uid":"1","kind":{"group":"argoproj.io","version":"v1alpha1","kind":"Workflow"},"namespace":"team-a",` +
		`"operation":"CREATE","userInfo":{"username":"bob","groups":["system:authenticated"]},"object":` + object + `},` +
		`"settings":{"systemUsers":["^system:serviceaccount:kube-system:","^system:serviceaccount:argo:argo$"],` +
		`"customWorkloads":[{"apiGroup":"argoproj.io","kind":"Workflow","annotationPaths":[` +
		`"spec>podMetadata.annotations","spec.templates[*]>metadata.annotations","spec.templateDefaults>metadata.annotations",` +
		`"spec.templates[*].steps[*][*].inline>metadata.annotations","spec.templates[*].dag.tasks[*].inline>metadata.annotations"]}]}}`
}

func BenchmarkPhase_Index(b *testing.B) {
	text := phaseWorkflow()
	b.ReportAllocs()
	for b.Loop() {
		Parse(text)
	}
}

// BenchmarkPhase_ForEach steps over every template of the phase's Workflow, and reads each one's metadata.
func BenchmarkPhase_ForEach(b *testing.B) {
	text := phaseWorkflow()
	x := Parse(text)
	tmpls := Root(text)
	for _, key := range []string{"request", "object", "spec", "templates"} {
		tmpls, _ = x.Child(tmpls, key)
	}
	if !tmpls.IsArray() {
		b.Fatal("no templates")
	}
	for _, read := range []struct {
		name string
		elem func(gjson.Result) bool
	}{
		{"step", func(gjson.Result) bool { return true }},
		{"child", func(elem gjson.Result) bool { m, _ := x.Child(elem, "metadata"); return m.Exists() }},
	} {
		b.Run(read.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				x.ForEach(tmpls, func(_, elem gjson.Result) bool {
					if read.elem(elem) {
						n++
					}
					return true
				})
			}
		})
	}
}
