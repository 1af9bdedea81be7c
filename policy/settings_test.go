package policy

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSettings_DefaultsWhenEmpty(t *testing.T) {
	for _, in := range []string{``, `{}`, ` { } `, `{"bypassAuth":null,"bypassControllers":null,"systemUsers":null,` +
		`"externalUsers":null,"externalGroups":null,"onUntrustedAnnotation":null,"legacyUserLabel":null,"honorLegacyUserLabel":null,"logDecisions":null}`} {
		s, problem := CheckSettings([]byte(in))
		if problem != "" {
			t.Fatalf("%q: unexpected problem %q", in, problem)
		}
		if s.BypassAuth || !s.BypassControllers || s.OnUntrustedAnnotation != ModeReplace ||
			s.LegacyUserLabel != "yunikorn.apache.org/username" || s.ExternalUsers.Len() != 0 || s.ExternalGroups.Len() != 0 || s.LogDecisions {
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
		{"list of wrong type", `{"systemUsers":{"a":1}}`, "systemUsers: must be a list of regular expressions (or one string of them separated by commas), not an object"},
		{"list item of wrong type", `{"externalUsers":["^a$",7]}`, "externalUsers: item 1 must be a string (a regular expression), not a number"},
		{"null list item", `{"externalGroups":[null]}`, "externalGroups: item 0 must be a string (a regular expression), not null"},
		{"invalid regex", `{"bypassAuth":true,"externalUsers":["^ok$","(unclosed"]}`, "externalUsers[1]: invalid regular expression \"(unclosed\": error parsing regexp: missing closing ): `(unclosed`"},
		{"invalid regex as single string", `{"systemUsers":"*"}`, "systemUsers[0]: invalid regular expression \"*\""},
		{"empty pattern", `{"systemUsers":["^a$",""]}`, `systemUsers[1]: the empty pattern "" matches every user`},
		{"pattern matching the empty string", `{"systemUsers":["^a$",".*"]}`, `systemUsers[1]: the pattern ".*" matches the empty string, so it matches every name`},
		{"caret", `{"bypassAuth":true,"externalUsers":"^"}`, `externalUsers[0]: the pattern "^" matches the empty string`},
		{"optional", `{"bypassAuth":true,"externalGroups":["a*"]}`, `externalGroups[0]: the pattern "a*" matches the empty string`},
		{"empty group", `{"systemUsers":"^a$, (?:)"}`, `systemUsers[1]: the pattern "(?:)" matches the empty string`},
		{"empty alternative", `{"systemUsers":["^(admin|)$"]}`, `systemUsers[0]: the pattern "^(admin|)$" matches the empty string`},
		{"too long", `{"systemUsers":["^a$","^` + strings.Repeat("a", 1024) + `$"]}`, "systemUsers[1]: the pattern is 1026 bytes long, over the limit of 1,024 bytes"},
		{"too deep", `{"bypassAuth":true,"externalUsers":["^x$","` + strings.Repeat("(", 33) + "a" + strings.Repeat(")", 33) + `"]}`, "externalUsers[1]: the pattern nests groups 33 deep, over the limit of 32"},
		{"110 deep", `{"systemUsers":"` + strings.Repeat("(?:", 110) + "a" + strings.Repeat(")", 110) + `"}`, "systemUsers[0]: the pattern nests groups 110 deep, over the limit of 32"},
		{"too deep after splitting", `{"systemUsers":"^a$,` + strings.Repeat("(", 40) + strings.Repeat(")", 40) + `"}`, "systemUsers[1]: the pattern nests groups 40 deep"},
		{"legacy label with spaces", `{"legacyUserLabel":"user name"}`, `legacyUserLabel: "user name" is not a valid label key (the name must consist of letters, digits`},
		{"legacy label, upper-case prefix", `{"legacyUserLabel":"YuniKorn.apache.org/username"}`, `legacyUserLabel: "YuniKorn.apache.org/username" is not a valid label key (the prefix must be a DNS subdomain`},
		{"legacy label, empty name", `{"legacyUserLabel":"yunikorn.apache.org/"}`, `legacyUserLabel: "yunikorn.apache.org/" is not a valid label key (the name is empty)`},
		{"legacy label, empty prefix", `{"legacyUserLabel":"/username"}`, `(the prefix before / is empty)`},
		{"legacy label, two slashes", `{"legacyUserLabel":"a/b/c"}`, `legacyUserLabel: "a/b/c" is not a valid label key`},
		{"legacy label, long name", `{"legacyUserLabel":"` + strings.Repeat("n", 64) + `"}`, `(the name is longer than 63 characters)`},
		{"legacy label, long prefix", `{"legacyUserLabel":"` + strings.Repeat("p", 254) + `/n"}`, `(the prefix is longer than 253 characters)`},
		{"legacy label, trailing dash", `{"legacyUserLabel":"username-"}`, `legacyUserLabel: "username-" is not a valid label key`},
		{"legacy label invalid even when not honoured", `{"honorLegacyUserLabel":false,"legacyUserLabel":"a b"}`, `legacyUserLabel: "a b" is not a valid label key`},
		{"honorLegacyUserLabel of wrong type", `{"honorLegacyUserLabel":"false"}`, "honorLegacyUserLabel: must be true or false, not a string"},
		{"logDecisions of wrong type", `{"logDecisions":1}`, "logDecisions: must be true or false, not a number"},
		{"a key twice", `{"onUntrustedAnnotation":"reject","onUntrustedAnnotation":"replace"}`, `the key "onUntrustedAnnotation" occurs more than once`},
		{"a key twice, once escaped", `{"bypassControllers":false,"bypassC\u006fntrollers":true}`, `the key "bypassControllers" occurs more than once`},
		{"unknown key", `{"bypassauth":true}`, `unknown key "bypassauth": valid keys are bypassAuth, bypassControllers, systemUsers, externalUsers, externalGroups, onUntrustedAnnotation, legacyUserLabel, customWorkloads, honorLegacyUserLabel, logDecisions`},
		{"unknown key set to null", `{"bypassauth":null}`, `unknown key "bypassauth"`},
		{"unknown mode", `{"onUntrustedAnnotation":"ignore"}`, `onUntrustedAnnotation: "ignore" is not a valid mode: use "replace"`},
		{"mode case matters", `{"onUntrustedAnnotation":"Reject"}`, `onUntrustedAnnotation: "Reject" is not a valid mode`},
		{"mode of wrong type", `{"onUntrustedAnnotation":true}`, "onUntrustedAnnotation: must be a string, not a boolean"},
		{"label of wrong type", `{"legacyUserLabel":["a"]}`, "legacyUserLabel: must be a string, not a list"},
		{"bypassAuth with nothing to trust", `{"bypassAuth":true}`, "bypassAuth: is true but externalUsers and externalGroups are both empty"},
		{"bypassAuth with empty lists", `{"bypassAuth":true,"externalUsers":[],"externalGroups":[]}`, "bypassAuth: is true but externalUsers and externalGroups are both empty"},
		{"not an object", `["bypassAuth"]`, "settings must be a JSON object with the keys bypassAuth, " +
			"bypassControllers, systemUsers, externalUsers, externalGroups, onUntrustedAnnotation, legacyUserLabel, " +
			"customWorkloads, honorLegacyUserLabel, logDecisions: it is a list"},
		{"a string", `"bypassAuth"`, "settings must be a JSON object with the keys bypassAuth, "},
		{"malformed", `{"bypassAuth":`, ": it is not valid JSON"},
		{"two values", `{} {}`, ": it is not valid JSON"},
		{"an unknown key before a wrong type is the only problem", `{"bypassAuth":1,"typo":true}`, `unknown key "typo"`},
		{"an item of a list of patterns", `{"externalGroups":["^a$",{}]}`, "externalGroups: item 1 must be a string (a regular expression), not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problem := CheckSettings([]byte(tc.in))
			if !strings.Contains(problem, tc.want) {
				t.Fatalf("problem %q does not contain %q", problem, tc.want)
			}
		})
	}
}

