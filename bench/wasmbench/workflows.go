package wasmbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Custom resources with many targets (docs/rules.md, the Cost paragraph of "Custom-resource workloads
// (rules 11-13)"): deciding one must cost within ten times a Pod of the same bytes. Each workflow
// scenario is measured beside such a Pod, taking turns with it.

// workflowCases are the objects the rule names: a Workflow of 16,000 empty templates, one of 40,000
// (120 KB, refused by the bounded answer: over 3 MiB once stamped) and one of 600,000 (1.8 MB: refused as
// soon as one path names too many maps), one of 800 ordinary templates with
// kubectl's last-applied copy, the controller's status write to a Workflow of 6,000 stamped templates
// (trusted, spec unchanged), and bob's UPDATEs near policy-server's 2 MB: of 300,000 empty templates, spec
// unchanged and changed; of 180,000 templates each unlike its old self; adding 600,000 (refused), also with
// the old object's bad input; removing 600,000, the last bad input (refused).
var workflowCases = []struct {
	name, template, operation, username string
	templates                           int
	lastApplied, refused                bool
	specChanged                         bool // an UPDATE's spec differs from the old object's (entrypoint)
	// old, when set, is the old object's template, oldTemplates of it (the new object's otherwise), then
	// oldLast when set
	old, oldLast string
	oldTemplates int
}{
	{"wf-16k-empty", `{}`, "CREATE", "bob", 16000, false, false, false, "", "", 0},
	{"wf-40k-empty", `{}`, "CREATE", "bob", 40000, false, true, false, "", "", 0},
	{"wf-600k-empty", `{}`, "CREATE", "bob", 600000, false, true, false, "", "", 0},
	{"wf-800-applied", OrdinaryTemplate, "CREATE", "bob", 800, true, false, false, "", "", 0},
	{"wf-6k-status", `{"name":"t","metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"bob\"}"}}}`,
		"UPDATE", "system:serviceaccount:argo:argo", 6000, false, false, false, "", "", 0},
	{"wf-300k-unchanged", `{}`, "UPDATE", "bob", 300000, false, false, false, "", "", 0},
	{"wf-300k-changed", `{}`, "UPDATE", "bob", 300000, false, false, true, "", "", 0},
	// every template differs from its old self, and all are new (the old object has none)
	{"wf-180k-differ", `{"a":0}`, "UPDATE", "bob", 180000, false, false, false, `{}`, "", 180000},
	{"wf-600k-added", `{}`, "UPDATE", "bob", 600000, false, true, false, `{}`, "", 0},
	// the same with bad input in the old object (after every template it holds)
	{"wf-600k-added-old-bad", `{}`, "UPDATE", "bob", 600000, false, true, false, `{}`, `{"metadata":1}`, 0},
	{"wf-600k-removed-old-bad", `{}`, "UPDATE", "bob", 0, false, true, false, `{}`, `{"metadata":1}`, 600000},
}

// OrdinaryTemplate is a workflow step as users write them, with a container, parameters and labels.
const OrdinaryTemplate = `{"name":"step","metadata":{"labels":{"app":"x"}},"container":{"image":"registry.example.com/team/app:1.4.2",` +
	`"command":["/bin/app"],"args":["--input","{{inputs.parameters.x}}","--verbose"],"resources":{"requests":{"cpu":"250m","memory":"128Mi"}},` +
	`"env":[{"name":"MODE","value":"production"},{"name":"LEVEL","value":"info"}]},"inputs":{"parameters":[{"name":"x"}]}}`

// exampleSettings reads the settings of the example named name (testdata/settings beside the fixtures
// directory dir), compacted as policy-server hands them to the policy.
func exampleSettings(dir, name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "..", "settings", name+".json"))
	if err != nil {
		return "", err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return "", err
	}
	return compact.String(), nil
}

