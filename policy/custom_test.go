package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// Rules 11-13: kinds declared in customWorkloads, and rule 15 on them. The tests of the rules' revision
// (path syntax, targets, keys of a target map, structured guard entries) each forge what was accepted before it.

const (
	sparkSettings = `{"customWorkloads":[` + sparkEntry + `]}`
	raySettings   = `{"customWorkloads":[{"apiGroup":"ray.io","kind":"RayCluster","annotationPaths":` +
		`["spec.headGroupSpec.template>metadata.annotations","spec.workerGroupSpecs[*].template>metadata.annotations"]}]}`
	pytorchSettings = `{"customWorkloads":[{"apiGroup":"kubeflow.org","kind":"PyTorchJob","annotationPaths":` +
		`["spec.pytorchReplicaSpecs{*}.template>metadata.annotations"]}]}`
	flinkSettings = `{"customWorkloads":[{"apiGroup":"flink.apache.org","kind":"FlinkDeployment","annotationPaths":` +
		`["spec>podTemplate.metadata.annotations","spec.jobManager.podTemplate>metadata.annotations",` +
		`"spec.taskManager.podTemplate>metadata.annotations"],"guardPaths":["spec.flinkConfiguration"]}]}`
	argoWorkflowSettings = `{"customWorkloads":[{"apiGroup":"argoproj.io","kind":"Workflow","annotationPaths":[` +
		`"spec>podMetadata.annotations","spec.templates[*]>metadata.annotations","spec.templateDefaults>metadata.annotations",` +
		`"spec.templates[*].steps[*][*].inline>metadata.annotations","spec.templates[*].dag.tasks[*].inline>metadata.annotations"]},` +
		`{"apiGroup":"argoproj.io","kind":"WorkflowTemplate","annotationPaths":["metadata>annotations"],"guardPaths":[` +
		`"spec.podMetadata.annotations","spec.templates[*].metadata.annotations","spec.templateDefaults.metadata.annotations",` +
		`"spec.templates[*].steps[*][*].inline.metadata.annotations","spec.templates[*].dag.tasks[*].inline.metadata.annotations"]}]}`
	// Two paths naming the Master's map: a wildcard and the role's own path.
	overlappingSettings = `{"customWorkloads":[{"apiGroup":"kubeflow.org","kind":"PyTorchJob","annotationPaths":[` +
		`"spec.pytorchReplicaSpecs{*}.template>metadata.annotations","spec.pytorchReplicaSpecs.Master.template>metadata.annotations"]}]}`
)

var (
	asAlice   = []string{"alice", "devops", "system:authenticated"}
	asBob     = []string{"bob", "qa", "system:authenticated"}
	asAirflow = []string{"airflow", "system:authenticated"}
	// the Ray operator's account, in kube-system so that the default systemUsers match it
	rayOperator = []string{"system:serviceaccount:kube-system:kuberay-operator", "system:serviceaccounts"}
)

// customRequest builds an AdmissionRequest for a declared kind; old is "" on CREATE.
func customRequest(t *testing.T, group, kind string, who []string, object, old string) map[string]any {
	t.Helper()
	req := map[string]any{
		"uid":       "c0ffee",
		"kind":      map[string]any{"group": group, "version": "v1", "kind": kind},
		"operation": "CREATE",
		"userInfo":  map[string]any{"username": who[0], "groups": who[1:]},
		"object":    json.RawMessage(object),
	}
	if old != "" {
		req["operation"], req["oldObject"] = "UPDATE", json.RawMessage(old)
	}
	return req
}

func sparkApp(t *testing.T, who []string, object, old string) map[string]any {
	t.Helper()
	return customRequest(t, "sparkoperator.k8s.io", "SparkApplication", who, object, old)
}

func workflow(t *testing.T, who []string, object, old string) map[string]any {
	t.Helper()
	return customRequest(t, "argoproj.io", "Workflow", who, object, old)
}

func flink(t *testing.T, who []string, object, old string) map[string]any {
	t.Helper()
	return customRequest(t, "flink.apache.org", "FlinkDeployment", who, object, old)
}

// expectObject checks the mutated object against want (JSON text), compared as values.
func expectObject(t *testing.T, resp response, want string) {
	t.Helper()
	if !resp.Accepted || len(resp.MutatedObject) == 0 {
		t.Fatalf("want an accepted mutation, got %+v", resp)
	}
	var got, wantV any
	if err := json.Unmarshal(resp.MutatedObject, &got); err != nil {
		t.Fatalf("mutated_object is not JSON: %v\n%s", err, resp.MutatedObject)
	}
	if err := json.Unmarshal([]byte(want), &wantV); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantV, got); diff != "" {
		t.Fatalf("mutated object (-want +got):\n%s\n%s", diff, resp.MutatedObject)
	}
}

// value is an annotation value as JSON text inside an object.
func value(v string) string { return rawjson.Quote(v) }

var (
	aliceJSON = value(aliceValue)
	bobJSON   = value(bobValue)
)