func TestSettings_SingleStringIsSplitAtCommasLikeYuniKorn(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`"^a$, ^b$"`, []string{"^a$", "^b$"}},
		{`" ^a$ ,,\t^b$\n,"`, []string{"^a$", "^b$"}},
		{`""`, []string{}},
		{`" "`, []string{}},
		{`","`, []string{}},
		{`" , ,"`, []string{}},
		{`"^(a|b)$"`, []string{"^(a|b)$"}},
		{`["^a{1,2}$", " ^b$ "]`, []string{"^a{1,2}$", " ^b$ "}}, // a real list is taken as written
	} {
		s, problem := CheckSettings([]byte(`{"systemUsers":` + tc.in + `}`))
		if problem != "" {
			t.Errorf("%s: %s", tc.in, problem)
			continue
		}
		if diff := cmp.Diff(tc.want, s.SystemUsers.sources); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
	// " " is no pattern trusting every name with a space: an empty list, so bypassAuth trusts nobody.
	_, problem := CheckSettings([]byte(`{"bypassAuth":true,"externalUsers":" ","externalGroups":","}`))
	if !strings.Contains(problem, "bypassAuth: is true but externalUsers and externalGroups are both empty") {
		t.Fatal(problem)
	}
}

func TestSettings_PatternsAtTheLimitsAreAccepted(t *testing.T) {
	atLength := "^" + strings.Repeat("a", maxPatternBytes-2) + "$"
	atDepth := "^" + strings.Repeat("(", maxPatternNesting) + "a" + strings.Repeat(")", maxPatternNesting) + "$"
	for _, p := range []string{atLength, atDepth} {
		if _, problem := CheckSettings([]byte(`{"systemUsers":[` + strconv.Quote(p) + `]}`)); problem != "" {
			t.Errorf("%d bytes: %s", len(p), problem)
		}
	}
}

