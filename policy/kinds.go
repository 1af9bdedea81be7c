package policy

import (
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// Handling is which of the numbered rules apply to a built-in kind; a declared kind's is 0.
type Handling uint8

// The ways the policy handles a built-in kind.
const (
	// PodHandling: the object is the pod; rules 1-3 on CREATE, rule 5 on UPDATE.
	PodHandling Handling = iota + 1
	// WorkloadHandling: the pod template inside the object; rules 1-4 on CREATE, rules 6-9 on UPDATE.
	WorkloadHandling
	// BindingHandling: the API server copies the object's annotations onto its pod; rule 10 on CREATE.
	BindingHandling
)

// Kind is a row of kinds, the table of the kinds the policy handles (checked by test/shipcheck).
type Kind struct {
	Group string // the API group; "" is the core group
	Kind  string
	// Resources are the webhook rule resources whose requests carry this kind ("pods", "pods/status").
	Resources  []string
	Operations []string
	// Path names the guarded annotations map in customWorkloads' path syntax (walk.Parse): the maps after
	// ">" are created when missing or null. A Binding's map is only read (rule 10).
	Path     string
	Handling Handling
}

var (
	createUpdate = []string{opCreate, opUpdate}
	createOnly   = []string{opCreate}
)

// kinds is the table, in the order metadata.yml lists the resources.
var kinds = [...]Kind{
	{Group: "", Kind: "Pod", Resources: []string{"pods", "pods/status"}, Operations: createUpdate, Path: ">metadata.annotations", Handling: PodHandling},
	{Group: "", Kind: "ReplicationController", Resources: []string{"replicationcontrollers"}, Operations: createUpdate, Path: "spec.template>metadata.annotations", Handling: WorkloadHandling},
	{Group: "apps", Kind: "Deployment", Resources: []string{"deployments"}, Operations: createUpdate, Path: "spec.template>metadata.annotations", Handling: WorkloadHandling},
	{Group: "apps", Kind: "ReplicaSet", Resources: []string{"replicasets"}, Operations: createUpdate, Path: "spec.template>metadata.annotations", Handling: WorkloadHandling},
	{Group: "apps", Kind: "StatefulSet", Resources: []string{"statefulsets"}, Operations: createUpdate, Path: "spec.template>metadata.annotations", Handling: WorkloadHandling},
	{Group: "apps", Kind: "DaemonSet", Resources: []string{"daemonsets"}, Operations: createUpdate, Path: "spec.template>metadata.annotations", Handling: WorkloadHandling},
	{Group: "batch", Kind: "Job", Resources: []string{"jobs"}, Operations: createUpdate, Path: "spec.template>metadata.annotations", Handling: WorkloadHandling},
	// Not `jobtemplate`, which YuniKorn once shipped.
	{Group: "batch", Kind: "CronJob", Resources: []string{"cronjobs"}, Operations: createUpdate, Path: "spec.jobTemplate.spec.template>metadata.annotations", Handling: WorkloadHandling},
	// pods/binding and the older top-level bindings resource: both carry a Binding (rule 10).
	{Group: "", Kind: "Binding", Resources: []string{"bindings", "pods/binding"}, Operations: createOnly, Path: "metadata.annotations", Handling: BindingHandling},
}

// Kinds returns a copy of the table of kinds.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i := range kinds {
		k := kinds[i]
		k.Resources = append([]string(nil), k.Resources...)
		k.Operations = append([]string(nil), k.Operations...)
		out[i] = k
	}
	return out
}

// handles reports whether the policy decides on this operation of the kind.
func (k *Kind) handles(operation string) bool {
	for _, op := range k.Operations {
		if op == operation {
			return true
		}
	}
	return false
}

// workload is what the decision needs of the request's kind: its paths and its voice.
type workload struct {
	name     string   // for messages
	handling Handling // 0 for a declared kind
	targets  []walk.Path
	guards   []walk.Path
	labels   *walk.Path // a built-in kind's labels map, beside its target; nil for a declared kind
	// where names a built-in kind's target metadata in messages ("spec.template.metadata").
	where string
	voice voice
}

// isDeclared reports a kind declared in customWorkloads (rules 11-13) rather than one of the table's.
func (w *workload) isDeclared() bool { return w.handling == 0 }

func builtin(k *Kind) workload {
	// TestKinds_TableIsConsistent parses both paths of every kind.
	target, _ := walk.Parse(k.Path, false, true)
	labels, _ := walk.Parse(strings.TrimSuffix(k.Path, "annotations")+"labels", false, true)
	target.Required, labels.Required = true, true
	return workload{name: k.Kind, handling: k.Handling, targets: []walk.Path{target}, labels: &labels,
		where: strings.TrimSuffix(target.Plain, ".annotations"), voice: builtinVoice{}}
}

// declared is a kind declared in customWorkloads.
func declared(name string, c *CustomWorkload) workload {
	return workload{name: name, targets: c.annotations, guards: c.guards, voice: declaredVoice{}}
}

// kindOf returns the table's kind of group and kind when the policy decides on this operation of it.
func kindOf(group, kind, operation string) (workload, bool) {
	if i := tableIndex(group, kind); i >= 0 && kinds[i].handles(operation) {
		return builtins[i], true
	}
	return workload{}, false
}

// builtins are the table's kinds with their paths parsed at start-up (part of policy.wasm's
// pre-initialised memory).
var builtins = func() (out [len(kinds)]workload) {
	for i := range kinds {
		out[i] = builtin(&kinds[i])
	}
	return out
}()

// tableKind returns the table's entry for a group and kind, or nil.
func tableKind(group, kind string) *Kind {
	if i := tableIndex(group, kind); i >= 0 {
		return &kinds[i]
	}
	return nil
}

// tableIndex returns the number of the table's entry for a group and kind, or -1.
func tableIndex(group, kind string) int {
	for i := range kinds {
		if kinds[i].Group == group && kinds[i].Kind == kind {
			return i
		}
	}
	return -1
}
