package shipcheck

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// clusterAdmissionPolicy is the part of a policies.kubewarden.io/v1 ClusterAdmissionPolicy the examples
// use; decodeStrict rejects any other (or misspelt) field.
type clusterAdmissionPolicy struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Module            string           `yaml:"module"`
		Mode              string           `yaml:"mode"`
		Mutating          *bool            `yaml:"mutating"`
		BackgroundAudit   *bool            `yaml:"backgroundAudit"`
		FailurePolicy     string           `yaml:"failurePolicy"`
		Rules             []rule           `yaml:"rules"`
		MatchConditions   []matchCondition `yaml:"matchConditions"`
		NamespaceSelector labelSelector    `yaml:"namespaceSelector"`
		Settings          map[string]any   `yaml:"settings"`
	} `yaml:"spec"`
}

// matchCondition is a CEL expression the API server evaluates before calling the webhook.
type matchCondition struct {
	Name       string `yaml:"name"`
	Expression string `yaml:"expression"`
}

// labelSelector has no matchLabels on purpose: the Kubewarden controller copies only the matchExpressions
// of a policy's namespaceSelector into the webhook and drops its matchLabels (README "What an operator
// should set"), so an example using them fails the strict decoding here.
type labelSelector struct {
	MatchExpressions []struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	} `yaml:"matchExpressions"`
}

// settingsSummary is what an example's settings amount to once the policy has parsed them.
type settingsSummary struct {
	BypassAuth            bool
	BypassControllers     bool
	OnUntrustedAnnotation string
	LegacyUserLabel       string
	SystemUsers           int // number of patterns
	ExternalUsers         int
	ExternalGroups        int
	CustomKinds           []string // group/kind of each declared kind
}

func summarize(s policy.Settings) settingsSummary {
	return settingsSummary{
		BypassAuth:            s.BypassAuth,
		BypassControllers:     s.BypassControllers,
		OnUntrustedAnnotation: s.OnUntrustedAnnotation,
		LegacyUserLabel:       s.LegacyUserLabel,
		SystemUsers:           s.SystemUsers.Len(),
		ExternalUsers:         s.ExternalUsers.Len(),
		ExternalGroups:        s.ExternalGroups.Len(),
		CustomKinds:           customKinds(s),
	}
}

func customKinds(s policy.Settings) []string {
	kinds, _ := s.CustomWorkloads()
	var out []string
	for i := range kinds {
		out = append(out, kinds[i].APIGroup+"/"+kinds[i].Kind)
	}
	return out
}

// exampleCase is one file of examples/ and what it is for.
type exampleCase struct {
	file     string
	wantMode string
	want     settingsSummary
	// trusted and untrusted are user names the example's systemUsers must and must not match.
	trusted, untrusted []string
	// settingsFile is the example's settings as the e2e tests (testdata/settings/) or native.bats (test/native/) read them.
	settingsFile string
	// guards names the example this one guards: the same policy with mutating: false (TestExamples_TheGuard).
	guards string
}

// scheduler is YuniKorn's scheduler as the Helm chart installs it: it creates gang scheduling's placeholder
// pods, which carry the user.info the policy writes into the task groups only while it is trusted, so every
// example trusts it.
const scheduler = "system:serviceaccount:yunikorn:yunikorn-admin"

