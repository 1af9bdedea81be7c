// Package preflight tells an operator, before the policy is switched on, what it will do to each
// object already in the cluster on that object's next rollout or pod creation. It does not guess: for
// each object it builds the AdmissionRequests the API server will send once the policy is live (the
// pods a workload's controller creates from its template, the ReplicaSet or Job a Deployment or
// CronJob controller creates first, the owner's next update of the template) and runs the real policy
// module on them through the same path as `kwhost run` (internal/host/kwctl).
//
// It is not an audit of what the pods carry today (YuniKorn reads that as it is) and it does not
// know the webhook's namespaceSelector: objects in namespaces the policy will not see should be left
// out of its input.
package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
)

// AnnotationKey is the annotation the policy stamps.
const AnnotationKey = "yunikorn.apache.org/user.info"

// Outcome is what the policy will do on the object's next rollout or pod creation.
type Outcome string

// The outcomes, as the report prints them.
const (
	Stamp      Outcome = "stamp"       // new pods get a value the policy writes
	Keep       Outcome = "keep"        // new pods keep the template's value
	Refuse     Outcome = "refuse"      // the next creation is refused: the rollout stalls
	LeaveAlone Outcome = "leave-alone" // nothing the policy does changes this object
	Skip       Outcome = "skip"        // not a kind the policy sees
)

