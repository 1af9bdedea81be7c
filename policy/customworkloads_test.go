package policy

import (
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// Every built-in kind's Kind.Path parses, and is walked by the same code as a declared path.
func TestPaths_TheTableUsesTheSameSyntax(t *testing.T) {
	for _, k := range Kinds() {
		p, problem := walk.Parse(k.Path, false, true)
		if problem != "" {
			t.Errorf("%s: %q: %s", k.Kind, k.Path, problem)
		}
		if p.Plain != strings.ReplaceAll(strings.TrimPrefix(k.Path, ">"), ">", ".") {
			t.Errorf("%s: plain %q", k.Kind, p.Plain)
		}
	}
}

const sparkEntry = `{"apiGroup":"sparkoperator.k8s.io","kind":"SparkApplication","annotationPaths":["spec.driver>annotations",` +
	`"spec.executor>annotations","spec.driver.template>metadata.annotations","spec.executor.template>metadata.annotations"],` +
	`"guardPaths":["spec.sparkConf"]}`

func TestSettings_CustomWorkloadsAreRead(t *testing.T) {
	s, problem := CheckSettings([]byte(`{"customWorkloads":[` + sparkEntry + `,{"apiGroup":"","kind":"PodTemplate","annotationPaths":["template>metadata.annotations"],"guardPaths":null}]}`))
	if problem != "" {
		t.Fatal(problem)
	}
	kinds, problems := s.CustomWorkloads()
	if len(problems) > 0 || len(kinds) != 2 {
		t.Fatalf("%v %v", kinds, problems)
	}
	if kinds[0].Kind != "SparkApplication" || len(kinds[0].annotations) != 4 || len(kinds[0].guards) != 1 || kinds[1].APIGroup != "" {
		t.Fatalf("%+v", kinds)
	}
	c, problem := s.customKind("sparkoperator.k8s.io", "SparkApplication")
	if problem != "" || c == nil || len(c.AnnotationPaths) != 4 {
		t.Fatalf("customKind: %+v %q", c, problem)
	}
	for _, other := range [][2]string{{"sparkoperator.k8s.io", "ScheduledSparkApplication"}, {"", "SparkApplication"}, {"sparkoperator.k8s.io", "sparkapplication"}} {
		if c, _ := s.customKind(other[0], other[1]); c != nil {
			t.Errorf("%v is not declared, got %+v", other, c)
		}
	}
	for _, none := range []string{`{}`, `{"customWorkloads":null}`, `{"customWorkloads":[]}`} {
		s, problem := CheckSettings([]byte(none))
		if problem != "" || s.customWorkloads != "" && s.customWorkloads != "[]" {
			t.Errorf("%s: %q %q", none, problem, s.customWorkloads)
		}
	}
}

func TestSettings_CustomWorkloadsMistakesAreNamed(t *testing.T) {
	entry := func(fields string) string { return `{"customWorkloads":[` + fields + `]}` }
	spark := func(paths string) string {
		return entry(`{"apiGroup":"sparkoperator.k8s.io","kind":"SparkApplication","annotationPaths":` + paths + `}`)
	}
	for _, tc := range []struct {
		name, settings, want string
	}{
		{"not a list", `{"customWorkloads":{"apiGroup":"x"}}`, "customWorkloads: must be a list of {apiGroup, kind, annotationPaths, guardPaths} objects, not an object"},
		{"entry not an object", entry(`"SparkApplication"`), "customWorkloads[0]: must be an object"},
		{"unknown key", entry(`{"apiGroup":"a","kind":"K","annotationPath":["x"]}`), `customWorkloads[0]: unknown key "annotationPath": valid keys are apiGroup, kind, annotationPaths, guardPaths`},
		{"key twice", entry(`{"apiGroup":"a","kind":"K","kind":"L","annotationPaths":["x"]}`), `customWorkloads[0]: the key "kind" occurs more than once`},
		{"no group", entry(`{"kind":"K","annotationPaths":["x"]}`), "customWorkloads[0].apiGroup: must be a string"},
		{"no kind", entry(`{"apiGroup":"a","annotationPaths":["x"]}`), "customWorkloads[0].kind: must be a non-empty string"},
		{"empty kind", entry(`{"apiGroup":"a","kind":"","annotationPaths":["x"]}`), "customWorkloads[0].kind: must be a non-empty string"},
		{"no paths", entry(`{"apiGroup":"a","kind":"K"}`), "customWorkloads[0].annotationPaths: must be a non-empty list of paths"},
		{"paths null", entry(`{"apiGroup":"a","kind":"K","annotationPaths":null}`), "customWorkloads[0].annotationPaths: must be a non-empty list of paths"},
		{"paths empty", spark(`[]`), "customWorkloads[0].annotationPaths: is empty"},
		{"path a string", spark(`"spec.driver>annotations"`), "customWorkloads[0].annotationPaths: must be a non-empty list of paths"},
		{"path not a string", spark(`["spec.driver>annotations",3]`), "customWorkloads[0].annotationPaths[1]: must be a string"},
		{"bad path", spark(`["spec.driver>annotations","spec>executor>annotations"]`), `customWorkloads[0].annotationPaths[1]: "spec>executor>annotations": the path has more than one ">"`},
		{"wildcard after marker", spark(`["spec>groups[*].annotations"]`), `customWorkloads[0].annotationPaths[0]: "spec>groups[*].annotations": a wildcard may not follow ">"`},
		{"nested maps", spark(`["spec.driver>annotations","spec.driver.annotations.x>annotations"]`), `customWorkloads[0].annotationPaths[1]: "spec.driver.annotations.x>annotations" lies inside the map of annotationPaths[0]`},
		{"guard with marker", entry(`{"apiGroup":"a","kind":"K","annotationPaths":["x"],"guardPaths":["spec>conf"]}`), `customWorkloads[0].guardPaths[0]: "spec>conf": a guard path names existing maps only`},
		{"guards not a list", entry(`{"apiGroup":"a","kind":"K","annotationPaths":["x"],"guardPaths":"spec.conf"}`), `customWorkloads[0].guardPaths: must be a list of paths`},
		{"built-in kind", entry(`{"apiGroup":"apps","kind":"Deployment","annotationPaths":["spec.template>metadata.annotations"]}`), "customWorkloads[0]: apps Deployment is handled by the policy itself and may not be declared"},
		{"built-in core kind", entry(`{"apiGroup":"","kind":"Binding","annotationPaths":["metadata.annotations"]}`), "customWorkloads[0]: the core kind Binding is handled by the policy itself"},
		{"declared twice", `{"customWorkloads":[` + sparkEntry + `,` + sparkEntry + `]}`, "customWorkloads[1]: sparkoperator.k8s.io SparkApplication is declared twice (first at customWorkloads[0])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problem := CheckSettings([]byte(tc.settings))
			if !strings.Contains(problem, tc.want) {
				t.Fatalf("problem %q\nwant it to contain %q", problem, tc.want)
			}
			out := string(ValidateSettings([]byte(tc.settings)))
			if !strings.Contains(out, `"valid":false`) {
				t.Fatalf("validate_settings: %s", out)
			}
		})
	}
}