// workflowScenarios builds each case with the Argo example's settings, and a Pod of the same bytes.
func workflowScenarios(dir string, pod []byte, wrap func([]byte, string) []byte) ([]scenario, error) {
	settings, err := exampleSettings(dir, "argo-workflows")
	if err != nil {
		return nil, err
	}
	var out []scenario
	for _, c := range workflowCases {
		req := WorkflowRequest(c.templates, c.template, c.operation, c.username, c.lastApplied)
		if c.specChanged { // the object's first entrypoint: every map is walked in both objects
			req = bytes.Replace(req, []byte(`"entrypoint":"main"`), []byte(`"entrypoint":"other"`), 1)
		}
		if c.old != "" {
			old := WorkflowRequest(c.oldTemplates, c.old, c.operation, c.username, false)
			if c.oldLast != "" {
				last := []byte(c.oldLast + `]}}}`)
				if c.oldTemplates > 0 {
					last = append([]byte(","), last...)
				}
				old = append(old[:len(old)-len(`]}}}`)], last...)
			}
			cut, oldCut := bytes.Index(req, []byte(`,"oldObject":`)), bytes.Index(old, []byte(`,"oldObject":`))
			if cut < 0 || oldCut < 0 {
				return nil, fmt.Errorf("%s: an UPDATE without its old object", c.name)
			}
			req = append(req[:cut], old[oldCut:]...)
		}
		payload := wrap(req, settings)
		same, err := GrowPod(pod, len(payload))
		if err != nil {
			return nil, err
		}
		out = append(out, scenario{name: c.name, payload: payload, refused: c.refused},
			scenario{name: "pod-as-" + c.name, payload: wrap(same, `{}`), request: same, withPrevious: true})
	}
	return out, nil
}

// WorkflowRequest is an AdmissionRequest for a Workflow of templates copies of template.
func WorkflowRequest(templates int, template, operation, username string, lastApplied bool) []byte {
	var b strings.Builder
	b.WriteString(`{"spec":{"entrypoint":"main","templates":[`)
	for i := range templates {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(template)
	}
	b.WriteString(`]}}`)
	object := b.String()
	if lastApplied {
		object = `{"metadata":{"name":"wf","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + strconv.Quote(object) + `}},` + object[1:]
	}
	req := `{"uid":"1","kind":{"group":"argoproj.io","version":"v1alpha1","kind":"Workflow"},` +
		`"resource":{"group":"argoproj.io","version":"v1alpha1","resource":"workflows"},"namespace":"team-a","operation":"` + operation +
		`","userInfo":{"username":"` + username + `","groups":["system:authenticated"]},"object":` + object
	if operation == "UPDATE" {
		req += `,"oldObject":` + object
	}
	return []byte(req + `}`)
}

// workflowBars are docs/rules.md's Cost bars as measured here: the 800 ordinary templates' and the
// status write's ratio to a Pod of the same bytes, the cost per target of the empty templates, and the
// slowest workflow (every one is a request within policy-server's 2 MB).
type workflowBars struct {
	applied, status, perTarget float64
	slowest                    time.Duration
	slowestName                string
}

// workflowCost prints each workflow beside its Pod of the same bytes, with the memory of a fresh
// instance, and returns the bars.
func workflowCost(results map[string]result) workflowBars {
	fmt.Printf("\ncustom resources with many targets (policy p50 vs a Pod of the same bytes; guest memory of a fresh instance):\n")
	var bars workflowBars
	for _, c := range workflowCases {
		w, p := results[c.name], results["pod-as-"+c.name]
		if w.p50 == 0 || p.p50 == 0 {
			continue
		}
		switch c.name {
		case "wf-800-applied":
			bars.applied = ratio(w.p50, p.p50)
		case "wf-6k-status":
			bars.status = ratio(w.p50, p.p50)
		case "wf-16k-empty":
			bars.perTarget = float64(w.p50.Nanoseconds()) / 1000 / float64(c.templates)
		}
		if w.p50 > bars.slowest {
			bars.slowest, bars.slowestName = w.p50, c.name
		}
		fmt.Printf("  %-18s %10s %7.2f MB   same-size Pod %10s %7.2f MB   %.1fx\n", c.name, us(w.p50), mb(w.memory),
			us(p.p50), mb(p.memory), ratio(w.p50, p.p50))
	}
	return bars
}
