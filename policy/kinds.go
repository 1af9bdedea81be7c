package policy

import "strings"

// Handling is how the policy handles a built-in kind: which of the numbered rules apply to it.
type Handling uint8

// The ways the policy handles a built-in kind; a declared kind's is 0.
const (
	// PodHandling: the object is the pod; rules 1-3 on CREATE, rule 5 on UPDATE.
	PodHandling Handling = iota + 1
	// WorkloadHandling: the pod template inside the object; rules 1-4 on CREATE, rules 6-9 on UPDATE.
	WorkloadHandling
	// BindingHandling: the API server copies the object's annotations onto its pod; rule 10 on CREATE.
	BindingHandling
)

// Kind is one kind of object the policy handles. kinds is the one table of them: kindOf reads it, and
// internal/shipcheck derives metadata.yml's rules and resources annotations, and checks the examples and
// the README, from it. A kind is declared here and nowhere else.
type Kind struct {
	Group string // the API group; "" is the core group
	Kind  string
	// Resources are the webhook rule resources whose requests carry this kind: the resource first, then
	// the subresources that carry it too and through which the annotation can change ("pods/status").
	Resources  []string
	Operations []string
	// Path names the annotations map the policy guards, in the syntax of customWorkloads' paths (paths.go):
	// a ">" follows the object that must already be there (a pod template); the maps after it are created
	// when missing or null. The walker walks it as it walks a declared kind's paths; a Binding's
	// map is only read (rule 10), never created.
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

// Container is the path of the object that holds the guarded "metadata" (before the ">" of Path, or
// before "metadata" when Path has none): nil for a Pod or a Binding, [spec template] for a Deployment.
func (k *Kind) Container() []string {
	before, _, found := strings.Cut(k.Path, ">")
	if !found {
		before = strings.TrimSuffix(strings.TrimSuffix(k.Path, "metadata.annotations"), ".")
	}
	if before == "" {
		return nil
	}
	return strings.Split(before, ".")
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

// workload is what the decision needs of the request's kind, whichever rules it follows: the maps that
// hold the annotation (the targets), and how the decision is told. A built-in kind has one target path,
// the pod template's (or the pod's) annotations, and beside it the pod labels: rule 14's sources and the
// legacy label (rules 2, 5 and 9). A declared kind (rules 11-13) has its annotation paths and its guard
// paths.
type workload struct {
	name     string   // for messages
	handling Handling // 0 for a declared kind
	targets  []annotationPath
	guards   []annotationPath
	labels   *annotationPath // a built-in kind's labels map, beside its target; nil for a declared kind
	// where names a built-in kind's target metadata in messages ("spec.template.metadata"); a declared
	// kind's messages name each map by its concrete path.
	where string
	voice voice
}

// isDeclared reports a kind declared in customWorkloads (rules 11-13) rather than one of the table's.
func (w *workload) isDeclared() bool { return w.handling == 0 }

func builtin(k *Kind) workload {
	// TestKinds_TableIsConsistent parses both paths of every kind.
	target, _ := parsePath(k.Path, false, true)
	labels, _ := parsePath(strings.TrimSuffix(k.Path, "annotations")+"labels", false, true)
	target.required, labels.required = true, true
	return workload{name: k.Kind, handling: k.Handling, targets: []annotationPath{target}, labels: &labels,
		where: strings.TrimSuffix(target.plain, ".annotations"), voice: builtinVoice{}}
}

// declared is a kind declared in customWorkloads.
func declared(name string, c *CustomWorkload) workload {
	return workload{name: name, targets: c.annotations, guards: c.guards, voice: declaredVoice{}}
}

// kindOf maps the request's API group and kind to the object the policy handles, when the policy decides
// on this operation of it. Group and kind are matched both: a Job of another API group is not ours.
func kindOf(group, kind, operation string) (workload, bool) {
	if i := tableIndex(group, kind); i >= 0 && kinds[i].handles(operation) {
		return builtins[i], true
	}
	return workload{}, false
}

// builtins are the table's kinds with their paths parsed, once, when the module starts (policy.wasm is
// built with its start already run: the parsed paths are part of its memory).
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