// A request of a kind outside the table is accepted without reading the settings when they declare no kind,
// and a request of a built-in kind never parses customWorkloads (a broken entry does not affect it: only
// validate_settings, which refuses it at start-up, reads every entry).
func TestSettings_CustomWorkloadsAreParsedOnlyForTheirKind(t *testing.T) {
	req := fixture(t, "deployment-create-alice")
	resp, _ := evaluateReq(t, req, `{"customWorkloads":[{"apiGroup":"x","kind":"Y","annotationPaths":["a>>b"]}]}`)
	if !resp.Accepted || len(resp.MutatedObject) == 0 {
		t.Fatalf("the Deployment must be stamped as usual: %+v", resp)
	}
	req["kind"] = map[string]any{"group": "x", "version": "v1", "kind": "Y"}
	resp, _ = evaluateReq(t, req, `{"customWorkloads":[{"apiGroup":"x","kind":"Y","annotationPaths":["a>>b"]}]}`)
	expectRejected(t, resp, `the policy settings are not valid: customWorkloads[0].annotationPaths[0]: "a>>b"`)
	req["kind"] = map[string]any{"group": "x", "version": "v1", "kind": "Z"}
	resp, _ = evaluateReq(t, req, `{"customWorkloads":[{"apiGroup":"x","kind":"Y","annotationPaths":["a>>b"]}]}`)
	expectAccepted(t, resp)
	resp, _ = evaluateReq(t, req, `{"bypassAuth":"not a flag"}`)
	expectAccepted(t, resp) // no declared kinds: a kind outside the table is not ours, whatever else the settings say
}
