package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// The table's paths must say what the walk does for the built-in kinds: the guarded map is
// <container>.metadata.annotations, created below the container (">") for the kinds the policy stamps,
// only read for a Binding.
func TestKinds_TableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		id := k.Group + "/" + k.Kind
		if seen[id] {
			t.Errorf("%s is declared twice", id)
		}
		seen[id] = true
		if len(k.Resources) == 0 || len(k.Operations) == 0 {
			t.Errorf("%s: no resources or operations", id)
		}
		_, after, creates := strings.Cut(k.Path, ">")
		if !creates {
			after = k.Path
		}
		if after != "metadata.annotations" && !strings.HasSuffix(after, ".metadata.annotations") {
			t.Errorf("%s: path %q does not end in metadata.annotations", id, k.Path)
		}
		if creates != (k.Handling != BindingHandling) {
			t.Errorf("%s: path %q: the kinds the policy stamps create the map (>), a Binding only reads it", id, k.Path)
		}
		want := []string(nil)
		if container := strings.Trim(strings.TrimSuffix(strings.ReplaceAll(k.Path, ">", "."), "metadata.annotations"), "."); container != "" {
			want = strings.Split(container, ".")
		}
		if diff := cmp.Diff(want, container(&k)); diff != "" {
			t.Errorf("%s: container of %q (-want +got):\n%s", id, k.Path, diff)
		}
		for _, path := range []string{k.Path, strings.TrimSuffix(k.Path, "annotations") + "labels"} {
			if _, problem := walk.Parse(path, false, true); problem != "" {
				t.Errorf("%s: path %q: %s", id, path, problem)
			}
		}
		w, ours := kindOf(k.Group, k.Kind, k.Operations[0])
		if !ours || w.name != k.Kind || w.handling != k.Handling {
			t.Errorf("%s: kindOf gives %+v, %v", id, w, ours)
		}
		if (k.Handling == PodHandling) != (k.Kind == "Pod") {
			t.Errorf("%s: only a Pod is handled by the pod rules", id)
		}
	}
}

func TestKinds_CronJobTemplateIsUnderJobTemplate(t *testing.T) {
	w, _ := kindOf("batch", "CronJob", opCreate)
	if got := w.where; got != "spec.jobTemplate.spec.template.metadata" {
		t.Fatal(got)
	}
	if _, ours := kindOf("", "Binding", opUpdate); ours {
		t.Fatal("the policy decides on CREATE of a Binding only")
	}
}
