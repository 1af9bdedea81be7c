package preflight

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
)

// The scheduler check asks the policy what it does to the placeholder pods YuniKorn's scheduler creates for a
// gang application, under its own service account, from the task groups of the gang's originator pod (k8shim
// newPlaceholder: each task group's annotations, user.info included since rule 16 writes it there, and the whole
// task-groups value). Only a trusted scheduler account keeps the originator's identity on them (rule 1); an
// untrusted one gets its own (replace) or has every placeholder rejected (reject) (docs/rules.md, rule 16).

// HelmSchedulerAccount is the scheduler's service account as the YuniKorn Helm chart installs it (its value
// serviceAccount, in the release namespace yunikorn), used when the input holds no scheduler Deployment.
const HelmSchedulerAccount = "yunikorn/yunikorn-admin"

// schedulerComponent is the label component of the scheduler's pod template in the Helm chart (Deployment
// yunikorn-scheduler).
const schedulerComponent = "yunikorn-scheduler"

// Scheduler is one scheduler account and what the policy does to the placeholders it creates.
type Scheduler struct {
	// Account is the scheduler's username, system:serviceaccount:<namespace>:<name>.
	Account string `json:"account"`
	// Source says where the account came from: a Deployment's namespace/name, the flag, or the Helm default.
	Source string `json:"source"`
	// Outcome is keep (placeholders keep their originator's value), stamp (they get the scheduler's own
	// identity) or refuse (every placeholder is rejected).
	Outcome Outcome `json:"outcome"`
	// PlaceholdersWillCarry is the value the placeholders get when the policy replaces the originator's.
	PlaceholdersWillCarry string   `json:"placeholdersWillCarry,omitempty"`
	Why                   string   `json:"why"`
	Warnings              []string `json:"warnings,omitempty"`
}

// ParseAccount checks a service account given as namespace/name (the --scheduler-account flag).
func ParseAccount(s string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(s, "/")
	if !ok || ns == "" || n == "" || strings.ContainsAny(n, "/:") || strings.Contains(ns, ":") {
		return "", "", fmt.Errorf("scheduler account %q: want NAMESPACE/NAME, e.g. %s", s, HelmSchedulerAccount)
	}
	return ns, n, nil
}