func TestSettings_GroupNestingCountsLikeRE2(t *testing.T) {
	for src, want := range map[string]int{
		"":                  0,
		"a":                 0,
		"(a)(b)":            1,
		"((a)(b))":          2,
		`\(\(\(`:            0,
		"[(((]":             0,
		"[]((]":             0,
		"[^](]((a))":        2,
		"[[:alpha:]((]":     0,
		`\Q(((\E(a)`:        1,
		`\Q((((`:            0,
		"(?i)(?P<n>(?:a))":  3 - 1,
		"((((":              4,
		"[\\]](a)":          1,
		"(a))))((b))":       2,
		"(?:(?:(?:a|b)*)+)": 3,
	} {
		if got := groupNesting(src); got != want {
			t.Errorf("groupNesting(%q) = %d, want %d", src, got, want)
		}
	}
}

func TestSettings_LegacyUserLabelAcceptsLabelKeys(t *testing.T) {
	for _, key := range []string{"yunikorn.apache.org/username", "username", "user_name.v2", "a", "x.y-z/A_b.C",
		"example.com/" + strings.Repeat("n", 63), strings.Repeat("p", 253) + "/n", ""} {
		s, problem := CheckSettings([]byte(`{"legacyUserLabel":` + strconv.Quote(key) + `}`))
		if problem != "" || s.LegacyUserLabel != key {
			t.Errorf("%q: problem %q, label %q", key, problem, s.LegacyUserLabel)
		}
	}
}

func TestSettings_HonorLegacyUserLabelFalseTurnsLegacyOff(t *testing.T) {
	for in, want := range map[string]string{
		`{"honorLegacyUserLabel":false}`:                            "",
		`{"honorLegacyUserLabel":false,"legacyUserLabel":"a/b"}`:    "",
		`{"honorLegacyUserLabel":true}`:                             defaultLegacyUserLabel,
		`{"honorLegacyUserLabel":true,"legacyUserLabel":"example"}`: "example",
		`{"honorLegacyUserLabel":null}`:                             defaultLegacyUserLabel,
	} {
		s, problem := CheckSettings([]byte(in))
		if problem != "" || s.LegacyUserLabel != want {
			t.Errorf("%s: problem %q, label in effect %q, want %q", in, problem, s.LegacyUserLabel, want)
		}
	}
}

// Every row of settingsTable sets a field of its own, of a type readSetting reads: a row whose field it
// did not know would accept any value and set nothing.
func TestSettings_EveryRowSetsAFieldOfItsOwnThatIsRead(t *testing.T) {
	var d settingsDraft
	seen := map[any]string{}
	for _, row := range settingsTable {
		field := row.field(&d)
		switch field.(type) {
		case *bool, *string, *jsonText, *Patterns:
		default:
			t.Errorf("%s: readSetting does not read a %T", row.key, field)
		}
		if other, ok := seen[field]; ok {
			t.Errorf("%s and %s set the same field", other, row.key)
		}
		seen[field] = row.key
	}
}

func TestSettings_NullIsTheDefaults(t *testing.T) {
	for _, in := range []string{``, ` `, `{}`, `null`, ` null `, `{"bypassAuth":null,"systemUsers":null,"customWorkloads":null}`} {
		s, problem := CheckSettings([]byte(in))
		if problem != "" || s.BypassAuth || !s.BypassControllers || s.SystemUsers.Len() != len(defaultSystemUsers) ||
			s.OnUntrustedAnnotation != ModeReplace || s.LegacyUserLabel != defaultLegacyUserLabel || s.customWorkloads != "" {
			t.Errorf("%q: problem %q, settings %+v: want the defaults", in, problem, s)
		}
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
	if _, problem := ParseSettings(`{"systemUsers":["("]}`); problem != "" {
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
