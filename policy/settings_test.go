package policy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSettings_DefaultsWhenEmpty(t *testing.T) {
	for _, in := range []string{``, `{}`, ` { } `, `{"bypassAuth":null,"bypassControllers":null,"systemUsers":null,` +
		`"externalUsers":null,"externalGroups":null,"onUntrustedAnnotation":null,"legacyUserLabel":null}`} {
		s, problem := CheckSettings([]byte(in))
		if problem != "" {
			t.Fatalf("%q: unexpected problem %q", in, problem)
		}
		if s.BypassAuth || !s.BypassControllers || s.OnUntrustedAnnotation != ModeReplace ||
			s.LegacyUserLabel != "yunikorn.apache.org/username" || s.ExternalUsers.Len() != 0 || s.ExternalGroups.Len() != 0 {
			t.Fatalf("%q: not the defaults: %+v", in, s)
		}
		if diff := cmp.Diff(defaultSystemUsers, s.SystemUsers.sources); diff != "" {
			t.Fatalf("%q: systemUsers: %s", in, diff)
		}
	}
}

func TestSettings_DefaultSystemUsersAreAnchored(t *testing.T) {
	s, _ := CheckSettings([]byte(`{}`))
	for user, want := range map[string]bool{
		"system:serviceaccount:kube-system:replicaset-controller": true,
		"system:kube-controller-manager":                          true,
		"system:serviceaccount:kube-system-evil:sa":               false,
		"evil:system:serviceaccount:kube-system:x":                false,
		"system:kube-controller-manager-evil":                     false,
		"alice":                                                   false,
	} {
		if got := s.SystemUsers.MatchString(user); got != want {
			t.Errorf("%s: system user = %v, want %v", user, got, want)
		}
	}
}

func TestSettings_AllKeysAreRead(t *testing.T) {
	s, problem := CheckSettings([]byte(`{"bypassAuth":true,"bypassControllers":false,"systemUsers":["^a$"],` +
		`"externalUsers":"^airflow$","externalGroups":["^spark-submitters$","^livy$"],` +
		`"onUntrustedAnnotation":"reject","legacyUserLabel":""}`))
	if problem != "" {
		t.Fatal(problem)
	}
	if !s.BypassAuth || s.BypassControllers || s.OnUntrustedAnnotation != ModeReject || s.LegacyUserLabel != "" {
		t.Fatalf("scalars not read: %+v", s)
	}
	// A single string where a list is expected is a list of one.
	if diff := cmp.Diff([]string{"^airflow$"}, s.ExternalUsers.sources); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]string{"^spark-submitters$", "^livy$"}, s.ExternalGroups.sources); diff != "" {
		t.Fatal(diff)
	}
	if !s.SystemUsers.MatchString("a") || s.SystemUsers.MatchString("system:kube-controller-manager") {
		t.Fatal("systemUsers replaces the defaults")
	}
}

func TestSettings_EmptyListIsAllowed(t *testing.T) {
	s, problem := CheckSettings([]byte(`{"systemUsers":[]}`))
	if problem != "" || s.SystemUsers.Len() != 0 || s.SystemUsers.MatchString("system:kube-controller-manager") {
		t.Fatalf("problem %q, settings %+v", problem, s)
	}
}

func TestSettings_PatternsAreUnanchoredLikeUpstream(t *testing.T) {
	s, _ := CheckSettings([]byte(`{"systemUsers":"system:serviceaccount:kube-system:*"}`))
	// The design's own pattern: this is why the defaults are anchored.
	if !s.SystemUsers.MatchString("system:serviceaccount:kube-system-evil:sa") {
		t.Fatal("MatchString must be unanchored like upstream")
	}
}

