package shipcheck

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// Until a release is tagged, the version says so (<next>-unreleased) and everything is under [Unreleased];
// a released version has its dated section, the release notes.
func TestChangelog_SectionOfTheVersion(t *testing.T) {
	version := loadMetadata(t).Annotations[annVersion]
	changelog := string(readRepoFile(t, "CHANGELOG.md"))
	if !strings.Contains(changelog, "## [Unreleased]") {
		t.Error("CHANGELOG.md has no [Unreleased] section (Keep a Changelog)")
	}
	dated := regexp.MustCompile(`(?m)^## \[[^\]]+\] - \d{4}-\d\d-\d\d$`).FindAllString(changelog, -1)
	if next, ok := strings.CutSuffix(version, "-unreleased"); ok {
		for _, h := range dated {
			if strings.HasPrefix(h, "## ["+next+"]") {
				t.Errorf("CHANGELOG.md dates %q, but metadata.yml says %s is unreleased", h, version)
			}
		}
		return
	}
	heading := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(version) + `\] - \d{4}-\d\d-\d\d$`)
	if !heading.MatchString(changelog) {
		t.Errorf("CHANGELOG.md has no %q section for io.kubewarden.policy.version %s", "## ["+version+"] - YYYY-MM-DD", version)
	}
}

// io.kubewarden.policy.license (and Artifact Hub's license) must describe the LICENSE file.
func TestLicense_IsTheApacheLicenseTheMetadataNames(t *testing.T) {
	if got := loadMetadata(t).Annotations[annLicense]; got != "Apache-2.0" {
		t.Fatalf("io.kubewarden.policy.license = %q, want Apache-2.0 (the LICENSE file)", got)
	}
	license := string(readRepoFile(t, "LICENSE"))
	for _, want := range []string{
		"Apache License",
		"Version 2.0, January 2004",
		"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"END OF TERMS AND CONDITIONS",
	} {
		if !strings.Contains(license, want) {
			t.Errorf("LICENSE does not contain %q: want the full Apache License 2.0 text", want)
		}
	}
}

// The README's complete ClusterAdmissionPolicy is examples/default.yaml, so deploying from the README alone
// gives the tested defaults.
func TestReadme_CompletePolicyIsTheDefaultExample(t *testing.T) {
	readme := string(readRepoFile(t, "README.md"))
	var body []string
	for _, line := range strings.Split(string(readRepoFile(t, "examples/default.yaml")), "\n") {
		if len(body) == 0 && strings.HasPrefix(line, "#") {
			continue // the example's header comment
		}
		body = append(body, line)
	}
	want := "```yaml\n" + strings.TrimSpace(strings.Join(body, "\n")) + "\n```"
	if !strings.Contains(readme, want) {
		t.Fatalf("README.md does not contain examples/default.yaml as a yaml block:\n%s", want)
	}
}

// Every setting has a row in the README's settings table and a YAML example.
func TestReadme_DocumentsEverySetting(t *testing.T) {
	readme := string(readRepoFile(t, "README.md"))
	for _, key := range settingsKeys(t) {
		if !strings.Contains(readme, "| `"+key+"` |") {
			t.Errorf("README.md settings table has no row for %s", key)
		}
		if !regexp.MustCompile(`(?m)^  ` + key + `:`).MatchString(readme) {
			t.Errorf("README.md has no YAML example setting %s", key)
		}
	}
}

// docs/rules.md "Settings" lists every key once, in the order the policy names them in its messages.
func TestRules_SettingsTableListsTheKeysInOrder(t *testing.T) {
	var keys []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(section(t, "docs/rules.md", "Settings"), -1) {
		keys = append(keys, m[1])
	}
	if want := settingsKeys(t); !slices.Equal(keys, want) {
		t.Errorf("docs/rules.md \"Settings\" table lists %v, want %v", keys, want)
	}
}

// The README's opening section says which kinds the policy handles: every kind of the policy's table.
func TestReadme_NamesEveryKindOfTheTable(t *testing.T) {
	readme := string(readRepoFile(t, "README.md"))
	start := strings.Index(readme, "## What it does and why")
	end := strings.Index(readme, "## Installation")
	if start < 0 || end < start {
		t.Fatal(`README.md has no "What it does and why" section before "Installation"`)
	}
	section := readme[start:end]
	for _, k := range policy.Kinds() {
		if !regexp.MustCompile(`\b` + k.Kind + `\b`).MatchString(section) {
			t.Errorf("README.md's \"What it does and why\" does not name %s, a kind of policy.Kinds()", k.Kind)
		}
	}
}

// The README is for the people who install the policy: details go to docs/, and it stays short.
func TestReadme_IsAtMost400Lines(t *testing.T) {
	if n := strings.Count(string(readRepoFile(t, "README.md")), "\n"); n > 400 {
		t.Errorf("README.md has %d lines, want at most 400: move details to docs/", n)
	}
}

// TestReadme_CountsTheStagesOfMakeTest wants the README's account of make test to name as many stages as the
// Makefile runs: a stage added without it (the Kubewarden stage was) leaves the README stale.
func TestReadme_CountsTheStagesOfMakeTest(t *testing.T) {
	m := regexp.MustCompile(`(?m)^TEST_STAGES \?= (.*)$`).FindStringSubmatch(string(readRepoFile(t, "Makefile")))
	if m == nil {
		t.Fatal("Makefile: no TEST_STAGES")
	}
	stages := len(strings.Fields(m[1]))
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	line := regexp.MustCompile(`make test +# all (\w+) stages CI runs: (.*)`).FindStringSubmatch(string(readRepoFile(t, "README.md")))
	if line == nil {
		t.Fatal("README.md: no `make test # all N stages CI runs: ...` line")
	}
	if stages >= len(words) || line[1] != words[stages] {
		t.Errorf("README.md says %s stages, the Makefile runs %d", line[1], stages)
	}
	if n := len(strings.Split(line[2], ",")); n != stages {
		t.Errorf("README.md lists %d stages (%s), the Makefile runs %d", n, line[2], stages)
	}
}
