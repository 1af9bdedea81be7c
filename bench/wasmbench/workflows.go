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
	// old, when set, is the old object's template, oldTemplates of it then oldLast when set (the old object
	// is the new one otherwise)
	old, oldLast string
	oldTemplates int
}{
	{name: "wf-16k-empty", template: `{}`, operation: "CREATE", username: "bob", templates: 16000},
	{name: "wf-40k-empty", template: `{}`, operation: "CREATE", username: "bob", templates: 40000, refused: true},
	{name: "wf-600k-empty", template: `{}`, operation: "CREATE", username: "bob", templates: 600000, refused: true},
	{name: "wf-800-applied", template: OrdinaryTemplate, operation: "CREATE", username: "bob", templates: 800, lastApplied: true},
	{name: "wf-6k-status", template: `{"name":"t","metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"bob\"}"}}}`,
		operation: "UPDATE", username: "system:serviceaccount:argo:argo", templates: 6000},
	{name: "wf-300k-unchanged", template: `{}`, operation: "UPDATE", username: "bob", templates: 300000},
	{name: "wf-300k-changed", template: `{}`, operation: "UPDATE", username: "bob", templates: 300000, specChanged: true},
	// every template differs from its old self, and all are new (the old object has none)
	{name: "wf-180k-differ", template: `{"a":0}`, operation: "UPDATE", username: "bob", templates: 180000, old: `{}`, oldTemplates: 180000},
	{name: "wf-600k-added", template: `{}`, operation: "UPDATE", username: "bob", templates: 600000, refused: true, old: `{}`},
	// the same with bad input in the old object (after every template it holds)
	{name: "wf-600k-added-old-bad", template: `{}`, operation: "UPDATE", username: "bob", templates: 600000, refused: true,
		old: `{}`, oldLast: `{"metadata":1}`},
	{name: "wf-600k-removed-old-bad", template: `{}`, operation: "UPDATE", username: "bob", refused: true,
		old: `{}`, oldLast: `{"metadata":1}`, oldTemplates: 600000},
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
		if c.specChanged || c.old != "" {
			object, old := workflowObject(c.templates, c.template, ""), workflowObject(c.oldTemplates, c.old, c.oldLast)
			if c.specChanged { // the object's entrypoint: every map is walked in both objects
				object, old = strings.Replace(object, `"entrypoint":"main"`, `"entrypoint":"other"`, 1), object
			}
			req = workflowReview(object, old, c.operation, c.username)
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

// WorkflowRequest is an AdmissionRequest for a Workflow of templates copies of template; an UPDATE's old
// object is the same.
func WorkflowRequest(templates int, template, operation, username string, lastApplied bool) []byte {
	object := workflowObject(templates, template, "")
	if lastApplied {
		object = `{"metadata":{"name":"wf","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + strconv.Quote(object) + `}},` + object[1:]
	}
	old := ""
	if operation == "UPDATE" {
		old = object
	}
	return workflowReview(object, old, operation, username)
}

// workflowObject is a Workflow of templates copies of template, then last when set.
func workflowObject(templates int, template, last string) string {
	var b strings.Builder
	b.WriteString(`{"spec":{"entrypoint":"main","templates":[`)
	for i := range templates {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(template)
	}
	if last != "" {
		if templates > 0 {
			b.WriteByte(',')
		}
		b.WriteString(last)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// workflowReview is the AdmissionRequest of operation on object by username, with old as its old object
// when set.
func workflowReview(object, old, operation, username string) []byte {
	req := `{"uid":"1","kind":{"group":"argoproj.io","version":"v1alpha1","kind":"Workflow"},` +
		`"resource":{"group":"argoproj.io","version":"v1alpha1","resource":"workflows"},"namespace":"team-a","operation":"` + operation +
		`","userInfo":{"username":"` + username + `","groups":["system:authenticated"]},"object":` + object
	if old != "" {
		req += `,"oldObject":` + old
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
