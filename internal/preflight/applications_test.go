package preflight_test

import (
	"encoding/json"
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
