package preflight_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/preflight"
)

// testdata/adoption-objects.json is what `kubectl get pods,deployments,...,replicationcontrollers -o json`
// printed in the cluster suite's adoption scenario (test/cluster/adoption.bats, managedFields dropped):
// alice's workloads created before the policy covered the namespace.
const (
	alice      = `{"user":"alice","groups":["devops","system:authenticated"]}`
	bob        = `{"user":"bob","groups":["qa","system:authenticated"]}`
	saGroups   = `"groups":["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]}`
	rsCtrl     = `{"user":"system:serviceaccount:kube-system:replicaset-controller",` + saGroups
	jobCtrl    = `{"user":"system:serviceaccount:kube-system:job-controller",` + saGroups
	kcm        = `{"user":"system:kube-controller-manager","groups":["system:authenticated"]}`
	rcCtrl     = `{"user":"system:serviceaccount:kube-system:replication-controller",` + saGroups
	dsCtrl     = `{"user":"system:serviceaccount:kube-system:daemon-set-controller",` + saGroups
	invalidMsg = "is not valid"
)

// policyHost loads the policy module into the project's host for the test.
func policyHost(t *testing.T) *wapchost.Host {
	t.Helper()
	host, err := wapchost.Load(context.Background(), guesttest.Policy(t), wapchost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	return host
}

func report(t *testing.T, settings string, controllers preflight.Controllers) map[string]preflight.Finding {
	t.Helper()
	data, err := os.ReadFile("testdata/adoption-objects.json")
	if err != nil {
		t.Fatal(err)
	}
	items, err := preflight.Items(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	findings, err := preflight.Report(ctx, items, preflight.Options{Evaluator: policyHost(t), Settings: json.RawMessage(settings), Controllers: controllers})
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != len(items) {
		t.Fatalf("%d findings for %d objects", len(findings), len(items))
	}
	out := map[string]preflight.Finding{}
	for i := range findings {
		f := findings[i]
		name := f.Name
		for _, w := range workloads { // generated names (pods, ReplicaSets) under their workload's name
			if strings.HasPrefix(name, w+"-") {
				name = w
			}
		}
		out[f.Kind+"/"+name] = f
	}
	return out
}

// workloads are the names the adoption scenario gave its objects.
var workloads = []string{"plain", "yk-null", "yk-queue", "bobs-value", "rc-alice", "job-plain", "ds-alice", "cron-plain"}

type want struct {
	outcome preflight.Outcome
	carry   string // PodsWillCarry
	why     string // a part of Why
}

func check(t *testing.T, got map[string]preflight.Finding, wants map[string]want) {
	t.Helper()
	for key, w := range wants {
		f, ok := got[key]
		if !ok {
			t.Errorf("%s: no finding", key)
			continue
		}
		if diff := cmp.Diff(w, want{f.Outcome, f.PodsWillCarry, w.why}, cmp.AllowUnexported(want{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s\nwhy: %s", key, diff, f.Why)
		}
		if !strings.Contains(f.Why, w.why) {
			t.Errorf("%s: why %q does not contain %q", key, f.Why, w.why)
		}
	}
}

func TestPreflight_DefaultSettingsOnRecordedObjects(t *testing.T) {
	check(t, report(t, `{}`, preflight.ServiceAccounts), map[string]want{
		// Rule 3: a template without the annotation gives pods the controller's identity.
		"Deployment/plain":   {preflight.Stamp, rsCtrl, "not the owner's"},
		"ReplicaSet/plain":   {preflight.Stamp, rsCtrl, "belongs to Deployment/plain"},
		"Job/job-plain":      {preflight.Stamp, jobCtrl, "rule 3"},
		"CronJob/cron-plain": {preflight.Stamp, jobCtrl, "rule 3"},
		// Rule 4 validates a trusted controller's value: the next ReplicaSet is refused.
		"Deployment/yk-null": {preflight.Refuse, "", "deployment-controller's next ReplicaSet is refused"},
		"ReplicaSet/yk-null": {preflight.Refuse, "", `"groups" must be a list of strings`},
		// Rule 1 with a trusted controller: an invalid value refuses its pods.
		"StatefulSet/yk-queue": {preflight.Refuse, "", `unknown key "queue"`},
		// Rule 1: a valid value is kept, whoever it names.
		"Deployment/bobs-value":          {preflight.Keep, bob, `they run as "bob"`},
		"ReplicationController/rc-alice": {preflight.Keep, alice, `they run as "alice"`},
		"DaemonSet/ds-alice":             {preflight.Keep, alice, "daemon-set-controller"},
		// Rule 5: existing pods never change.
		"Pod/lonely":   {preflight.LeaveAlone, "", "rule 5"},
		"Pod/yk-queue": {preflight.LeaveAlone, "", "StatefulSet/yk-queue"},
	})
}

func TestPreflight_SingleControllerIdentity(t *testing.T) {
	check(t, report(t, `{}`, preflight.SingleIdentity), map[string]want{
		"Deployment/plain":      {preflight.Stamp, kcm, "rule 3"},
		"Deployment/bobs-value": {preflight.Keep, bob, "rule 1"},
		"Deployment/yk-null":    {preflight.Refuse, "", invalidMsg},
	})
}

func TestPreflight_UntrustedControllersGetTheirOwnIdentity(t *testing.T) {
	// bypassControllers false: rule 1 replaces the template's value with the controller's identity,
	// and rule 4 still leaves the ReplicaSet alone, so the invalid value no longer blocks the rollout.
	check(t, report(t, `{"bypassControllers":false}`, preflight.ServiceAccounts), map[string]want{
		"Deployment/bobs-value":          {preflight.Stamp, rsCtrl, "not trusted"},
		"ReplicationController/rc-alice": {preflight.Stamp, rcCtrl, "not trusted"},
		"DaemonSet/ds-alice":             {preflight.Stamp, dsCtrl, "not trusted"},
		"Deployment/yk-null":             {preflight.Stamp, rsCtrl, "not trusted"},
		"Deployment/plain":               {preflight.Stamp, rsCtrl, "rule 3"},
	})
}

func TestPreflight_UntrustedControllersWithRejectAreRefused(t *testing.T) {
	check(t, report(t, `{"bypassControllers":false,"onUntrustedAnnotation":"reject"}`, preflight.ServiceAccounts), map[string]want{
		"Deployment/bobs-value": {preflight.Refuse, "", "is not allowed to set"},
		"Deployment/plain":      {preflight.Stamp, rsCtrl, "rule 3"},
	})
}

func TestPreflight_RefusedSettingsStopTheReport(t *testing.T) {
	_, err := preflight.Report(context.Background(), nil, preflight.Options{Evaluator: policyHost(t), Settings: json.RawMessage(`{"bypassAuth":true}`)})
	var settingsErr *kwctl.SettingsError
	if !errors.As(err, &settingsErr) {
		t.Fatalf("got %v, want a *kwctl.SettingsError", err)
	}
}

func TestItems_ReadsAListOrOneObject(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		n           int
		wantErr     bool
	}{
		{"list", `{"kind":"List","items":[{"kind":"Pod"},{"kind":"Job"}]}`, 2, false},
		{"one object", `{"kind":"Deployment","metadata":{"name":"web"}}`, 1, false},
		{"empty list", `{"kind":"List","items":[]}`, 0, false},
		{"not JSON", `NAME READY`, 0, true},
		{"items not a list", `{"items":{}}`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := preflight.Items([]byte(tc.input))
			if (err != nil) != tc.wantErr || len(items) != tc.n {
				t.Fatalf("got %d items, error %v; want %d, error %v", len(items), err, tc.n, tc.wantErr)
			}
		})
	}
}

func TestPreflight_ObjectsOfOtherKindsAreSkipped(t *testing.T) {
	ctx := context.Background()
	host := policyHost(t)
	items, err := preflight.Items([]byte(`{"items":[{"kind":"Service","metadata":{"name":"s","namespace":"a"}},
		{"kind":"Deployment","metadata":{"name":"broken","namespace":"a"},"spec":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := preflight.Report(ctx, items, preflight.Options{Evaluator: host, Settings: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Outcome != preflight.Skip || got[1].Outcome != preflight.Refuse {
		t.Fatalf("got %+v", got)
	}
}
