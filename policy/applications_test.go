package policy

import (
	"strings"
	"testing"
)

// Rule 14: applications; rule 15 on built-in kinds: task groups.

func TestRule14_GeneratedIDs(t *testing.T) {
	long := strings.Repeat("n", 60) // yunikorn-<60>-autogen is 77 characters: cut to 63
	for _, tc := range []struct {
		id, namespace string
		foreign       bool
		shown         string
	}{
		{"yunikorn-team-b-autogen", "team-a", true, "team-b"},
		{"yunikorn-team-a-autogen", "team-a", false, ""},
		{"my-app", "team-a", false, ""},
		{"yunikorn-job", "team-a", false, ""}, // explicit: not generated
		{generatedID(long), long, false, ""},
		{generatedID(long), "team-a", true, long[:54]},
		{"yunikorn-" + strings.Repeat("x", 54), "team-a", true, strings.Repeat("x", 54)}, // 63 characters
		{"yunikorn-" + strings.Repeat("x", 53), "team-a", false, ""},
		{"yunikorn-team-b-autogen", "", true, "team-b"},
	} {
		shown, foreign := foreignGeneratedID(tc.id, tc.namespace)
		if foreign != tc.foreign || shown != tc.shown {
			t.Errorf("%q in %q: got %v %q, want %v %q", tc.id, tc.namespace, foreign, shown, tc.foreign, tc.shown)
		}
	}
	if got := generatedID(long); len(got) != 63 || !strings.HasPrefix(got, "yunikorn-nnn") {
		t.Fatalf("generatedID cuts to 63 characters: %q", got)
	}
}

func TestRule14_AnotherNamespacesGeneratedApplicationIsRefused(t *testing.T) {
	for _, source := range []struct{ mapName, key string }{
		{"labels", "yunikorn.apache.org/app-id"}, {"annotations", "yunikorn.apache.org/app-id"},
		{"labels", "applicationId"}, {"labels", "spark-app-selector"},
	} {
		for _, fx := range []struct{ name, kind string }{
			{"pod-create-alice", "Pod"}, {"deployment-create-alice", "Deployment"}, {"cronjob-create-alice", "CronJob"},
		} {
			req := fixture(t, fx.name)
			for _, label := range []string{"yunikorn.apache.org/app-id", "applicationId", "spark-app-selector"} {
				setEntry(object(req, "object"), fx.kind, "labels", label, nil)
			}
			setEntry(object(req, "object"), fx.kind, source.mapName, source.key, "yunikorn-team-b-autogen")
			for _, settings := range []string{"", rejectSettings} {
				resp, _ := evaluateReq(t, req, settings)
				expectRejected(t, resp, otherNamespacesApplicationRefusal("yunikorn-team-b-autogen", "team-b"))
			}
			// the object's own namespace's application, and an explicit ID, are not refused
			for _, id := range []string{"yunikorn-team-a-autogen", "yunikorn-team-b-app"} {
				setEntry(object(req, "object"), fx.kind, source.mapName, source.key, id)
				if resp, _ := evaluateReq(t, req, ""); !resp.Accepted {
					t.Fatalf("%s %s=%s: %+v", fx.name, source.key, id, resp)
				}
			}
		}
	}
}

func TestRule14_TheFirstNonEmptySourceIsTheID(t *testing.T) {
	req := fixture(t, "pod-create-alice")
	obj := object(req, "object")
	setEntry(obj, "Pod", "labels", "yunikorn.apache.org/app-id", "") // empty: skipped, as YuniKorn does
	setEntry(obj, "Pod", "annotations", "yunikorn.apache.org/app-id", "")
	setEntry(obj, "Pod", "labels", "applicationId", "yunikorn-team-b-autogen")
	setEntry(obj, "Pod", "labels", "spark-app-selector", "mine")
	resp, _ := evaluateReq(t, req, "")
	expectRejected(t, resp, otherNamespacesApplicationRefusal("yunikorn-team-b-autogen", "team-b"))
	// an earlier source wins
	setEntry(obj, "Pod", "annotations", "yunikorn.apache.org/app-id", "mine")
	if resp, _ = evaluateReq(t, req, ""); !resp.Accepted {
		t.Fatalf("%+v", resp)
	}
}

func TestRule14_TrustedRequestersAndSystemUsersAreNotChecked(t *testing.T) {
	req := fixture(t, "pod-create-alice")
	setEntry(object(req, "object"), "Pod", "labels", "applicationId", "yunikorn-team-b-autogen")
	req["userInfo"] = map[string]any{"username": "airflow", "groups": []string{"system:authenticated"}}
	if resp, _ := evaluateReq(t, req, externalSettings); !resp.Accepted {
		t.Fatalf("trusted external: %+v", resp)
	}
	rs := fixture(t, "replicaset-create-deployment-controller")
	setEntry(object(rs, "object"), "ReplicaSet", "labels", "applicationId", "yunikorn-team-b-autogen")
	expectAccepted(t, func() response { r, _ := evaluateReq(t, rs, ""); return r }())
}