func exampleCases(t *testing.T) []exampleCase {
	t.Helper()
	// The defaults with the scheduler added, which every example starts from.
	defaults := summarize(defaultSettings(t))
	defaults.SystemUsers++
	with := func(change func(*settingsSummary)) settingsSummary {
		s := defaults
		change(&s)
		return s
	}
	return []exampleCase{
		{
			file: "default.yaml", wantMode: "protect", want: defaults,
			trusted:   []string{"system:serviceaccount:kube-system:replicaset-controller", "system:kube-controller-manager", scheduler},
			untrusted: []string{"system:serviceaccount:kube-system-evil:sa", "system:serviceaccount:yunikorn-evil:yunikorn-admin"},
		},
		{
			file: "guard.yaml", wantMode: "protect", want: defaults, guards: "default.yaml",
			trusted: []string{"system:serviceaccount:kube-system:replicaset-controller", "system:kube-controller-manager", scheduler},
		},
		{
			file: "strict.yaml", wantMode: "protect",
			want:    with(func(s *settingsSummary) { s.OnUntrustedAnnotation = policy.ModeReject }),
			trusted: []string{scheduler},
		},
		{
			file: "no-service-account-credentials.yaml", wantMode: "protect",
			want:      with(func(s *settingsSummary) { s.SystemUsers = 2 }),
			trusted:   []string{"system:kube-controller-manager", scheduler},
			untrusted: []string{"system:serviceaccount:kube-system:coredns", "system:kube-controller-manager-evil"},
		},
		{
			file: "external-submitters.yaml", wantMode: "protect",
			want:    with(func(s *settingsSummary) { s.BypassAuth, s.ExternalUsers, s.ExternalGroups = true, 1, 1 }),
			trusted: []string{scheduler},
			// test/cluster/native.bats's external-submitters set reads these settings
			settingsFile: "test/native/external-submitters.json",
		},
		{
			file: "monitor.yaml", wantMode: "monitor",
			want:    with(func(s *settingsSummary) { s.OnUntrustedAnnotation = policy.ModeReject }),
			trusted: []string{scheduler},
		},
		operatorCase(with, "spark-operator.yaml", "system:serviceaccount:spark-operator:spark-operator-controller",
			"sparkoperator.k8s.io/SparkApplication", "sparkoperator.k8s.io/ScheduledSparkApplication"),
		operatorCase(with, "kuberay.yaml", "system:serviceaccount:ray-system:kuberay-operator",
			"ray.io/RayCluster", "ray.io/RayJob", "ray.io/RayService"),
		operatorCase(with, "flink-operator.yaml", "system:serviceaccount:flink-operator:flink-operator",
			"flink.apache.org/FlinkDeployment"),
		operatorCase(with, "kubeflow-training.yaml", "system:serviceaccount:kubeflow:training-operator",
			"kubeflow.org/PyTorchJob", "kubeflow.org/TFJob", "kubeflow.org/MPIJob"),
		operatorCase(with, "argo-workflows.yaml", "system:serviceaccount:argo:argo",
			"argoproj.io/Workflow", "argoproj.io/CronWorkflow", "argoproj.io/WorkflowTemplate", "argoproj.io/ClusterWorkflowTemplate"),
	}
}

// operatorCase is an example for an operator's custom resources: the defaults and the scheduler, the
// operator's account added to systemUsers, and the declared kinds.
func operatorCase(with func(func(*settingsSummary)) settingsSummary, file, operator string, kinds ...string) exampleCase {
	return exampleCase{
		file: file, wantMode: "protect",
		want:      with(func(s *settingsSummary) { s.SystemUsers, s.CustomKinds = 4, kinds }),
		trusted:   []string{"system:serviceaccount:kube-system:replicaset-controller", operator, scheduler},
		untrusted: []string{"system:serviceaccount:team-a:default", operator + "-evil"},
		// the e2e tests read these settings
		settingsFile: "testdata/settings/" + strings.TrimSuffix(file, ".yaml") + ".json",
	}
}

// A new example needs a row in exampleCases (and a line in the README), a removed one must leave it.
func TestExamples_EveryFileHasACase(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		matches, err := filepath.Glob(repoPath("examples/" + pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			files = append(files, filepath.Base(m))
		}
	}
	var cases []string
	for _, c := range exampleCases(t) {
		cases = append(cases, c.file)
	}
	sort.Strings(files)
	sort.Strings(cases)
	if diff := cmp.Diff(cases, files); diff != "" {
		t.Errorf("examples/ differs from exampleCases (-cases +files):\n%s", diff)
	}
}