// Finding is one object's line of the report.
type Finding struct {
	Namespace string  `json:"namespace,omitempty"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Outcome   Outcome `json:"outcome"`
	// PodsWillCarry is the annotation the next pods get (stamp, keep); Current the object's own value
	// (a pod's annotation, a workload's template annotation), "" when it has none.
	PodsWillCarry string   `json:"podsWillCarry,omitempty"`
	Current       string   `json:"current,omitempty"`
	Why           string   `json:"why"`
	Warnings      []string `json:"warnings,omitempty"`
}

// Controllers names how kube-controller-manager authenticates, which decides who the policy sees
// creating pods: each controller as its own service account (--use-service-account-credentials,
// "sa") or all of them as system:kube-controller-manager ("single").
type Controllers string

// The two identity modes of kube-controller-manager.
const (
	ServiceAccounts Controllers = "sa"
	SingleIdentity  Controllers = "single"
)

// Options configure a report.
type Options struct {
	Evaluator   kwctl.Evaluator
	Settings    json.RawMessage // the policy's settings as the ClusterAdmissionPolicy will give them
	Controllers Controllers
	// SchedulerAccount is YuniKorn's scheduler service account as namespace/name; "" finds it in the input
	// (see Schedulers).
	SchedulerAccount string
}

// userInfo is an AdmissionRequest's userInfo.
type userInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

func (o Options) controller(name string) userInfo {
	if o.Controllers == SingleIdentity {
		return userInfo{Username: "system:kube-controller-manager", Groups: []string{"system:authenticated"}}
	}
	return userInfo{Username: "system:serviceaccount:kube-system:" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
}

// owner stands for whoever updates a workload next: an ordinary user, trusted by nothing.
var owner = userInfo{Username: "preflight:workload-owner", Groups: []string{"system:authenticated"}}

// workloadKind is how a kind's pods come to be: the controller that creates them from the template,
// and for Deployments and CronJobs the intermediate object their controller creates first.
type workloadKind struct {
	group, resource string
	podController   string // creates the pods
	parent          string // creates the intermediate object (Deployment, CronJob), else ""
	templatePath    []string
}

var kinds = map[string]workloadKind{
	"Deployment":            {"apps", "deployments", "replicaset-controller", "deployment-controller", []string{"spec", "template"}},
	"ReplicaSet":            {"apps", "replicasets", "replicaset-controller", "", []string{"spec", "template"}},
	"StatefulSet":           {"apps", "statefulsets", "statefulset-controller", "", []string{"spec", "template"}},
	"DaemonSet":             {"apps", "daemonsets", "daemon-set-controller", "", []string{"spec", "template"}},
	"Job":                   {"batch", "jobs", "job-controller", "", []string{"spec", "template"}},
	"CronJob":               {"batch", "cronjobs", "job-controller", "cronjob-controller", []string{"spec", "jobTemplate", "spec", "template"}},
	"ReplicationController": {"", "replicationcontrollers", "replication-controller", "", []string{"spec", "template"}},
}

// Object is one Kubernetes object as decoded JSON (numbers as json.Number).
type Object = map[string]any

type object = Object

// Items reads what `kubectl get ... -o json` prints: a List (or any object with items), or one object.
func Items(data []byte) ([]Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // integers stay exact through the round trip
	var doc object
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the input is not a JSON object (use kubectl get ... -o json): %w", err)
	}
	raw, isList := doc["items"]
	if !isList {
		return []object{doc}, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errors.New("items is not a list")
	}
	out := make([]object, 0, len(list))
	for i, it := range list {
		o, ok := it.(object)
		if !ok {
			return nil, fmt.Errorf("items[%d] is not an object", i)
		}
		out = append(out, o)
	}
	return out, nil
}

// Report checks the settings with the policy, then gives one finding per object, in input order.
func Report(ctx context.Context, items []Object, o Options) ([]Finding, error) {
	settings, err := kwctl.SettingsFor(o.Settings, kwctl.PayloadPolicyServer)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := kwctl.ValidateSettings(ctx, o.Evaluator, settings); err != nil {
		return nil, err
	}
	o.Settings = settings
	out := make([]Finding, 0, len(items))
	for _, it := range items {
		f, err := o.finding(ctx, it)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (o Options) finding(ctx context.Context, it object) (f Finding, err error) {
	kind, _ := it["kind"].(string)
	meta, _ := it["metadata"].(object)
	f = Finding{Kind: kind, Name: str(meta["name"]), Namespace: str(meta["namespace"])}
	if kind == "Pod" {
		f.Outcome, f.Current = LeaveAlone, annotation(meta)
		f.Why = "an existing pod is never mutated and its annotation can no longer change (rule 5)"
		if ref := controllerRef(meta); ref != "" {
			f.Why += "; what its controller's next pods get is reported under " + ref
		}
		return f, nil
	}
	k, ok := kinds[kind]
	if !ok {
		f.Outcome, f.Why = Skip, "not a kind the policy sees"
		return f, nil
	}
	template, ok := at(it, k.templatePath).(object)
	if !ok {
		f.Outcome, f.Why = Refuse, "it has no pod template: the policy refuses every request for it as bad input"
		return f, nil
	}
	tmeta, _ := template["metadata"].(object)
	f.Current = annotation(tmeta)

	// The owner's next update of the template (a rollout such as kubectl set image) must go through.
	upd, err := o.evaluate(ctx, "UPDATE", k.group, kind, k.resource, f.Namespace, owner, it, it)
	if err != nil {
		return f, err
	}
	if !upd.Allowed || len(upd.Patch) > 0 {
		f.Outcome, f.Why = Refuse, "the owner's next update of the template is "+verdict(upd)
		return f, nil
	}

	// A Deployment's or CronJob's controller first creates a ReplicaSet or Job from the template.
	source := fmt.Sprintf("the pods the %s creates", k.podController)
	if k.parent != "" {
		inter, group, ikind, resource := intermediate(kind, it, template)
		resp, err := o.evaluate(ctx, "CREATE", group, ikind, resource, f.Namespace, o.controller(k.parent), inter, nil)
		if err != nil {
			return f, err
		}
		f.Warnings = append(f.Warnings, resp.Warnings...)
		if !resp.Allowed {
			f.Outcome = Refuse
			f.Why = fmt.Sprintf("the %s's next %s is refused (rule 4 validates a trusted controller's value): %s; "+
				"the rollout stalls until a trusted requester fixes the template annotation or the %s is re-created without it",
				k.parent, ikind, message(resp), kind)
			return f, nil
		}
		if len(resp.Patch) > 0 { // rule 4 says this cannot happen; the report must not hide it
			f.Outcome, f.Why = Refuse, fmt.Sprintf("the %s's next %s would be mutated (a controller loop, YUNIKORN-1627)", k.parent, ikind)
			return f, nil
		}
	}

	defer func() {
		if ref := controllerRef(meta); ref != "" {
			f.Why += "; it belongs to " + ref + ", whose rollouts create a new one"
		}
	}()

	pod := podFrom(template, f.Namespace, f.Name, kind)
	resp, err := o.evaluate(ctx, "CREATE", "", "Pod", "pods", f.Namespace, o.controller(k.podController), pod, nil)
	if err != nil {
		return f, err
	}
	f.Warnings = append(f.Warnings, resp.Warnings...)
	switch {
	case !resp.Allowed:
		f.Outcome = Refuse
		f.Why = fmt.Sprintf("%s are refused: %s", source, message(resp))
	case len(resp.Patch) > 0:
		f.Outcome = Stamp
		f.PodsWillCarry = patchedValue(resp)
		if f.Current == "" {
			f.Why = fmt.Sprintf("the template has no annotation: %s get the controller's identity (rule 3), not the owner's; "+
				"re-create the %s (its owner's CREATE stamps the template) or have a trusted requester set it", source, kind)
		} else {
			f.Why = fmt.Sprintf("the controller is not trusted: %s get its own identity instead of the template's value (rule 1)", source)
		}
	default:
		f.Outcome = Keep
		f.PodsWillCarry = f.Current
		f.Why = fmt.Sprintf("the template's value is valid and the controller trusted: %s keep it (rule 1)", source)
		if user := valueUser(f.Current); user != "" {
			f.Why += "; they run as " + strconv.Quote(user)
		}
	}
	return f, nil
}

// evaluate runs the policy on one synthetic AdmissionRequest.
func (o Options) evaluate(ctx context.Context, op, group, kind, resource, ns string, who userInfo, obj, old object) (*kwctl.Response, error) {
	gvk := map[string]string{"group": group, "version": "v1", "kind": kind}
	gvr := map[string]string{"group": group, "version": "v1", "resource": resource}
	req := map[string]any{
		"uid": "preflight", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
		"namespace": ns, "operation": op, "userInfo": who, "object": obj, "dryRun": false,
	}
	if old != nil {
		req["oldObject"] = old
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	parsed, err := kwctl.ParseRequest(raw, kwctl.PayloadPolicyServer)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", op, ns, kind, err)
	}
	return kwctl.Validate(ctx, o.Evaluator, parsed, o.Settings)
}

// intermediate is the ReplicaSet a Deployment's controller creates, or the Job a CronJob's does: the
// template copied as it is, owned by the parent.
func intermediate(kind string, it, template object) (obj object, group, ikind, resource string) {
	meta, _ := it["metadata"].(object)
	name := str(meta["name"])
	m := object{"name": name + "-preflight", "namespace": meta["namespace"], "ownerReferences": ownerRefs(kind, meta)}
	if kind == "CronJob" {
		jobSpec := at(it, []string{"spec", "jobTemplate", "spec"})
		return object{"apiVersion": "batch/v1", "kind": "Job", "metadata": m, "spec": jobSpec}, "batch", "Job", "jobs"
	}
	spec := object{"replicas": at(it, []string{"spec", "replicas"}), "selector": at(it, []string{"spec", "selector"}), "template": template}
	return object{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": m, "spec": spec}, "apps", "ReplicaSet", "replicasets"
}

// podFrom is a pod as a controller creates it from a template: the template's metadata and spec.
func podFrom(template object, ns, ownerName, ownerKind string) object {
	m := object{}
	if tm, ok := template["metadata"].(object); ok {
		for k, v := range tm {
			m[k] = v
		}
	}
	m["generateName"] = ownerName + "-"
	m["namespace"] = ns
	m["ownerReferences"] = ownerRefs(ownerKind, object{"name": ownerName})
	return object{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": template["spec"]}
}

func ownerRefs(kind string, meta object) []any {
	return []any{object{"apiVersion": "v1", "kind": kind, "name": meta["name"], "uid": "preflight", "controller": true}}
}

// patchedValue is the annotation value the policy's patch writes.
func patchedValue(resp *kwctl.Response) string {
	ops, err := resp.PatchOps()
	if err != nil {
		return ""
	}
	for _, op := range ops {
		switch op.Path {
		case "/metadata/annotations/" + strings.ReplaceAll(AnnotationKey, "/", "~1"):
			var v string
			if json.Unmarshal(op.Value, &v) == nil {
				return v
			}
		case "/metadata/annotations", "/metadata":
			var v struct {
				Annotations map[string]string `json:"annotations"`
			}
			if op.Path == "/metadata/annotations" {
				_ = json.Unmarshal(op.Value, &v.Annotations)
			} else {
				_ = json.Unmarshal(op.Value, &v)
			}
			if s, ok := v.Annotations[AnnotationKey]; ok {
				return s
			}
		}
	}
	return ""
}

func verdict(resp *kwctl.Response) string {
	if !resp.Allowed {
		return "refused: " + message(resp)
	}
	return "changed by the policy"
}

func message(resp *kwctl.Response) string {
	if resp.Status != nil && resp.Status.Message != nil {
		return *resp.Status.Message
	}
	return "(no message)"
}

// valueUser is the user a value names, when it is readable at all.
func valueUser(v string) string {
	var u struct {
		User string `json:"user"`
	}
	if json.Unmarshal([]byte(v), &u) != nil {
		return ""
	}
	return u.User
}

func controllerRef(meta object) string {
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		ref, _ := r.(object)
		if c, _ := ref["controller"].(bool); c {
			return str(ref["kind"]) + "/" + str(ref["name"])
		}
	}
	return ""
}

func annotation(meta object) string {
	a, _ := meta["annotations"].(object)
	return str(a[AnnotationKey])
}

func at(o object, path []string) any {
	var cur any = o
	for _, p := range path {
		m, ok := cur.(object)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