func TestRule14_WorkloadUpdateIsCheckedWhenTheIDChanges(t *testing.T) {
	req := fixture(t, "deployment-update-image")
	setEntry(object(req, "object"), "Deployment", "labels", "applicationId", "yunikorn-team-b-autogen")
	resp, _ := evaluateReq(t, req, "")
	expectRejected(t, resp, otherNamespacesApplicationRefusal("yunikorn-team-b-autogen", "team-b"))
	// unchanged: not checked (it was there before the policy, or a trusted requester put it there)
	setEntry(object(req, "oldObject"), "Deployment", "labels", "applicationId", "yunikorn-team-b-autogen")
	resp, _ = evaluateReq(t, req, "")
	if !resp.Accepted {
		t.Fatalf("%+v", resp)
	}
}

func TestRule14_DuplicateOrNonStringSourcesAreBadInput(t *testing.T) {
	payload := `{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"a",` +
		`"userInfo":{"username":"bob"},"object":{"metadata":{"labels":{"applicationId":"x","applicationId":"yunikorn-b-autogen"}}}},"settings":{}}`
	resp, _ := evaluateRaw(t, payload)
	expectRejected(t, resp, `labels.applicationId occurs more than once`)
	resp, _ = evaluateRaw(t, strings.Replace(payload, `"applicationId":"x","applicationId":"yunikorn-b-autogen"`, `"applicationId":1`, 1))
	expectRejected(t, resp, `["applicationId"] must be a string`)
	resp, _ = evaluateRaw(t, strings.Replace(payload, `"namespace":"a",`, `"namespace":"a","namespace":"b",`, 1))
	expectRejected(t, resp, "request.namespace occurs more than once")
}

func TestRule14_BothReadingsOfTheIDAreChecked(t *testing.T) {
	// YuniKorn 1.8 reads the label first (its own application), 1.4 knows no such label and reads the
	// annotation (another namespace's generated one): the pod would join that one under 1.4.
	for _, fx := range []struct{ name, kind string }{{"pod-create-alice", "Pod"}, {"deployment-create-alice", "Deployment"}} {
		req := fixture(t, fx.name)
		obj := object(req, "object")
		setEntry(obj, fx.kind, "labels", "yunikorn.apache.org/app-id", "mine")
		setEntry(obj, fx.kind, "annotations", "yunikorn.apache.org/app-id", "yunikorn-team-b-autogen")
		for _, settings := range []string{"", rejectSettings} {
			resp, _ := evaluateReq(t, req, settings)
			expectRejected(t, resp, otherNamespacesApplicationRefusal("yunikorn-team-b-autogen", "team-b"))
		}
		// and the other way round: the label names the foreign one, the annotation its own
		setEntry(obj, fx.kind, "labels", "yunikorn.apache.org/app-id", "yunikorn-team-b-autogen")
		setEntry(obj, fx.kind, "annotations", "yunikorn.apache.org/app-id", "mine")
		resp, _ := evaluateReq(t, req, "")
		expectRejected(t, resp, otherNamespacesApplicationRefusal("yunikorn-team-b-autogen", "team-b"))
	}
}

func TestRule14b_APodsApplicationCannotChange(t *testing.T) {
	bob := map[string]any{"username": "bob", "groups": []string{"qa", "system:authenticated"}}
	for _, tc := range []struct {
		name             string
		mapName, key     string
		value            any // nil removes it
		wantOld, wantNew string
	}{
		{"relabelled onto alice's application", "labels", "applicationId", "alice-app", "analytics-0042", "alice-app"},
		{"the ID label removed", "labels", "applicationId", nil, "analytics-0042", "none"},
		{"1.8's label added", "labels", "yunikorn.apache.org/app-id", "alice-app", "analytics-0042", "alice-app"},
		{"1.4's annotation added", "annotations", "yunikorn.apache.org/app-id", "alice-app", "analytics-0042", "alice-app"},
		{"emptied", "labels", "applicationId", "", "analytics-0042", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fixture(t, "pod-update-status")
			req["userInfo"] = bob
			setEntry(object(req, "object"), "Pod", tc.mapName, tc.key, tc.value)
			for _, settings := range []string{"", rejectSettings} {
				resp, _ := evaluateReq(t, req, settings)
				expectRejected(t, resp, rule14bRefusal(tc.wantOld, tc.wantNew))
			}
			// a trusted requester is not checked
			req["userInfo"] = map[string]any{"username": "system:serviceaccount:kube-system:job-controller"}
			resp, _ := evaluateReq(t, req, "")
			expectAccepted(t, resp)
		})
	}
	// an ID from none: the old pod named no application
	req := fixture(t, "pod-update-status")
	req["userInfo"] = bob
	setEntry(object(req, "oldObject"), "Pod", "labels", "applicationId", nil)
	resp, _ := evaluateReq(t, req, "")
	expectRejected(t, resp, rule14bRefusal("none", "analytics-0042"))
	// a change that leaves both readings as they were passes: another label, or a source read after the ID
	req = fixture(t, "pod-update-status")
	req["userInfo"] = bob
	setEntry(object(req, "object"), "Pod", "labels", "spark-app-selector", "other")
	setEntry(object(req, "object"), "Pod", "labels", "app", "renamed")
	resp, _ = evaluateReq(t, req, "")
	expectAccepted(t, resp)
}
