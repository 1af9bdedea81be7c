package policy

import (
	"strings"
	"testing"
)

// The revision of rules 11-13 (path syntax, targets, keys of a target map, structured guard entries) and
// rule 15 on declared kinds. Each forgery here was accepted before the revision.

const (
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

func workflow(t *testing.T, who []string, object, old string) map[string]any {
	t.Helper()
	return customRequest(t, "argoproj.io", "Workflow", who, object, old)
}

func flink(t *testing.T, who []string, object, old string) map[string]any {
	t.Helper()
	return customRequest(t, "flink.apache.org", "FlinkDeployment", who, object, old)
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

func TestRule11_InvalidTargetKeysAreRefused(t *testing.T) {
	// Argo substitutes {{...}} in keys: the templated key becomes the annotation after the policy stamped.
	for _, key := range []string{"{{workflow.parameters.k}}", "a b", "-x", strings.Repeat("a", 64), "Yunikorn.Apache.Org/", "a/b/c"} {
		obj := `{"spec":{"podMetadata":{"annotations":{"` + key + `":` + aliceJSON + `}}}}`
		for _, settings := range []string{argoWorkflowSettings, `{"onUntrustedAnnotation":"reject",` + argoWorkflowSettings[1:]} {
			resp, _ := evaluateReq(t, workflow(t, asBob, obj, ""), settings)
			expectRejected(t, resp, InvalidKeyRefusal("spec.podMetadata.annotations", key))
		}
		// on UPDATE too, unchanged: a change of the workflow's arguments changes what the key becomes
		resp, _ := evaluateReq(t, workflow(t, asBob, obj, obj), argoWorkflowSettings)
		expectRejected(t, resp, InvalidKeyRefusal("spec.podMetadata.annotations", key))
		// a trusted requester (the controller) is not refused
		resp, _ = evaluateReq(t, workflow(t, []string{"system:serviceaccount:kube-system:argo"}, obj, obj), argoWorkflowSettings)
		expectAccepted(t, resp)
	}
	// valid keys, upper case in the prefix included (the API server lower-cases it before its check)
	obj := `{"spec":{"podMetadata":{"annotations":{"Example.COM/x":"1","a.b-c_d":"2","` + AnnotationKey + `":` + bobJSON + `}}}}`
	resp, _ := evaluateReq(t, workflow(t, asBob, obj, ""), argoWorkflowSettings)
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
	expectRejected(t, resp, TemplateKeyRefusal("spec.templates[0].metadata.annotations", "{{workflow.parameters.k}}"))
	// unchanged on UPDATE: refused all the same
	resp, _ = evaluateReq(t, customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, obj, obj), argoWorkflowSettings)
	expectRejected(t, resp, "is a template key")
	// A WorkflowTemplate's maps that reach pods carry no identity: even the author's own.
	own := tmpl(`{"` + AnnotationKey + `":` + aliceJSON + `}`)
	resp, _ = evaluateReq(t, customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, own, ""), argoWorkflowSettings)
	expectRejected(t, resp, GuardRefusal("spec.templates[0].metadata.annotations", AnnotationKey))
	inline := `{"spec":{"templates":[{"name":"s","steps":[[{"name":"x","inline":{"metadata":{"annotations":{"a":"` + AnnotationKey + `"}}}}]]}]}}`
	resp, _ = evaluateReq(t, customRequest(t, "argoproj.io", "WorkflowTemplate", asAlice, inline, ""), argoWorkflowSettings)
	expectRejected(t, resp, GuardRefusal("spec.templates[0].steps[0][0].inline.metadata.annotations", "a"))
}

func TestLeaves_DeepNestingIsReadWithoutRecursion(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 100000) + `"` + AnnotationKey + `"` + strings.Repeat("}", 100000)
	found := false
	eachLeaf(deep, "k", func(l leaf) bool {
		found = l.isString && l.text == AnnotationKey && strings.Count(l.key, ".") == 100000
		return true
	})
	if !found {
		t.Fatal("the deepest leaf was not read")
	}
	var got []string
	eachLeaf(`{"a":[1,{"b":"x","c":[]}],"d":{},"e":null}`, "top", func(l leaf) bool {
		got = append(got, l.key+"="+l.text)
		return true
	})
	if want := "top.a= top.a.b=x top.a.c= top.d= top.e="; strings.Join(got, " ") != want {
		t.Fatalf("leaves: %q, want %q", strings.Join(got, " "), want)
	}
}

func TestLogs_ALongUsernameIsCutInLogsNotInStamps(t *testing.T) {
	name := strings.Repeat("u", 64<<10)
	req := fixture(t, "pod-create-bob-forged")
	req["userInfo"] = map[string]any{"username": name}
	resp, logs := evaluateReq(t, req, "")
	if !resp.Accepted || !strings.Contains(string(resp.MutatedObject), name) {
		t.Fatalf("the stamp carries the whole name: %.300s", resp.MutatedObject)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if len(line) > 3<<10 {
			t.Fatalf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	if !strings.Contains(logs, "... (65536 bytes)") {
		t.Fatalf("the log says how long the name was: %.300s", logs)
	}
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
	expectRejected(t, resp, `"spec"`)
	// a changed spec is compared map by map: alice's value added by bob to the second template is removed
	changed := strings.Replace(spec, `{"name":"b"}`, `{"name":"b","metadata":{"annotations":{"`+AnnotationKey+`":`+aliceJSON+`}}}`, 1)
	resp, _ = evaluateReq(t, workflow(t, asBob, `{`+changed+`}`, `{`+spec+`}`), argoWorkflowSettings)
	expectObject(t, resp, `{`+strings.Replace(spec, `{"name":"b"}`, `{"name":"b","metadata":{"annotations":{}}}`, 1)+`}`)
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