func TestSettings_InvalidAreRejectedNamingKeyAndIndex(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bool of wrong type", `{"bypassAuth":"yes"}`, "bypassAuth: must be true or false, not a string"},
		{"bool as number", `{"bypassControllers":1}`, "bypassControllers: must be true or false, not a number"},
		{"list of wrong type", `{"systemUsers":{"a":1}}`, "systemUsers: must be a list of regular expressions (or one as a string), not an object"},
		{"list item of wrong type", `{"externalUsers":["^a$",7]}`, "externalUsers: item 1 must be a string (a regular expression), not a number"},
		{"null list item", `{"externalGroups":[null]}`, "externalGroups: item 0 must be a string (a regular expression), not null"},
		{"invalid regex", `{"bypassAuth":true,"externalUsers":["^ok$","(unclosed"]}`, "externalUsers[1]: invalid regular expression \"(unclosed\": error parsing regexp: missing closing ): `(unclosed`"},
		{"invalid regex as single string", `{"systemUsers":"*"}`, "systemUsers[0]: invalid regular expression \"*\""},
		{"empty pattern", `{"systemUsers":["^a$",""]}`, `systemUsers[1]: the empty pattern "" matches every user`},
		{"unknown key", `{"bypassauth":true}`, `unknown key "bypassauth": valid keys are bypassAuth, bypassControllers, systemUsers, externalUsers, externalGroups, onUntrustedAnnotation, legacyUserLabel`},
		{"unknown key set to null", `{"bypassauth":null}`, `unknown key "bypassauth"`},
		{"unknown mode", `{"onUntrustedAnnotation":"ignore"}`, `onUntrustedAnnotation: "ignore" is not a valid mode: use "replace"`},
		{"mode case matters", `{"onUntrustedAnnotation":"Reject"}`, `onUntrustedAnnotation: "Reject" is not a valid mode`},
		{"mode of wrong type", `{"onUntrustedAnnotation":true}`, "onUntrustedAnnotation: must be a string, not a boolean"},
		{"label of wrong type", `{"legacyUserLabel":["a"]}`, "legacyUserLabel: must be a string, not a list"},
		{"bypassAuth with nothing to trust", `{"bypassAuth":true}`, "bypassAuth: is true but externalUsers and externalGroups are both empty"},
		{"bypassAuth with empty lists", `{"bypassAuth":true,"externalUsers":[],"externalGroups":[]}`, "bypassAuth: is true but externalUsers and externalGroups are both empty"},
		{"not an object", `["bypassAuth"]`, "settings must be a JSON object"},
		{"malformed", `{"bypassAuth":`, "settings must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problem := CheckSettings([]byte(tc.in))
			if !strings.Contains(problem, tc.want) {
				t.Fatalf("problem %q does not contain %q", problem, tc.want)
			}
		})
	}
}

func TestSettings_EveryProblemIsReported(t *testing.T) {
	_, problem := CheckSettings([]byte(`{"bypassAuth":1,"systemUsers":["("],"onUntrustedAnnotation":"x"}`))
	for _, want := range []string{"bypassAuth:", "systemUsers[0]:", "onUntrustedAnnotation:"} {
		if !strings.Contains(problem, want) {
			t.Errorf("%q misses %q", problem, want)
		}
	}
}

func TestSettings_ValidateIgnoresRegexSyntax(t *testing.T) {
	// validate compiles lazily (policy-server checked the settings at start-up); only CheckSettings compiles.
	if _, problem := ParseSettings([]byte(`{"systemUsers":["("]}`)); problem != "" {
		t.Fatalf("ParseSettings compiled a regex: %q", problem)
	}
}

func TestValidateSettings_Response(t *testing.T) {
	var ok, bad struct {
		Valid   bool    `json:"valid"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(ValidateSettings([]byte(`{"onUntrustedAnnotation":"reject"}`)), &ok); err != nil {
		t.Fatal(err)
	}
	if !ok.Valid || ok.Message != nil {
		t.Fatalf("valid settings: %+v", ok)
	}
	if err := json.Unmarshal(ValidateSettings([]byte(`{"typo":1}`)), &bad); err != nil {
		t.Fatal(err)
	}
	if bad.Valid || bad.Message == nil || !strings.Contains(*bad.Message, `unknown key "typo"`) {
		t.Fatalf("invalid settings: %+v", bad)
	}
}

func TestPatterns_LiteralFastPathAgreesWithRegexp(t *testing.T) {
	patterns := []string{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager$", "airflow",
		"^airflow", "airflow$", "^a-b_c@d/e$", "^a.b$", "a|b", "^(x)$", "^$", "x\\.y", "^é日$", "^ a $"}
	users := []string{"", "airflow", "airflow-2", "my-airflow", "system:kube-controller-manager",
		"system:kube-controller-manager\n", "system:serviceaccount:kube-system:job-controller",
		"system:serviceaccount:kube-system-evil:x", "a-b_c@d/e", "aXb", "a.b", "x.y", "é日", " a ", "b"}
	for _, src := range patterns {
		re := regexp.MustCompile(src)
		p := Patterns{sources: []string{src}}
		for _, u := range users {
			if got, want := p.MatchString(u), re.MatchString(u); got != want {
				t.Errorf("pattern %q, user %q: got %v, regexp says %v", src, u, got, want)
			}
		}
	}
	if m, ok := literalMatcher("^system:kube-controller-manager$"); !ok || !m.start || !m.end {
		t.Fatal("the default patterns must take the literal path")
	}
	if _, ok := literalMatcher("^a.b$"); ok {
		t.Fatal("a pattern with a metacharacter must be compiled")
	}
}

func TestPatterns_LaterPatternsAreNotCompiledAfterAMatch(t *testing.T) {
	p := Patterns{sources: []string{"^air.*$", "^never-reached-[0-9]+$"}}
	if !p.MatchString("airflow") {
		t.Fatal("want a match")
	}
	if p.matchers[1].re != nil {
		t.Fatal("the second pattern was compiled although the first matched")
	}
	if p.MatchString("bob") || p.matchers[1].re == nil {
		t.Fatal("a non-matching name must try every pattern")
	}
	broken := Patterns{sources: []string{"(", "^b$"}}
	if !broken.MatchString("b") || broken.MatchString("(") {
		t.Fatal("an uncompilable pattern matches nobody and does not stop the list")
	}
}