func TestRule11_EveryTargetIsStamped(t *testing.T) {
	// Rule 11 (rule 3 per target): maps created after ">" when missing or null, kept fields untouched.
	obj := `{"metadata":{"name":"pi","annotations":{"keep":"me"}},"spec":{"type":"Scala","driver":{"cores":1,"annotations":null},` +
		`"executor":{"instances":0,"annotations":{"x":"y"}},"sparkConf":{"spark.ui.enabled":"false"}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asAlice, obj, ""), sparkSettings)
	expectObject(t, resp, `{"metadata":{"name":"pi","annotations":{"keep":"me"}},"spec":{"type":"Scala","driver":{"cores":1,`+
		`"annotations":{"`+AnnotationKey+`":`+aliceJSON+`}},"executor":{"instances":0,"annotations":{"`+AnnotationKey+`":`+aliceJSON+`,"x":"y"}},`+
		`"sparkConf":{"spark.ui.enabled":"false"}}}`)
	if len(resp.Warnings) != 0 {
		t.Fatalf("no warning when nothing was supplied: %q", resp.Warnings)
	}
}

func TestRule11_MissingPrefixNamesNothing(t *testing.T) {
	for _, obj := range []string{`{"spec":{}}`, `{"spec":{"driver":"x","executor":[1]}}`, `{}`, `{"spec":null}`} {
		resp, _ := evaluateReq(t, sparkApp(t, asAlice, obj, ""), sparkSettings)
		expectAccepted(t, resp)
	}
}

func TestRule11_UntrustedValueIsReplacedWithOneWarning(t *testing.T) {
	obj := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}},"executor":{"template":{"metadata":{"annotations":{"` +
		AnnotationKey + `":` + aliceJSON + `}}}}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asBob, obj, ""), sparkSettings)
	expectObject(t, resp, `{"spec":{"driver":{"annotations":{"`+AnnotationKey+`":`+bobJSON+`}},"executor":{"annotations":{"`+AnnotationKey+`":`+bobJSON+
		`},"template":{"metadata":{"annotations":{"`+AnnotationKey+`":`+bobJSON+`}}}}}}`)
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "replaced with the requester's identity in 2 maps") || len(resp.Warnings[0]) >= 120 {
		t.Fatalf("want one warning under 120 characters: %q", resp.Warnings)
	}

	resp, _ = evaluateReq(t, sparkApp(t, asBob, obj, ""), rejectSettings[:len(rejectSettings)-1]+`,"customWorkloads":[`+sparkEntry+`]}`)
	expectRejected(t, resp, "user bob with groups [qa,system:authenticated] is not allowed to set the "+AnnotationKey+" annotation",
		"spec.driver.annotations")
}

func TestRule11_OwnIdentityIsNoMutation(t *testing.T) {
	obj := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}},"executor":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asAlice, obj, ""), sparkSettings)
	expectAccepted(t, resp)
}

func TestRule11_TrustedValueIsValidatedAndKept(t *testing.T) {
	settings := `{"bypassAuth":true,"externalUsers":["^airflow$"],"customWorkloads":[` + sparkEntry + `]}`
	obj := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}},"executor":{}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asAirflow, obj, ""), settings)
	// the value is kept, and the map without one gets it too (rule 11: a trusted external names the user once)
	expectObject(t, resp, `{"spec":{"driver":{"annotations":{"`+AnnotationKey+`":`+aliceJSON+`}},"executor":{"annotations":{"`+
		AnnotationKey+`":`+aliceJSON+`}}}}`)
	bad := `{"spec":{"executor":{"annotations":{"` + AnnotationKey + `":"{\"user\":\"\"}"}}}}`
	resp, _ = evaluateReq(t, sparkApp(t, asAirflow, bad, ""), settings)
	expectRejected(t, resp, "the "+AnnotationKey+" annotation in spec.executor.annotations is not valid: \"user\" must not be empty")
}

func TestRule11_SystemUserObjectIsLeftAlone(t *testing.T) {
	// Rule 4 for the whole object: the Ray operator's RayCluster made from a RayJob, guard maps included.
	obj := `{"spec":{"headGroupSpec":{"template":{"metadata":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}}},` +
		`"workerGroupSpecs":[{"template":{}}]}}`
	req := customRequest(t, "ray.io", "RayCluster", rayOperator, obj, "")
	resp, _ := evaluateReq(t, req, raySettings)
	expectAccepted(t, resp)
	// a trusted system user's value is still validated
	invalid := strings.Replace(obj, aliceJSON, `"{}"`, 1)
	resp, _ = evaluateReq(t, customRequest(t, "ray.io", "RayCluster", rayOperator, invalid, ""), raySettings)
	expectRejected(t, resp, "spec.headGroupSpec.template.metadata.annotations is not valid")
	// not trusted (bypassControllers false): never rejected, never mutated
	resp, _ = evaluateReq(t, customRequest(t, "ray.io", "RayCluster", rayOperator, invalid, ""), `{"bypassControllers":false,`+raySettings[1:])
	expectAccepted(t, resp)
}

func TestRule11_ArrayFormStampsEveryElement(t *testing.T) {
	obj := `{"spec":{"headGroupSpec":{"template":{"metadata":null}},"workerGroupSpecs":[` +
		`{"groupName":"a","template":{"spec":{}}},` +
		`{"groupName":"b","template":{"metadata":{"labels":{"l":"v"}}}},` +
		`"not an object",` +
		`{"groupName":"c"},` +
		`{"groupName":"d","template":{"metadata":{"annotations":{"` + AnnotationKey + `":` + bobJSON + `}}}}]}}`
	resp, _ := evaluateReq(t, customRequest(t, "ray.io", "RayCluster", asAlice, obj, ""), raySettings)
	ann := `{"` + AnnotationKey + `":` + aliceJSON + `}`
	expectObject(t, resp, `{"spec":{"headGroupSpec":{"template":{"metadata":{"annotations":`+ann+`}}},"workerGroupSpecs":[`+
		`{"groupName":"a","template":{"metadata":{"annotations":`+ann+`},"spec":{}}},`+
		`{"groupName":"b","template":{"metadata":{"annotations":`+ann+`,"labels":{"l":"v"}}}},`+
		`"not an object",`+
		`{"groupName":"c"},`+
		`{"groupName":"d","template":{"metadata":{"annotations":`+ann+`}}}]}}`)
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "in 1 map") {
		t.Fatalf("one replaced value, one warning: %q", resp.Warnings)
	}
}

func TestRule11_MapFormStampsEveryMember(t *testing.T) {
	obj := `{"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{}},"Worker":{"replicas":0,"template":{"metadata":{}}},"Odd":3}}}`
	resp, _ := evaluateReq(t, customRequest(t, "kubeflow.org", "PyTorchJob", asAlice, obj, ""), pytorchSettings)
	ann := `{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}`
	expectObject(t, resp, `{"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"metadata":`+ann+`}},`+
		`"Worker":{"replicas":0,"template":{"metadata":`+ann+`}},"Odd":3}}}`)
	dup := `{"spec":{"pytorchReplicaSpecs":{"Worker":{"template":{}},"Worker":{"template":{}}}}}`
	resp, _ = evaluateReq(t, customRequest(t, "kubeflow.org", "PyTorchJob", asAlice, dup, ""), pytorchSettings)
	expectRejected(t, resp, `request.object.spec.pytorchReplicaSpecs.Worker occurs more than once`)
}

func TestRule11_CreationMarkerAndSharedHolders(t *testing.T) {
	// spec>podTemplate...: everything below spec is created; two paths create into the same object.
	settings := `{"customWorkloads":[{"apiGroup":"x.io","kind":"K","annotationPaths":["spec>podTemplate.metadata.annotations",` +
		`"spec>other.metadata.annotations","spec>podTemplate.extra.annotations","spec.jobManager.podTemplate>metadata.annotations"]}]}`
	for _, tc := range []struct{ obj, want string }{
		{`{"spec":{}}`, `{"spec":{"podTemplate":{"metadata":{"annotations":A},"extra":{"annotations":A}},"other":{"metadata":{"annotations":A}}}}`},
		{`{"spec":{"image":"i","podTemplate":null}}`, `{"spec":{"image":"i","podTemplate":{"metadata":{"annotations":A},"extra":{"annotations":A}},"other":{"metadata":{"annotations":A}}}}`},
		{`{"spec":{"jobManager":{"podTemplate":{"spec":{}}}, "other" : {"metadata":null}}}`,
			`{"spec":{"jobManager":{"podTemplate":{"metadata":{"annotations":A},"spec":{}}},"podTemplate":{"metadata":{"annotations":A},"extra":{"annotations":A}},"other":{"metadata":{"annotations":A}}}}`},
		{`{"spec":{"podTemplate":{"metadata":{"annotations":{}}}}}`, `{"spec":{"podTemplate":{"metadata":{"annotations":A},"extra":{"annotations":A}},"other":{"metadata":{"annotations":A}}}}`},
	} {
		resp, _ := evaluateReq(t, customRequest(t, "x.io", "K", asAlice, tc.obj, ""), settings)
		expectObject(t, resp, strings.ReplaceAll(tc.want, "A", `{"`+AnnotationKey+`":`+aliceJSON+`}`))
	}
}

func TestRule11_ArraysOfArraysAreWalked(t *testing.T) {
	// Argo's steps are an array of arrays of steps; an inline template's metadata reaches the step pod last.
	obj := `{"spec":{"templates":[{"name":"main","steps":[[{"name":"a","inline":{"container":{}}}],` +
		`[{"name":"b","inline":{"metadata":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}}},{"name":"c","template":"x"}]]}]}}`
	resp, _ := evaluateReq(t, workflow(t, asBob, obj, ""), argoWorkflowSettings)
	stamp := `{"` + AnnotationKey + `":` + bobJSON + `}`
	expectObject(t, resp, `{"spec":{"podMetadata":{"annotations":`+stamp+`},"templates":[{"metadata":{"annotations":`+stamp+`},"name":"main","steps":[`+
		`[{"name":"a","inline":{"metadata":{"annotations":`+stamp+`},"container":{}}}],`+
		`[{"name":"b","inline":{"metadata":{"annotations":`+stamp+`}}},{"name":"c","template":"x"}]]}]}}`)
	expectWarning(t, resp, "replaced with the requester's identity in 1 map")
}

func TestRule11_DAGInlineTemplatesAreStamped(t *testing.T) {
	obj := `{"spec":{"templates":[{"name":"d","dag":{"tasks":[{"name":"t","inline":{"metadata":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}}}]}}]}}`
	resp, _ := evaluateReq(t, workflow(t, asBob, obj, ""), `{"onUntrustedAnnotation":"reject",`+argoWorkflowSettings[1:])
	expectRejected(t, resp, "is not allowed to set the "+AnnotationKey+" annotation (in spec.templates[0].dag.tasks[0].inline.metadata.annotations)")
}

func TestRule11_AMapNamedByTwoPathsIsOneTarget(t *testing.T) {
	// Both paths name the Master's map: it is stamped once, and a forged value is replaced once.
	obj := `{"spec":{"pytorchReplicaSpecs":{"Master":{"template":{"metadata":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}}},` +
		`"Worker":{"template":{}}}}}`
	resp, _ := evaluateReq(t, customRequest(t, "kubeflow.org", "PyTorchJob", asBob, obj, ""), overlappingSettings)
	stamp := `{"` + AnnotationKey + `":` + bobJSON + `}`
	expectObject(t, resp, `{"spec":{"pytorchReplicaSpecs":{"Master":{"template":{"metadata":{"annotations":`+stamp+`}}},`+
		`"Worker":{"template":{"metadata":{"annotations":`+stamp+`}}}}}}`)
	if strings.Count(string(resp.MutatedObject), AnnotationKey) != 2 {
		t.Fatalf("want one stamp per map: %s", resp.MutatedObject)
	}
	// A map to be created, named by both paths: created once.
	resp, _ = evaluateReq(t, customRequest(t, "kubeflow.org", "PyTorchJob", asBob, `{"spec":{"pytorchReplicaSpecs":{"Master":{"template":{}}}}}`, ""), overlappingSettings)
	expectObject(t, resp, `{"spec":{"pytorchReplicaSpecs":{"Master":{"template":{"metadata":{"annotations":`+stamp+`}}}}}}`)
}

func TestRule11_InvalidTargetKeysAreRefused(t *testing.T) {
	// Argo substitutes {{...}} in keys: the templated key becomes the annotation after the policy stamped.
	for _, key := range []string{"{{workflow.parameters.k}}", "a b", "-x", strings.Repeat("a", 64), "Yunikorn.Apache.Org/", "a/b/c"} {
		obj := `{"spec":{"podMetadata":{"annotations":{"` + key + `":` + aliceJSON + `}}}}`
		for _, settings := range []string{argoWorkflowSettings, `{"onUntrustedAnnotation":"reject",` + argoWorkflowSettings[1:]} {
			resp, _ := evaluateReq(t, workflow(t, asBob, obj, ""), settings)
			expectRejected(t, resp, invalidKeyRefusal("spec.podMetadata.annotations", key))
		}
		// on UPDATE too, unchanged: a change of the workflow's arguments changes what the key becomes
		resp, _ := evaluateReq(t, workflow(t, asBob, obj, obj), argoWorkflowSettings)
		expectRejected(t, resp, invalidKeyRefusal("spec.podMetadata.annotations", key))
		// a trusted requester (the controller) is not refused
		resp, _ = evaluateReq(t, workflow(t, []string{"system:serviceaccount:kube-system:argo"}, obj, obj), argoWorkflowSettings)
		expectAccepted(t, resp)
	}
	// valid keys, upper case in the prefix included (the API server lower-cases it before its check)
	obj := `{"spec":{"podMetadata":{"annotations":{"Example.COM/x":"1","a.b-c_d":"2","` + AnnotationKey + `":` + bobJSON + `}}}}`
	resp, _ := evaluateReq(t, workflow(t, asBob, obj, ""), argoWorkflowSettings)
	expectAccepted(t, resp)
}

func TestRule11_ATrustedExternalNamesTheUserOnce(t *testing.T) {
	settings := `{"bypassAuth":true,"externalUsers":["^airflow$"],` + argoWorkflowSettings[1:]
	stamp := func(v string) string { return `{"` + AnnotationKey + `":` + v + `}` }
	// the front end names alice in podMetadata only: every template gets alice, not the front end
	obj := `{"spec":{"podMetadata":{"annotations":` + stamp(aliceJSON) + `},"templates":[{"name":"a"},{"name":"b","metadata":{}}]}}`
	resp, _ := evaluateReq(t, workflow(t, asAirflow, obj, ""), settings)
	expectObject(t, resp, `{"spec":{"podMetadata":{"annotations":`+stamp(aliceJSON)+`},"templates":[`+
		`{"metadata":{"annotations":`+stamp(aliceJSON)+`},"name":"a"},{"name":"b","metadata":{"annotations":`+stamp(aliceJSON)+`}}]}}`)
	// values that differ are each kept, and the maps without one get the front end's own identity
	obj = `{"spec":{"podMetadata":{"annotations":` + stamp(aliceJSON) + `},"templates":[{"name":"a","metadata":{"annotations":` +
		stamp(bobJSON) + `}},{"name":"b"}]}}`
	resp, _ = evaluateReq(t, workflow(t, asAirflow, obj, ""), settings)
	airflow := value(`{"user":"airflow","groups":["system:authenticated"]}`)
	expectObject(t, resp, `{"spec":{"podMetadata":{"annotations":`+stamp(aliceJSON)+`},"templates":[{"name":"a","metadata":{"annotations":`+
		stamp(bobJSON)+`}},{"metadata":{"annotations":`+stamp(airflow)+`},"name":"b"}]}}`)
	// on UPDATE, a template added gets the one value too
	old := `{"spec":{"podMetadata":{"annotations":` + stamp(aliceJSON) + `},"templates":[{"name":"a","metadata":{"annotations":` + stamp(aliceJSON) + `}}]}}`
	obj = `{"spec":{"podMetadata":{"annotations":` + stamp(aliceJSON) + `},"templates":[{"name":"a","metadata":{"annotations":` + stamp(aliceJSON) + `}},{"name":"b"}]}}`
	resp, _ = evaluateReq(t, workflow(t, asAirflow, obj, old), settings)
	expectObject(t, resp, `{"spec":{"podMetadata":{"annotations":`+stamp(aliceJSON)+`},"templates":[{"name":"a","metadata":{"annotations":`+
		stamp(aliceJSON)+`}},{"metadata":{"annotations":`+stamp(aliceJSON)+`},"name":"b"}]}}`)
	// an untrusted requester's one value is not copied: bob's own identity is stamped
	obj = `{"spec":{"podMetadata":{"annotations":` + stamp(aliceJSON) + `},"templates":[{"name":"a"}]}}`
	resp, _ = evaluateReq(t, workflow(t, asBob, obj, ""), settings)
	expectObject(t, resp, `{"spec":{"podMetadata":{"annotations":`+stamp(bobJSON)+`},"templates":[{"metadata":{"annotations":`+stamp(bobJSON)+`},"name":"a"}]}}`)
}

func TestCustomCreate_NonObjectMapsAreBadInput(t *testing.T) {
	for _, tc := range []struct{ obj, want string }{
		{`{"spec":{"driver":{"annotations":"x"}}}`, "request.object.spec.driver.annotations must be an object of strings"},
		{`{"spec":{"driver":{"annotations":[]}}}`, "request.object.spec.driver.annotations must be an object of strings"},
		{`{"spec":{"driver":{"template":{"metadata":5}}}}`, "request.object.spec.driver.template.metadata must be an object"},
		{`{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":7}}}}`, `request.object.spec.driver.annotations["` + AnnotationKey + `"] must be a string`},
		{`{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":"a","` + AnnotationKey + `":"b"}}}}`, `request.object.spec.driver.annotations["` + AnnotationKey + `"] occurs more than once`},
		{`{"spec":{"driver":{},"driver":{}}}`, `request.object.spec.driver occurs more than once`},
		{`{"spec":{"sparkConf":"x"}}`, "request.object.spec.sparkConf must be an object"},
		{`[]`, "request.object is missing or not an object"},
	} {
		resp, _ := evaluateReq(t, sparkApp(t, asAlice, tc.obj, ""), sparkSettings)
		expectRejected(t, resp, tc.want)
	}
	req := sparkApp(t, asAlice, `{}`, "")
	delete(req, "object")
	resp, _ := evaluateReq(t, req, sparkSettings)
	expectRejected(t, resp, "request.object is missing")
	req = sparkApp(t, asAlice, `{}`, "")
	delete(req, "userInfo")
	resp, _ = evaluateReq(t, req, sparkSettings)
	expectRejected(t, resp, "request.userInfo is missing")
}

func TestCustomCreate_UndeclaredKindsAreAccepted(t *testing.T) {
	obj := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":"forged"}}}}`
	for _, gk := range [][2]string{{"sparkoperator.k8s.io", "ScheduledSparkApplication"}, {"other.io", "SparkApplication"}} {
		resp, _ := evaluateReq(t, customRequest(t, gk[0], gk[1], asBob, obj, ""), sparkSettings)
		expectAccepted(t, resp)
	}
	req := sparkApp(t, asBob, obj, "")
	req["operation"] = "DELETE"
	resp, _ := evaluateReq(t, req, sparkSettings)
	expectAccepted(t, resp)
}

func TestRule12_UnchangedIsNoMutation(t *testing.T) {
	old := `{"spec":{"driver":{"cores":1,"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}},"executor":{}}}`
	obj := `{"spec":{"driver":{"cores":2,"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}},"executor":{"instances":5}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asBob, obj, old), sparkSettings)
	expectAccepted(t, resp)
}

func TestRule12_UntrustedChangeIsRestored(t *testing.T) {
	old := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}},"executor":{"annotations":{"a":"b"}}}}`
	obj := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + bobJSON + `}},"executor":{"annotations":{"a":"b","` + AnnotationKey + `":` + bobJSON + `}}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asBob, obj, old), sparkSettings)
	expectObject(t, resp, old)
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "restored to its previous value in 2 maps") || len(resp.Warnings[0]) >= 120 {
		t.Fatalf("%q", resp.Warnings)
	}
	// removed, and the map removed: put back, the map created again
	for _, removed := range []string{`{"spec":{"driver":{"annotations":{}},"executor":{"annotations":{"a":"b"}}}}`, `{"spec":{"driver":{},"executor":{"annotations":{"a":"b"}}}}`} {
		resp, _ = evaluateReq(t, sparkApp(t, asBob, removed, old), sparkSettings)
		expectObject(t, resp, old)
	}
	resp, _ = evaluateReq(t, sparkApp(t, asBob, obj, old), `{"onUntrustedAnnotation":"reject",`+sparkSettings[1:])
	expectRejected(t, resp, "user bob with groups [qa,system:authenticated] is not allowed to change the "+AnnotationKey+
		" annotation in spec.driver.annotations of this SparkApplication")
}

func TestRule12_TrustedChangeIsValidated(t *testing.T) {
	settings := `{"bypassAuth":true,"externalUsers":["^airflow$"],"customWorkloads":[` + sparkEntry + `]}`
	old := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}}}`
	obj := `{"spec":{"driver":{"annotations":{"` + AnnotationKey + `":` + bobJSON + `}}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asAirflow, obj, old), settings)
	expectAccepted(t, resp)
	resp, _ = evaluateReq(t, sparkApp(t, asAirflow, `{"spec":{"driver":{"annotations":{"`+AnnotationKey+`":"null"}}}}`, old), settings)
	expectRejected(t, resp, "spec.driver.annotations is not valid")
}

func TestRule12_NewTargetIsHandledAsOnCreate(t *testing.T) {
	ann := func(v string) string { return `{"metadata":{"annotations":{"` + AnnotationKey + `":` + v + `}}}` }
	old := `{"spec":{"headGroupSpec":{"template":` + ann(aliceJSON) + `},"workerGroupSpecs":[{"template":` + ann(aliceJSON) + `}]}}`
	// bob adds two worker groups, one with alice's identity copied in: both get bob's
	obj := `{"spec":{"headGroupSpec":{"template":` + ann(aliceJSON) + `},"workerGroupSpecs":[{"template":` + ann(aliceJSON) + `},{"template":{}},{"template":` + ann(aliceJSON) + `}]}}`
	resp, _ := evaluateReq(t, customRequest(t, "ray.io", "RayCluster", asBob, obj, old), raySettings)
	expectObject(t, resp, `{"spec":{"headGroupSpec":{"template":`+ann(aliceJSON)+`},"workerGroupSpecs":[{"template":`+ann(aliceJSON)+`},{"template":`+ann(bobJSON)+`},{"template":`+ann(bobJSON)+`}]}}`)
	// a removed group needs nothing
	resp, _ = evaluateReq(t, customRequest(t, "ray.io", "RayCluster", asBob, `{"spec":{"headGroupSpec":{"template":`+ann(aliceJSON)+`},"workerGroupSpecs":[]}}`, old), raySettings)
	expectAccepted(t, resp)
	resp, _ = evaluateReq(t, customRequest(t, "ray.io", "RayCluster", asBob, obj, ""), raySettings)
	if len(resp.MutatedObject) == 0 {
		t.Fatal("CREATE stamps")
	}
	req := customRequest(t, "ray.io", "RayCluster", asBob, obj, old)
	delete(req, "oldObject")
	resp, _ = evaluateReq(t, req, raySettings)
	expectRejected(t, resp, "request.oldObject is missing")
}

func TestRule12_AMapNamedByTwoPathsIsRestoredOnce(t *testing.T) {
	master := func(annotations string) string {
		return `{"spec":{"pytorchReplicaSpecs":{"Master":{"template":{"metadata":{"annotations":` + annotations + `}}}}}}`
	}
	old := master(`{"` + AnnotationKey + `":` + bobJSON + `}`)
	// changed: restored
	resp, _ := evaluateReq(t, customRequest(t, "kubeflow.org", "PyTorchJob", asBob, master(`{"`+AnnotationKey+`":`+aliceJSON+`}`), old), overlappingSettings)
	expectObject(t, resp, old)
	// added where there was none: removed
	resp, _ = evaluateReq(t, customRequest(t, "kubeflow.org", "PyTorchJob", asBob, master(`{"`+AnnotationKey+`":`+aliceJSON+`,"k":"v"}`), master(`{"k":"v"}`)), overlappingSettings)
	expectObject(t, resp, master(`{"k":"v"}`))
}

func TestRule12_AnUnchangedSpecIsPairedWithItself(t *testing.T) {
	// A status write leaves spec as it was: the maps in it are paired with themselves (one walk), and what
	// the rules read on every UPDATE is still read.
	spec := `"spec":{"templates":[{"name":"a","metadata":{"annotations":{"` + AnnotationKey + `":` + aliceJSON + `}}},{"name":"b"}]}`
	obj, old := `{"metadata":{"generation":2},`+spec+`,"status":{"phase":"Running"}}`, `{"metadata":{"generation":1},`+spec+`}`
	controller := []string{"system:serviceaccount:kube-system:argo"}
	for _, who := range [][]string{controller, asBob} {
		resp, _ := evaluateReq(t, workflow(t, who, obj, old), argoWorkflowSettings)
		expectAccepted(t, resp)
		if len(resp.MutatedObject) != 0 || len(resp.Warnings) != 0 {
			t.Fatalf("%s: an unchanged spec needs no change: %+v", who[0], resp)
		}
	}
	// the old object's own bad input is still found: spec twice
	resp, _ := evaluateReq(t, workflow(t, controller, obj, `{`+spec+`,`+spec+`}`), argoWorkflowSettings)
	expectRejected(t, resp, `request.oldObject.spec occurs more than once`)
	// a changed spec is compared map by map: alice's value added by bob to the second template is removed
	changed := strings.Replace(spec, `{"name":"b"}`, `{"name":"b","metadata":{"annotations":{"`+AnnotationKey+`":`+aliceJSON+`}}}`, 1)
	resp, _ = evaluateReq(t, workflow(t, asBob, `{`+changed+`}`, `{`+spec+`}`), argoWorkflowSettings)
	expectObject(t, resp, `{`+strings.Replace(spec, `{"name":"b"}`, `{"name":"b","metadata":{"annotations":{}}}`, 1)+`}`)
}

func TestRule13_UntrustedEntryNamingTheAnnotationIsRejected(t *testing.T) {
	for _, conf := range []string{
		`{"spark.kubernetes.driver.annotation.` + AnnotationKey + `":"{\"user\":\"alice\"}"}`,
		`{"spark.kubernetes.driver.annotation.x":"` + AnnotationKey + `"}`,
		`{"spark.kubernetes.driver.annotation.yunikorn.apache.org\/user\u002einfo":"x"}`,
	} {
		obj := `{"spec":{"driver":{},"sparkConf":` + conf + `}}`
		for _, settings := range []string{sparkSettings, `{"onUntrustedAnnotation":"reject",` + sparkSettings[1:]} {
			resp, _ := evaluateReq(t, sparkApp(t, asBob, obj, ""), settings)
			expectRejected(t, resp, "the spec.sparkConf entry spark.kubernetes.driver.annotation.", " sets the "+AnnotationKey+
				" annotation: only trusted controllers and allow-listed submitters may")
		}
		// unchanged on UPDATE: accepted (it was there before, or a trusted requester put it there)
		resp, _ := evaluateReq(t, sparkApp(t, asBob, obj, obj), sparkSettings)
		expectAccepted(t, resp)
		// a trusted requester may, and so may a system user creating the object
		resp, _ = evaluateReq(t, sparkApp(t, asAirflow, obj, ""), `{"bypassAuth":true,"externalUsers":["^airflow$"],`+sparkSettings[1:])
		if !resp.Accepted {
			t.Fatalf("trusted: %+v", resp)
		}
		resp, _ = evaluateReq(t, sparkApp(t, rayOperator, obj, ""), sparkSettings)
		expectAccepted(t, resp)
	}
	old := `{"spec":{"sparkConf":{"spark.kubernetes.driver.annotation.x":"` + AnnotationKey + `"}}}`
	changed := `{"spec":{"sparkConf":{"spark.kubernetes.driver.annotation.x":"` + AnnotationKey + ` "}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asBob, changed, old), sparkSettings)
	expectRejected(t, resp, "the spec.sparkConf entry spark.kubernetes.driver.annotation.x sets")
	resp, _ = evaluateReq(t, sparkApp(t, asBob, `{"spec":{"sparkConf":{"spark.executor.cores":"4"}}}`, ""), sparkSettings)
	expectAccepted(t, resp)
}

func TestRule13_StructuredGuardEntriesAreFlattened(t *testing.T) {
	forged := `"` + AnnotationKey + `:{\"user\":\"alice\"}"`
	for _, conf := range []string{
		// flat, as before
		`{"kubernetes.jobmanager.annotations":` + forged + `}`,
		// nested names joined with "."
		`{"kubernetes.jobmanager":{"annotations":` + forged + `}}`,
		// a list value
		`{"kubernetes.jobmanager.annotations":["a:b",` + forged + `]}`,
		// a map option's prefixed key
		`{"kubernetes.jobmanager.annotations":{"` + AnnotationKey + `":"{\"user\":\"alice\"}"}}`,
		// the key split over nesting levels
		`{"kubernetes":{"jobmanager":{"annotations":{"yunikorn":{"apache":{"org/user.info":"{\"user\":\"alice\"}"}}}}}}`,
		// escaped
		`{"kubernetes":{"jobmanager":{"annotations":{"yunikorn.apache.org\/user\u002einfo":{}}}}}`,
	} {
		obj := `{"spec":{"flinkConfiguration":` + conf + `}}`
		resp, _ := evaluateReq(t, flink(t, asBob, obj, ""), flinkSettings)
		expectRejected(t, resp, "the spec.flinkConfiguration entry kubernetes", " sets the "+AnnotationKey+" annotation")
		// unchanged on UPDATE: accepted
		resp, _ = evaluateReq(t, flink(t, asBob, obj, obj), flinkSettings)
		if !resp.Accepted {
			t.Fatalf("unchanged %s: %+v", conf, resp)
		}
		// changed elsewhere in the member: refused
		before := `{"spec":{"flinkConfiguration":{"kubernetes":"x","kubernetes.jobmanager":"x","kubernetes.jobmanager.annotations":"x"}}}`
		resp, _ = evaluateReq(t, flink(t, asBob, obj, before), flinkSettings)
		expectRejected(t, resp, "sets the "+AnnotationKey+" annotation")
	}
	// ordinary nested configuration passes
	obj := `{"spec":{"flinkConfiguration":{"taskmanager":{"numberOfTaskSlots":"2","memory":[1,2,{"a":null}]},"x":{}}}}`
	resp, _ := evaluateReq(t, flink(t, asBob, obj, obj), flinkSettings)
	expectAccepted(t, resp)
}

func TestRule13_TemplateKeysAreRefused(t *testing.T) {
	tmpl := func(annotations string) string {
		return `{"spec":{"templates":[{"name":"t","metadata":{"annotations":` + annotations + `}}]}}`
	}
	obj := tmpl(`{"{{workflow.parameters.k}}":"{\"user\":\"alice\"}"}`)
	req := customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, obj, "")
	resp, _ := evaluateReq(t, req, argoWorkflowSettings)
	expectRejected(t, resp, templateKeyRefusal("spec.templates[0].metadata.annotations", "{{workflow.parameters.k}}"))
	// unchanged on UPDATE: refused all the same
	resp, _ = evaluateReq(t, customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, obj, obj), argoWorkflowSettings)
	expectRejected(t, resp, "is a template key")
	// A WorkflowTemplate's maps that reach pods carry no identity: even the author's own.
	own := tmpl(`{"` + AnnotationKey + `":` + aliceJSON + `}`)
	resp, _ = evaluateReq(t, customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, own, ""), argoWorkflowSettings)
	expectRejected(t, resp, guardRefusal("spec.templates[0].metadata.annotations", AnnotationKey))
	inline := `{"spec":{"templates":[{"name":"s","steps":[[{"name":"x","inline":{"metadata":{"annotations":{"a":"` + AnnotationKey + `"}}}}]]}]}}`
	resp, _ = evaluateReq(t, customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, inline, ""), argoWorkflowSettings)
	expectRejected(t, resp, guardRefusal("spec.templates[0].steps[0][0].inline.metadata.annotations", "a"))
}

