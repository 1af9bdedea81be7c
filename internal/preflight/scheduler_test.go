package preflight_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/preflight"
)

// schedulerDeployment is YuniKorn's scheduler Deployment as the Helm chart names it, running as sa in ns
// (sa "" leaves serviceAccountName out); labelled false drops the chart's component label from the template.
func schedulerDeployment(ns, name, sa string, labelled bool) preflight.Object {
	spec := map[string]any{"containers": []any{map[string]any{"name": "yunikorn-scheduler-k8s", "image": "apache/yunikorn:scheduler-1.8.0"}}}
	if sa != "" {
		spec["serviceAccountName"] = sa
	}
	labels := map[string]any{"app": "yunikorn"}
	if labelled {
		labels["component"] = "yunikorn-scheduler"
	}
	return preflight.Object{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec}}}
}

// trustsHelmScheduler is the default systemUsers and the Helm chart's scheduler account.
const trustsHelmScheduler = `"systemUsers":["^system:serviceaccount:kube-system:","^system:kube-controller-manager$","^system:serviceaccount:yunikorn:yunikorn-admin$"]`

func TestSchedulers_WhatThePolicyDoesToThePlaceholdersOfTheSchedulerAccount(t *testing.T) {
	host := policyHost(t)
	const helm = "system:serviceaccount:yunikorn:yunikorn-admin"
	for _, tc := range []struct {
		name, settings, flag string
		items                []preflight.Object
		account, source      string
		outcome              preflight.Outcome
		carry                string   // PlaceholdersWillCarry
		why                  []string // parts of Why
	}{
		{"default settings: the Helm chart's account is not trusted, its identity replaces the originator's", `{}`, "", nil,
			helm, "the Helm chart's default", preflight.Stamp, ykAdmin,
			[]string{"not trusted", "add ^system:serviceaccount:yunikorn:yunikorn-admin$ to systemUsers"}},
		{"reject with the scheduler untrusted: every placeholder is refused", `{"onUntrustedAnnotation":"reject"}`, "", nil,
			helm, "the Helm chart's default", preflight.Refuse, "",
			[]string{"refuses every placeholder", "is not allowed to set", "add ^system:serviceaccount:yunikorn:yunikorn-admin$ to systemUsers", "onUntrustedAnnotation: replace"}},
		{"the scheduler trusted: placeholders keep their originator's value", `{` + trustsHelmScheduler + `,"onUntrustedAnnotation":"reject"}`, "", nil,
			helm, "the Helm chart's default", preflight.Keep, "", []string{"is trusted", "rules 1 and 16"}},
		{"trusted only while bypassControllers is on", `{` + trustsHelmScheduler + `,"bypassControllers":false,"onUntrustedAnnotation":"reject"}`, "", nil,
			helm, "the Helm chart's default", preflight.Refuse, "", []string{"refuses every placeholder"}},
		{"the Deployment's account is the one that counts", `{` + trustsHelmScheduler + `,"onUntrustedAnnotation":"reject"}`, "",
			[]preflight.Object{schedulerDeployment("yk", "scheduler", "yk-scheduler", true)},
			"system:serviceaccount:yk:yk-scheduler", "Deployment yk/scheduler", preflight.Refuse, "",
			[]string{"add ^system:serviceaccount:yk:yk-scheduler$ to systemUsers"}},
		{"a Deployment named yunikorn-scheduler without serviceAccountName runs as default", `{}`, "",
			[]preflight.Object{schedulerDeployment("yunikorn", "yunikorn-scheduler", "", false), schedulerDeployment("yunikorn", "web", "web", false)},
			"system:serviceaccount:yunikorn:default", "Deployment yunikorn/yunikorn-scheduler", preflight.Stamp,
			`{"user":"system:serviceaccount:yunikorn:default","groups":["system:serviceaccounts","system:serviceaccounts:yunikorn","system:authenticated"]}`, nil},
		{"--scheduler-account wins over the input", `{` + trustsHelmScheduler + `,"onUntrustedAnnotation":"reject"}`, "yunikorn/yunikorn-admin",
			[]preflight.Object{schedulerDeployment("yk", "scheduler", "yk-scheduler", true)},
			helm, "--scheduler-account", preflight.Keep, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := preflight.Schedulers(context.Background(), tc.items, preflight.Options{Evaluator: host,
				Settings: json.RawMessage(tc.settings), SchedulerAccount: tc.flag})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("got %d schedulers, want 1: %+v", len(got), got)
			}
			s := got[0]
			if s.Account != tc.account || !strings.HasPrefix(s.Source, tc.source) || s.Outcome != tc.outcome || s.PlaceholdersWillCarry != tc.carry {
				t.Errorf("got %s from %q: %s carrying %q, want %s from %q: %s carrying %q\nwhy: %s",
					s.Account, s.Source, s.Outcome, s.PlaceholdersWillCarry, tc.account, tc.source, tc.outcome, tc.carry, s.Why)
			}
			for _, part := range tc.why {
				if !strings.Contains(s.Why, part) {
					t.Errorf("why %q does not contain %q", s.Why, part)
				}
			}
		})
	}
}

func TestSchedulers_EachSchedulerDeploymentOnce(t *testing.T) {
	items := []preflight.Object{
		schedulerDeployment("a", "yunikorn-scheduler", "yunikorn-admin", true),
		schedulerDeployment("a", "yunikorn-scheduler-canary", "yunikorn-admin", true),
		schedulerDeployment("b", "yunikorn-scheduler", "yunikorn-admin", true),
	}
	got, err := preflight.Schedulers(context.Background(), items, preflight.Options{Evaluator: policyHost(t), Settings: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Account != "system:serviceaccount:a:yunikorn-admin" || got[1].Account != "system:serviceaccount:b:yunikorn-admin" {
		t.Errorf("got %+v, want a's and b's accounts once each", got)
	}
}

func TestParseAccount(t *testing.T) {
	for in, ok := range map[string]bool{"yunikorn/yunikorn-admin": true, "yunikorn": false, "/a": false, "a/": false, "a/b/c": false,
		"system:serviceaccount:yunikorn:yunikorn-admin": false} {
		if _, _, err := preflight.ParseAccount(in); (err == nil) != ok {
			t.Errorf("%q: error %v, want ok %v", in, err, ok)
		}
	}
}
