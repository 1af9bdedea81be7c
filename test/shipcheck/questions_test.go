package shipcheck

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// question is one entry of questions-ui.yml (Rancher's questions format).
type question struct {
	Variable    string   `yaml:"variable"`
	Label       string   `yaml:"label"`
	Group       string   `yaml:"group"`
	Type        string   `yaml:"type"`
	Default     any      `yaml:"default"`
	Options     []string `yaml:"options"`
	Tooltip     string   `yaml:"tooltip"`
	Description string   `yaml:"description"`
	Required    bool     `yaml:"required"`
	ShowIf      string   `yaml:"show_if"`
	// SequenceQuestions are the fields of each item of a sequence[ question (a list of objects).
	SequenceQuestions []question `yaml:"sequence_questions"`
}

func loadQuestions(t *testing.T) []question {
	t.Helper()
	var file struct {
		Questions []question `yaml:"questions"`
	}
	decodeStrict(t, "questions-ui.yml", readRepoFile(t, "questions-ui.yml"), &file)
	return file.Questions
}

// exampleSystemUsers is the systemUsers list of examples/default.yaml: the policy's defaults and YuniKorn's
// scheduler, which every example trusts (rule 16). The form offers it rather than the policy's default, which
// leaves the scheduler out; TestQuestionsUI_DefaultsBehaveLikeTheDefaultExample checks the behaviour.
func exampleSystemUsers(t *testing.T) []string {
	t.Helper()
	var p clusterAdmissionPolicy
	decodeStrict(t, "examples/default.yaml", readRepoFile(t, "examples/default.yaml"), &p)
	return normalizeDefault(p.Spec.Settings["systemUsers"]).([]string)
}

// settingQuestion is what the form must offer for one settings key.
type settingQuestion struct {
	variable    string
	wantType    string
	wantDefault any
}

func wantQuestions(t *testing.T) []settingQuestion {
	t.Helper()
	defaults := defaultSettings(t)
	return []settingQuestion{
		{"bypassAuth", "boolean", defaults.BypassAuth},
		{"bypassControllers", "boolean", defaults.BypassControllers},
		{"systemUsers", "array[", exampleSystemUsers(t)},
		{"externalUsers", "array[", []string{}},
		{"externalGroups", "array[", []string{}},
		{"onUntrustedAnnotation", "enum", defaults.OnUntrustedAnnotation},
		{"legacyUserLabel", "string", defaults.LegacyUserLabel},
		{"customWorkloads", "sequence[", []string{}},
		{"honorLegacyUserLabel", "boolean", defaults.LegacyUserLabel != ""},
		{"logDecisions", "boolean", defaults.LogDecisions},
	}
}

// Rancher puts every question's variable into the settings, and the policy refuses unknown keys: one
// question per key, no more (no informative `description` question), no less.
func TestQuestionsUI_CoversExactlyTheSettingsKeys(t *testing.T) {
	keys := settingsKeys(t)
	var variables, tableKeys []string
	for _, q := range loadQuestions(t) {
		variables = append(variables, q.Variable)
	}
	for _, w := range wantQuestions(t) {
		tableKeys = append(tableKeys, w.variable)
	}
	sort.Strings(keys)
	sort.Strings(variables)
	sort.Strings(tableKeys)
	if diff := cmp.Diff(keys, variables); diff != "" {
		t.Errorf("questions-ui.yml variables differ from the policy's settings keys (-policy +questions):\n%s", diff)
	}
	if diff := cmp.Diff(keys, tableKeys); diff != "" {
		t.Errorf("wantQuestions in this test is out of date (-policy +test):\n%s", diff)
	}
}

