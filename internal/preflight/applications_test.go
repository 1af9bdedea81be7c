package preflight_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/preflight"
)

// pod is a pod YuniKorn schedules: namespace, name, creation time, labels and its user.info value ("" for none).
func pod(ns, name, created string, labels map[string]string, value string) preflight.Object {
	meta := map[string]any{"namespace": ns, "name": name, "creationTimestamp": created}
	if labels != nil {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		meta["labels"] = l
	}
	if value != "" {
		meta["annotations"] = map[string]any{preflight.AnnotationKey: value}
	}
	return preflight.Object{"kind": "Pod", "metadata": meta, "spec": map[string]any{"schedulerName": "yunikorn"}}
}

func configMap(name string, data map[string]any) preflight.Object {
	return preflight.Object{"kind": "ConfigMap", "metadata": map[string]any{"namespace": "yunikorn", "name": name}, "data": data}
}

func TestApplications_GeneratedApplicationIsChargedToItsFirstPod(t *testing.T) {
	items := []preflight.Object{
		pod("team", "b", "2026-11-26T10:00:05Z", nil, bob),
		pod("team", "a", "2026-11-26T10:00:01Z", nil, alice),
		pod("team", "c", "2026-11-26T10:00:09Z", map[string]string{"yunikorn.apache.org/username": "carol"}, ""),
		pod("team", "own", "2026-11-26T10:00:00Z", map[string]string{"applicationId": "bob-job"}, bob),
		{"kind": "Pod", "metadata": map[string]any{"namespace": "team", "name": "default-scheduler"}, "spec": map[string]any{}},
	}
	got := preflight.ApplicationsOf(items)
	want := preflight.Applications{Source: "default", Shared: []preflight.SharedApplication{{
		Namespace: "team", ApplicationID: "yunikorn-team-autogen", Generated: true, Charged: "alice", FirstPod: "a",
		Others: map[string]int{"bob": 1, "carol": 1}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestApplications_ExplicitIDSharedByTwoUsers(t *testing.T) {
	items := []preflight.Object{
		pod("ml", "alice-1", "2026-11-26T10:00:01Z", map[string]string{"applicationId": "train"}, alice),
		pod("ml", "bob-1", "2026-11-26T10:00:01Z", map[string]string{"yunikorn.apache.org/app-id": "train"}, bob),
		pod("ml", "broken", "2026-11-26T10:00:02Z", map[string]string{"spark-app-selector": "train"}, `{"user":`),
	}
	got := preflight.ApplicationsOf(items)
	// same second: the input order decides, as an informer's list would
	want := []preflight.SharedApplication{{Namespace: "ml", ApplicationID: "train", Charged: "alice", FirstPod: "alice-1",
		Others: map[string]int{"bob": 1, "nobody": 1}}}
	if diff := cmp.Diff(want, got.Shared); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestApplications_GenerateUniqueAppIDFromTheConfigMaps(t *testing.T) {
	pods := []preflight.Object{
		pod("team", "a", "2026-11-26T10:00:01Z", nil, alice),
		pod("team", "b", "2026-11-26T10:00:02Z", nil, bob),
	}
	for _, tc := range []struct {
		name       string
		maps       []preflight.Object
		wantUnique bool
		wantSource string
		wantShared int
	}{
		{"no ConfigMap", nil, false, "default", 1},
		{"defaults on", []preflight.Object{configMap("yunikorn-defaults", map[string]any{preflight.GenerateUniqueAppIDKey: "true"})},
			true, "yunikorn/yunikorn-defaults", 0},
		{"configs win over defaults", []preflight.Object{
			configMap("yunikorn-configs", map[string]any{preflight.GenerateUniqueAppIDKey: "false"}),
			configMap("yunikorn-defaults", map[string]any{preflight.GenerateUniqueAppIDKey: "true"})},
			false, "yunikorn/yunikorn-configs", 1},
		{"not a boolean", []preflight.Object{configMap("yunikorn-configs", map[string]any{preflight.GenerateUniqueAppIDKey: "yes"})},
			false, "yunikorn/yunikorn-configs", 1},
		{"another key", []preflight.Object{configMap("yunikorn-configs", map[string]any{"queues.yaml": "partitions: []"})},
			false, "default", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := preflight.ApplicationsOf(append(append([]preflight.Object{}, tc.maps...), pods...))
			if got.GenerateUniqueAppID != tc.wantUnique || got.Source != tc.wantSource || len(got.Shared) != tc.wantShared {
				out, _ := json.Marshal(got)
				t.Errorf("got %s, want generateUniqueAppId %v from %s and %d shared", out, tc.wantUnique, tc.wantSource, tc.wantShared)
			}
		})
	}
}

func TestApplications_LongNamespaceIsCutAsYuniKornCutsIt(t *testing.T) {
	ns := "a-namespace-whose-name-is-long-enough-to-lose-the-suffix"
	got := preflight.ApplicationsOf([]preflight.Object{
		pod(ns, "a", "2026-11-26T10:00:01Z", nil, alice),
		pod(ns, "b", "2026-11-26T10:00:02Z", nil, bob),
	})
	if len(got.Shared) != 1 || got.Shared[0].ApplicationID != ("yunikorn-" + ns)[:63] {
		t.Errorf("got %+v, want one shared application named %q", got.Shared, ("yunikorn-" + ns)[:63])
	}
}

// ykAdmin is the value the policy stamps for the Helm chart's scheduler account.
const ykAdmin = `{"user":"system:serviceaccount:yunikorn:yunikorn-admin","groups":["system:serviceaccounts","system:serviceaccounts:yunikorn","system:authenticated"]}`

// marked is p with a placeholder marker: an annotation, or with label true the old label.
func marked(p preflight.Object, key, value string, label bool) preflight.Object {
	meta := p["metadata"].(map[string]any)
	where := "annotations"
	if label {
		where = "labels"
	}
	m, _ := meta[where].(map[string]any)
	if m == nil {
		m = map[string]any{}
		meta[where] = m
	}
	m[key] = value
	return p
}

func gangItems() []preflight.Object {
	id := func(key, app string) map[string]string { return map[string]string{key: app} }
	aliceOtherGroups := `{"user":"alice","groups":["system:authenticated"]}`
	return []preflight.Object{
		// spark-1: alice's driver; YuniKorn 1.8's placeholders carry the scheduler, a 1.4 one carries none.
		pod("ml", "driver", "2026-11-26T10:00:01Z", id("spark-app-selector", "spark-1"), alice),
		marked(pod("ml", "tg-a", "2026-11-26T10:00:02Z", id("yunikorn.apache.org/app-id", "spark-1"), ykAdmin), preflight.PlaceholderAnnotation, "true", false),
		marked(pod("ml", "tg-b", "2026-11-26T10:00:02Z", id("yunikorn.apache.org/app-id", "spark-1"), ykAdmin), preflight.PlaceholderAnnotation, "true", false),
		marked(pod("ml", "tg-c", "2026-11-26T10:00:02Z", id("applicationId", "spark-1"), ""), preflight.OldPlaceholderAnnotation, "true", false),
		pod("ml", "executor", "2026-11-26T10:00:09Z", id("spark-app-selector", "spark-1"), alice),
		// gang-ok: the placeholders (YuniKorn 1.4's label) carry the originator's value: nothing to say.
		pod("ml", "ok-0", "2026-11-26T10:00:01Z", id("applicationId", "gang-ok"), bob),
		marked(pod("ml", "ok-tg", "2026-11-26T10:00:02Z", id("applicationId", "gang-ok"), bob), preflight.OldPlaceholderLabel, "true", true),
		// not-a-gang: the new marker says false, and YuniKorn 1.8 reads it before the old one.
		pod("ml", "nag-0", "2026-11-26T10:00:01Z", id("applicationId", "not-a-gang"), bob),
		marked(marked(pod("ml", "nag-1", "2026-11-26T10:00:02Z", id("applicationId", "not-a-gang"), ykAdmin),
			preflight.PlaceholderAnnotation, "false", false), preflight.OldPlaceholderAnnotation, "true", false),
		// orphan: placeholders without an originator in the input cannot be compared.
		marked(pod("ml", "orphan-tg", "2026-11-26T10:00:02Z", id("applicationId", "orphan"), ykAdmin), preflight.PlaceholderAnnotation, "true", false),
		// groups: the same user with other groups is another identity (ACLs read the groups).
		pod("batch", "g-0", "2026-11-26T10:00:01Z", id("yunikorn.apache.org/app-id", "groups"), alice),
		marked(pod("batch", "g-tg", "2026-11-26T10:00:02Z", id("yunikorn.apache.org/app-id", "groups"), aliceOtherGroups), preflight.PlaceholderAnnotation, "1", false),
	}
}

func TestApplications_PlaceholdersWithAnotherIdentityThanTheirOriginator(t *testing.T) {
	got := preflight.ApplicationsOf(gangItems())
	want := []preflight.GangApplication{
		{Namespace: "batch", ApplicationID: "groups", OriginatorPod: "g-0", Originator: alice,
			Placeholders: map[string]int{`{"user":"alice","groups":["system:authenticated"]}`: 1}},
		{Namespace: "ml", ApplicationID: "spark-1", OriginatorPod: "driver", Originator: alice,
			Placeholders: map[string]int{ykAdmin: 2, "": 1}},
	}
	if diff := cmp.Diff(want, got.Gangs); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestWriteText_GangApplicationsAndTheScheduler(t *testing.T) {
	var out strings.Builder
	preflight.WriteText(&out, nil, gangItems(), []preflight.Scheduler{{Account: "system:serviceaccount:yunikorn:yunikorn-admin",
		Source: "--scheduler-account", Outcome: preflight.Refuse, Why: "the scheduler is not trusted"}})
	text := out.String()
	t.Log(text)
	for _, line := range []string{
		"YuniKorn's scheduler: system:serviceaccount:yunikorn:yunikorn-admin (--scheduler-account)",
		"  its placeholders: refuse: the scheduler is not trusted",
		"gang applications whose placeholders carry another identity than their originator:",
		// the same user: the values themselves
		"batch      groups       " + alice + " (g-0)  " + `{"user":"alice","groups":["system:authenticated"]}: 1`,
		"ml         spark-1      alice (driver)",
		"none: 1, system:serviceaccount:yunikorn:yunikorn-admin: 2",
		"existing placeholders",
		"keep their value until the gang is recreated",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("no %q in the report", line)
		}
	}

	out.Reset()
	preflight.WriteText(&out, nil, nil, nil)
	if want := "no gang application of the input's YuniKorn pods has placeholders with another identity than its originator\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("report without gangs:\n%s\nwant it to end with %q", out.String(), want)
	}
}