func TestExamples(t *testing.T) {
	md := loadMetadata(t)
	for _, tc := range exampleCases(t) {
		t.Run(tc.file, func(t *testing.T) {
			data := readRepoFile(t, "examples/"+tc.file)
			if !strings.HasPrefix(string(data), "# ") {
				t.Error("the file does not start with a comment saying when to use it")
			}
			var pol clusterAdmissionPolicy
			decodeStrict(t, tc.file, data, &pol)

			fields := []struct {
				field string
				got   any
				want  any
			}{
				{"apiVersion", pol.APIVersion, "policies.kubewarden.io/v1"},
				{"kind", pol.Kind, "ClusterAdmissionPolicy"},
				{"spec.module", pol.Spec.Module, moduleRef(md)},
				{"spec.mode", pol.Spec.Mode, tc.wantMode},
				{"spec.mutating", deref(pol.Spec.Mutating), deref(md.Mutating) == true && tc.guards == ""},
				{"spec.backgroundAudit", deref(pol.Spec.BackgroundAudit), deref(md.BackgroundAudit)},
				{"spec.failurePolicy", pol.Spec.FailurePolicy, "Fail"},
			}
			for _, f := range fields {
				if f.got != f.want {
					t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
				}
			}
			if pol.Metadata.Name == "" {
				t.Error("metadata.name is empty")
			}
			s := checkSettings(t, pol.Spec.Settings, tc)
			if diff := cmp.Diff(append(md.Rules[:len(md.Rules):len(md.Rules)], customRules(t, s)...), pol.Spec.Rules); diff != "" {
				t.Errorf("spec.rules differ from metadata.yml rules and the declared kinds' (-want +example):\n%s", diff)
			}
			checkNamespaceSelector(t, pol.Spec.NamespaceSelector)
			if tc.settingsFile != "" {
				checkSettingsFile(t, tc.settingsFile, pol.Spec.Settings)
			}
			checkMatchConditions(t, pol.Spec.MatchConditions, s)
		})
	}
}

// The guard is the example it guards deployed again without mutations: the same rules, matchConditions,
// namespaceSelector, settings, mode and module, under the guarded policy's name with "-guard".
func TestExamples_TheGuard(t *testing.T) {
	for _, tc := range exampleCases(t) {
		if tc.guards == "" {
			continue
		}
		var guard, guarded clusterAdmissionPolicy
		decodeStrict(t, tc.file, readRepoFile(t, "examples/"+tc.file), &guard)
		decodeStrict(t, tc.guards, readRepoFile(t, "examples/"+tc.guards), &guarded)
		if guard.Metadata.Name != guarded.Metadata.Name+"-guard" {
			t.Errorf("%s: metadata.name %q, want %q", tc.file, guard.Metadata.Name, guarded.Metadata.Name+"-guard")
		}
		if deref(guard.Spec.Mutating) != false || deref(guarded.Spec.Mutating) != true {
			t.Errorf("%s guards %s: want mutating false beside true", tc.file, tc.guards)
		}
		guard.Spec.Mutating = guarded.Spec.Mutating
		if diff := cmp.Diff(guarded.Spec, guard.Spec); diff != "" {
			t.Errorf("%s differs from %s, which it guards, in more than mutating (-%s +%s):\n%s", tc.file, tc.guards, tc.guards, tc.file, diff)
		}
	}
}

// customRules are the webhook rules the declared kinds need after metadata.yml's: one rule per API group,
// in declaration order, listing each kind's resource (its lower-case plural), every version, CREATE and
// UPDATE (the operations rules 11-13 decide on).
func customRules(t *testing.T, s policy.Settings) []rule {
	t.Helper()
	kinds, problems := s.CustomWorkloads()
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var rules []rule
	for j := range kinds {
		k := &kinds[j]
		i := slices.IndexFunc(rules, func(r rule) bool { return r.APIGroups[0] == k.APIGroup })
		if i < 0 {
			rules = append(rules, rule{APIGroups: []string{k.APIGroup}, APIVersions: []string{"*"}, Operations: []string{"CREATE", "UPDATE"}})
			i = len(rules) - 1
		}
		rules[i].Resources = append(rules[i].Resources, strings.ToLower(k.Kind)+"s")
	}
	return rules
}

// checkSettingsFile wants the settings file the e2e tests use to be the example's settings.
func checkSettingsFile(t *testing.T, file string, settings map[string]any) {
	t.Helper()
	var fromFile any
	if err := json.Unmarshal(readRepoFile(t, file), &fromFile); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var fromExample any
	data, _ := json.Marshal(settings)
	_ = json.Unmarshal(data, &fromExample)
	if diff := cmp.Diff(fromExample, fromFile); diff != "" {
		t.Errorf("%s differs from the example's spec.settings (-example +file):\n%s", file, diff)
	}
}