func TestQuestionsUI_TypesAndDefaults(t *testing.T) {
	byVariable := map[string]question{}
	for _, q := range loadQuestions(t) {
		byVariable[q.Variable] = q
	}
	for _, want := range wantQuestions(t) {
		t.Run(want.variable, func(t *testing.T) {
			q, ok := byVariable[want.variable]
			if !ok {
				t.Fatalf("questions-ui.yml has no question for %s", want.variable)
			}
			if q.Type != want.wantType {
				t.Errorf("type = %q, want %q", q.Type, want.wantType)
			}
			if diff := cmp.Diff(want.wantDefault, normalizeDefault(q.Default)); diff != "" {
				t.Errorf("default differs from the policy's (-policy +questions):\n%s", diff)
			}
			if q.Label == "" || q.Group != "Settings" || (q.Tooltip == "" && q.Description == "") {
				t.Errorf("label %q, group %q, tooltip %q: want a label, the Settings group and a tooltip",
					q.Label, q.Group, q.Tooltip)
			}
			if q.Required {
				t.Error("required = true, want false: every setting has a default")
			}
		})
	}
}

// normalizeDefault turns a YAML list ([]any) into []string so that it compares with the table.
func normalizeDefault(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	strs := make([]string, 0, len(list))
	for _, item := range list {
		s, isString := item.(string)
		if !isString {
			return v
		}
		strs = append(strs, s)
	}
	return strs
}

// customWorkloads is a list of objects: the form asks for each entry's keys, and nothing else.
func TestQuestionsUI_CustomWorkloadsAsksForTheEntryKeys(t *testing.T) {
	for _, q := range loadQuestions(t) {
		if q.Variable != "customWorkloads" {
			continue
		}
		var got []string
		for _, sub := range q.SequenceQuestions {
			got = append(got, sub.Variable+":"+sub.Type)
			if sub.Label == "" || sub.Tooltip == "" {
				t.Errorf("%s: want a label and a tooltip", sub.Variable)
			}
		}
		want := []string{"apiGroup:string", "kind:string", "annotationPaths:array[", "guardPaths:array["}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("customWorkloads sequence_questions (-want +got):\n%s", diff)
		}
		return
	}
	t.Fatal("no customWorkloads question")
}

func TestQuestionsUI_EnumOffersExactlyTheModes(t *testing.T) {
	for _, q := range loadQuestions(t) {
		if q.Type != "enum" {
			continue
		}
		want := []string{policy.ModeReplace, policy.ModeReject}
		if diff := cmp.Diff(want, q.Options); diff != "" {
			t.Errorf("%s options (-policy +questions):\n%s", q.Variable, diff)
		}
	}
}

// The form's defaults, submitted unchanged, must be valid settings that behave like examples/default.yaml's:
// the policy's defaults with YuniKorn's scheduler trusted.
func TestQuestionsUI_DefaultsBehaveLikeTheDefaultExample(t *testing.T) {
	formDefaults := map[string]any{}
	for _, q := range loadQuestions(t) {
		formDefaults[q.Variable] = q.Default
	}
	fromForm := validSettings(t, "the form's defaults", formDefaults)
	var p clusterAdmissionPolicy
	decodeStrict(t, "examples/default.yaml", readRepoFile(t, "examples/default.yaml"), &p)
	example := validSettings(t, "examples/default.yaml's settings", p.Spec.Settings)
	if diff := cmp.Diff(summarize(example), summarize(fromForm)); diff != "" {
		t.Errorf("the form's defaults differ from examples/default.yaml's settings (-example +form):\n%s", diff)
	}
	for _, user := range []string{
		"system:serviceaccount:kube-system:replicaset-controller",
		"system:kube-controller-manager",
		"system:kube-controller-manager-evil",
		"system:serviceaccount:kube-system-evil:sa",
		schedulerUser(t),
		"system:serviceaccount:yunikorn:yunikorn-admin-evil",
		"alice",
	} {
		if got, want := fromForm.SystemUsers.MatchString(user), example.SystemUsers.MatchString(user); got != want {
			t.Errorf("systemUsers default matches %q: %v, examples/default.yaml's: %v", user, got, want)
		}
	}
	if fromForm.ExternalUsers.Len() != 0 || fromForm.ExternalGroups.Len() != 0 {
		t.Errorf("externalUsers/externalGroups defaults have %d/%d patterns, want none",
			fromForm.ExternalUsers.Len(), fromForm.ExternalGroups.Len())
	}
}