func TestCustomEdits_OneSpanPerObject(t *testing.T) {
	// The one-pass splice writes valid JSON whatever the spacing, for every map alone and for all of them
	// at once.
	doc := ` { "spec" : { "a" : { } , "b" : null , "c" : { "annotations" : { "k" : "v" } } } } `
	p, _ := walk.Parse("spec>a.annotations", false, false)
	q, _ := walk.Parse("spec>b.annotations", false, false)
	r, _ := walk.Parse("spec.c>annotations", false, false)
	c := walk.Walker{Field: "request.object", Entry: AnnotationKey}
	for _, path := range []*walk.Path{&p, &q, &r} {
		if problem := c.Walk(rawjson.Root(doc), path); problem.Found() {
			t.Fatal(problem)
		}
	}
	e := edits{doc: doc}
	for i := range c.Refs {
		e.set(&c.Refs[i], AnnotationKey, rawjson.Texts(nil, `"v"`))
	}
	out, problem := e.result()
	if problem != "" {
		t.Fatal(problem)
	}
	var got any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for i := range c.Refs {
		one := edits{doc: doc}
		one.set(&c.Refs[i], AnnotationKey, rawjson.Texts(nil, `"v"`))
		single, problem := one.result()
		if problem != "" {
			t.Fatal(problem)
		}
		if err := json.Unmarshal([]byte(single.String()), &got); err != nil {
			t.Fatalf("%v: %s", err, single.String())
		}
	}
}

func TestCustomWarning_IsOneShortLine(t *testing.T) {
	for _, n := range [][2]int{{1, 0}, {0, 1}, {1, 1}, {999, 0}, {0, 999}, {999, 999}} {
		if w := customWarning(n[0], n[1]); len(w) >= 120 || strings.Contains(w, "\n") {
			t.Errorf("%d replaced, %d restored: %d characters: %q", n[0], n[1], len(w), w)
		}
	}
}