// Schedulers asks the policy what it does to a placeholder each of YuniKorn's scheduler accounts creates: the
// account of o.SchedulerAccount (namespace/name) when set, else of each scheduler Deployment of items (pod
// template labelled component: yunikorn-scheduler, or named yunikorn-scheduler), else the Helm chart's default.
// The settings must have passed Report (or kwctl.ValidateSettings).
func Schedulers(ctx context.Context, items []Object, o Options) ([]Scheduler, error) {
	settings, err := kwctl.SettingsFor(o.Settings, kwctl.PayloadPolicyServer)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	o.Settings = settings
	var out []Scheduler
	for _, a := range schedulerAccounts(items, o.SchedulerAccount) {
		s, err := o.scheduler(ctx, a)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

type account struct{ namespace, name, source string }

func (a account) user() userInfo {
	return userInfo{Username: "system:serviceaccount:" + a.namespace + ":" + a.name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.namespace, "system:authenticated"}}
}

// schedulerAccounts is flag's account when set, else those of the input's scheduler Deployments (each once), else
// the Helm chart's default.
func schedulerAccounts(items []Object, flag string) []account {
	if flag != "" {
		ns, name, err := ParseAccount(flag)
		if err == nil {
			return []account{{ns, name, "--scheduler-account"}}
		}
	}
	var out []account
	seen := map[string]bool{}
	for _, it := range items {
		meta, _ := it["metadata"].(object)
		if str(it["kind"]) != "Deployment" {
			continue
		}
		labels, _ := at(it, []string{"spec", "template", "metadata", "labels"}).(object)
		if str(labels["component"]) != schedulerComponent && str(meta["name"]) != schedulerComponent {
			continue
		}
		spec, _ := at(it, []string{"spec", "template", "spec"}).(object)
		name := str(spec["serviceAccountName"])
		if name == "" {
			name = str(spec["serviceAccount"]) // the deprecated field, still honoured when the other is empty
		}
		if name == "" {
			name = "default"
		}
		ns := str(meta["namespace"])
		a := account{ns, name, "Deployment " + ns + "/" + str(meta["name"])}
		if key := ns + "/" + name; !seen[key] {
			seen[key] = true
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		ns, name, _ := ParseAccount(HelmSchedulerAccount)
		out = []account{{ns, name, "the Helm chart's default: no YuniKorn scheduler Deployment in the input"}}
	}
	return out
}

// The names of the gang the scheduler check's placeholder belongs to (k8shim's annotation keys).
const (
	taskGroupsKey    = "yunikorn.apache.org/task-groups"
	taskGroupNameKey = "yunikorn.apache.org/task-group-name"
	gangNamespace    = "preflight"
	gangApplication  = "preflight-gang"
)

// scheduler runs the policy on a placeholder as the scheduler a creates it for a gang the policy admitted: its
// originator, the workload owner, carries its own stamp, and rule 16 wrote it into every task group.
func (o Options) scheduler(ctx context.Context, a account) (Scheduler, error) {
	who := a.user()
	s := Scheduler{Account: who.Username, Source: a.source}
	originator := `{"user":` + strconv.Quote(owner.Username) + `,"groups":["system:authenticated"]}`
	taskGroups := `[{"name":"workers","minMember":2,"minResource":{"cpu":"100m","memory":"64Mi"},` +
		`"annotations":{` + strconv.Quote(AnnotationKey) + `:` + strconv.Quote(originator) + `}}]`
	placeholder := object{"apiVersion": "v1", "kind": "Pod", "metadata": object{
		"name": "tg-" + gangApplication + "-workers-preflight", "namespace": gangNamespace,
		"labels": object{"yunikorn.apache.org/app-id": gangApplication, "yunikorn.apache.org/queue": "root.sandbox"},
		"annotations": object{
			AnnotationKey:         originator, // copied from the task group
			PlaceholderAnnotation: "true",
			taskGroupNameKey:      "workers",
			taskGroupsKey:         taskGroups,
		},
		"ownerReferences": []any{object{"apiVersion": "v1", "kind": "Pod", "name": gangApplication + "-driver", "uid": "preflight"}},
	}, "spec": object{
		"schedulerName": "yunikorn", "restartPolicy": "Never",
		"containers": []any{object{"name": "pause", "image": "registry.k8s.io/pause:3.7"}},
	}}
	resp, err := o.evaluate(ctx, "CREATE", "", "Pod", "pods", gangNamespace, who, placeholder, nil)
	if err != nil {
		return s, err
	}
	s.Warnings = resp.Warnings
	trust := "trust it: add ^" + regexp.QuoteMeta(who.Username) + "$ to systemUsers (trusted while bypassControllers is true)"
	switch {
	case !resp.Allowed:
		s.Outcome = Refuse
		s.Why = fmt.Sprintf("the scheduler is not trusted and the policy refuses every placeholder it creates (%s): "+
			"gang scheduling stops: YuniKorn deletes a gang's placeholders when one is refused and schedules its pods "+
			"without the reservation (k8shim PlaceholderCreateFailed); %s, or set onUntrustedAnnotation: replace", message(resp), trust)
	case len(resp.Patch) > 0:
		s.Outcome = Stamp
		s.PlaceholdersWillCarry = patchedValue(resp)
		s.Why = "the scheduler is not trusted: its placeholders get its own identity instead of their originator's (rule 1), " +
			"and after a scheduler restart YuniKorn may charge a gang to it; " + trust
	default:
		s.Outcome = Keep
		s.Why = "the scheduler is trusted: its placeholders keep their originator's user.info (rules 1 and 16)"
	}
	return s, nil
}