// checkNamespaceSelector wants kube-system and Kubewarden's own namespace left out, so that a broken
// policy-server can neither block the control plane nor its own restart.
func checkNamespaceSelector(t *testing.T, sel labelSelector) {
	t.Helper()
	excluded := map[string]bool{}
	for _, e := range sel.MatchExpressions {
		if e.Key == "kubernetes.io/metadata.name" && e.Operator == "NotIn" {
			for _, v := range e.Values {
				excluded[v] = true
			}
		}
	}
	for _, ns := range []string{"kube-system", "kubewarden"} {
		if !excluded[ns] {
			t.Errorf("spec.namespaceSelector does not exclude namespace %s (kubernetes.io/metadata.name NotIn)", ns)
		}
	}
}

// validSettings hands v to the policy's validation as JSON, as policy-server hands it the settings, and
// fails t unless the policy accepts them; what names v in the message.
func validSettings(t *testing.T, what string, v any) policy.Settings {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %s: %v", what, err)
	}
	s, msg := policy.CheckSettings(data)
	if msg != "" {
		t.Fatalf("%s %s are invalid: %s", what, data, msg)
	}
	return s
}

// checkSettings runs the example's settings through the policy's own validation, exactly as
// validate_settings sees them (policy-server hands the policy the settings as JSON).
func checkSettings(t *testing.T, settings map[string]any, tc exampleCase) policy.Settings {
	t.Helper()
	if settings == nil {
		settings = map[string]any{}
	}
	s := validSettings(t, "spec.settings", settings)
	if diff := cmp.Diff(tc.want, summarize(s)); diff != "" {
		t.Errorf("spec.settings amount to something else than the example is for (-want +got):\n%s", diff)
	}
	for _, user := range tc.trusted {
		if !s.SystemUsers.MatchString(user) {
			t.Errorf("systemUsers does not match %q", user)
		}
	}
	for _, user := range tc.untrusted {
		if s.SystemUsers.MatchString(user) {
			t.Errorf("systemUsers matches %q", user)
		}
	}
	return s
}

// checkMatchConditions wants every example to spare the policy the same requests as examples/default.yaml
// (the cluster suite registers default.yaml's conditions and proves them), naming the annotation, the
// legacy label the example's settings put in effect, the application ID's sources and the task groups, and
// only kinds of the policy's table.
func checkMatchConditions(t *testing.T, conditions []matchCondition, s policy.Settings) {
	t.Helper()
	var def clusterAdmissionPolicy
	decodeStrict(t, "default.yaml", readRepoFile(t, "examples/default.yaml"), &def)
	if diff := cmp.Diff(def.Spec.MatchConditions, conditions); diff != "" {
		t.Errorf("spec.matchConditions differ from examples/default.yaml's (-default +example):\n%s", diff)
	}
	if len(conditions) == 0 {
		t.Fatal("spec.matchConditions is empty")
	}
	var all strings.Builder
	for _, c := range conditions {
		all.WriteString(c.Expression)
	}
	// rules 5, 14b and 15-16 decide a pod's UPDATE on these: a change of any must reach the policy
	wants := []string{"'" + policy.AnnotationKey + "'", "'yunikorn.apache.org/app-id'", "'applicationId'", "'spark-app-selector'",
		"'" + policy.TaskGroupsKey + "'"}
	if s.LegacyUserLabel != "" {
		wants = append(wants, "'"+s.LegacyUserLabel+"'")
	}
	for _, want := range wants {
		if !strings.Contains(all.String(), want) {
			t.Errorf("spec.matchConditions do not name %s: they would let a change of it skip the policy", want)
		}
	}
	kinds := map[string]bool{}
	for _, k := range policy.Kinds() {
		if k.Group == "" {
			kinds[k.Kind] = true
		}
	}
	for _, m := range regexp.MustCompile(`request\.kind\.kind != '([^']*)'`).FindAllStringSubmatch(all.String(), -1) {
		if !kinds[m[1]] {
			t.Errorf("spec.matchConditions name the kind %q, which is not a core kind of policy.Kinds()", m[1])
		}
	}
}
