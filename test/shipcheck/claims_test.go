package shipcheck

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/preflight"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// Prose that restates a rule, a setting or a manifest, checked against its source: the settings a page
// offers, the README's Behaviour table against docs/rules.md, and what pages say the examples'
// matchConditions send to the policy.

// docFiles are the pages a user reads: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(repoPath("docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	return files
}

// schedulerUser is YuniKorn's scheduler as the Helm chart installs it. It creates gang scheduling's
// placeholder pods, which keep their originator's identity only while it is trusted (docs/rules.md, rule 16).
func schedulerUser(t *testing.T) string {
	t.Helper()
	ns, name, err := preflight.ParseAccount(preflight.HelmSchedulerAccount)
	if err != nil {
		t.Fatal(err)
	}
	return "system:serviceaccount:" + ns + ":" + name
}

// schedulerComment is a YAML or shell comment that names the scheduler: where a block leaves it untrusted on
// purpose, the comment says why.
var schedulerComment = regexp.MustCompile(`(?m)#.*\bscheduler\b`)

// untrustedScheduler reports why settings that offer `reject`, list `systemUsers` or turn bypassControllers
// off leave the scheduler untrusted, or "" when they trust it or set none of those. Settings the policy
// refuses are TestDocs_YAMLAndJSONBlocksParseAndSettingsAreValid's concern.
func untrustedScheduler(settings any, scheduler string) string {
	data, err := json.Marshal(settings)
	if err != nil {
		return ""
	}
	s, msg := policy.CheckSettings(data)
	if msg != "" {
		return ""
	}
	var what []string
	if m, ok := settings.(map[string]any); ok {
		if _, ok := m["systemUsers"]; ok {
			what = append(what, "lists systemUsers")
		}
	}
	if s.OnUntrustedAnnotation == policy.ModeReject {
		what = append(what, "offers reject")
	}
	if !s.BypassControllers {
		what = append(what, "turns bypassControllers off")
	}
	if len(what) == 0 || s.BypassControllers && s.SystemUsers.MatchString(scheduler) {
		return ""
	}
	return strings.Join(what, " and ") + " without trusting YuniKorn's scheduler " + scheduler +
		": its gang placeholders would carry its identity or be rejected (rule 16)"
}

// Every settings block of the README, docs/ and examples/ that offers `reject`, lists `systemUsers` or turns
// bypassControllers off trusts YuniKorn's scheduler, or carries a comment naming the scheduler that says why
// not: a reader copies the block as it is.
func TestDocs_SettingsTrustTheSchedulerOrSayWhyNot(t *testing.T) {
	scheduler := schedulerUser(t)
	var checked int
	check := func(where, text string, settings any) {
		checked++
		if p := untrustedScheduler(settings, scheduler); p != "" && !schedulerComment.MatchString(text) {
			t.Errorf("%s %s, and no comment in it names the scheduler to say why", where, p)
		}
	}
	for _, name := range docFiles(t) {
		for _, b := range docBlocks(name, string(readRepoFile(t, name))) {
			where := b.file + ":" + strconv.Itoa(b.line) + ", a " + b.lang + " block,"
			for _, m := range settingsJSON.FindAllStringSubmatch(b.text, -1) {
				var settings any
				if json.Unmarshal([]byte(m[1]), &settings) == nil {
					check(where+" a command's --settings-json", b.text, settings)
				}
			}
			var docs []any
			switch b.lang {
			case "yaml", "yml":
				docs, _ = decodeAll(yaml.NewDecoder(strings.NewReader(b.text)))
			case "json":
				docs, _ = decodeAll(json.NewDecoder(strings.NewReader(b.text)))
			}
			for _, doc := range docs {
				for _, settings := range settingsIn(doc) {
					check(where, b.text, settings)
				}
			}
		}
	}
	examples, err := filepath.Glob(repoPath("examples/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range examples {
		name := "examples/" + filepath.Base(path)
		var p clusterAdmissionPolicy
		decodeStrict(t, name, readRepoFile(t, name), &p)
		check(name, string(readRepoFile(t, name)), orEmpty(p.Spec.Settings))
	}
	if checked < 20 {
		t.Errorf("%d settings checked: the test reads the wrong files", checked)
	}
}

// Rancher's form offers `reject` to everybody: its defaults, submitted unchanged, trust the scheduler, and the
// mode's tooltip warns about the placeholders.
func TestQuestionsUI_OffersRejectWithTheSchedulerTrusted(t *testing.T) {
	formDefaults := map[string]any{}
	for _, q := range loadQuestions(t) {
		formDefaults[q.Variable] = q.Default
		if q.Variable == "onUntrustedAnnotation" && !strings.Contains(q.Tooltip, "placeholder") {
			t.Errorf("the onUntrustedAnnotation tooltip does not say what reject does to YuniKorn's placeholder pods "+
				"while the scheduler is untrusted: %q", q.Tooltip)
		}
	}
	formDefaults["onUntrustedAnnotation"] = policy.ModeReject
	if p := untrustedScheduler(formDefaults, schedulerUser(t)); p != "" {
		t.Errorf("questions-ui.yml's defaults, with reject chosen, %s", p)
	}
}

// ruleCitationID matches a citation of rules by number, 14b included: "rule 5", "rules 14b-16", "rules 11-13".
var ruleCitationID = regexp.MustCompile(`(?i)\brules? (\d+b?)((?:\s*(?:-|–|,|and|or|to)\s*\d+b?)*)`)

// citedRuleIDs expands a text's rule citations: "rules 14b-16" is 14b, 15, 16; "rules 14-16" is 14, 15, 16.
func citedRuleIDs(text string) []string {
	var ids []string
	for _, m := range ruleCitationID.FindAllStringSubmatch(text, -1) {
		ids = append(ids, m[1])
		last, _ := strconv.Atoi(strings.TrimSuffix(m[1], "b"))
		for _, r := range regexp.MustCompile(`(-|–|to|,|and|or)\s*(\d+b?)`).FindAllStringSubmatch(m[2], -1) {
			next, _ := strconv.Atoi(strings.TrimSuffix(r[2], "b"))
			if r[1] == "-" || r[1] == "–" || r[1] == "to" {
				for k := last + 1; k < next; k++ {
					ids = append(ids, strconv.Itoa(k))
				}
			}
			ids = append(ids, r[2])
			last = next
		}
	}
	return ids
}

// Every rule of docs/rules.md (a "### Rule N: ..." heading) is cited by a row of the README's Behaviour
// table, and every rule a row cites is one of them: a rule added to docs/rules.md without its row leaves
// the README's summary short.
func TestReadme_BehaviourTableHasARowForEveryRule(t *testing.T) {
	var rules []string
	titles := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} Rule (\d+b?): (.*)$`).FindAllStringSubmatch(string(readRepoFile(t, "docs/rules.md")), -1) {
		rules = append(rules, m[1])
		titles[m[1]] = m[2]
	}
	if len(rules) < 16 {
		t.Fatalf("docs/rules.md has %d rule headings (### Rule N: ...): the test reads the wrong file", len(rules))
	}
	cited := map[string]bool{}
	var rows int
	for _, line := range strings.Split(section(t, "README.md", "Behaviour"), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| operation |") {
			continue
		}
		rows++
		for _, id := range citedRuleIDs(line) {
			if _, ok := titles[id]; !ok {
				t.Errorf("a row of README.md's Behaviour table cites rule %s, which docs/rules.md does not have: %s", id, line)
			}
			cited[id] = true
		}
	}
	if rows == 0 {
		t.Fatal("README.md's Behaviour section has no table rows")
	}
	for _, id := range rules {
		if !cited[id] {
			t.Errorf("README.md's Behaviour table has no row citing rule %s: docs/rules.md has \"Rule %s: %s\"", id, id, titles[id])
		}
	}
}

// podUpdateKeys returns the annotation and label keys whose change examples/default.yaml's matchConditions
// send to the policy in a pod's UPDATE (every example has the same conditions: checkMatchConditions).
func podUpdateKeys(t *testing.T) (annotations, labels []string) {
	t.Helper()
	var p clusterAdmissionPolicy
	decodeStrict(t, "examples/default.yaml", readRepoFile(t, "examples/default.yaml"), &p)
	list := regexp.MustCompile(`\[([^\]]*)\]\.exists\(k,\s*\(has\(object\.metadata\.(annotations|labels)\)`)
	for _, c := range p.Spec.MatchConditions {
		for _, m := range list.FindAllStringSubmatch(c.Expression, -1) {
			var keys []string
			for _, k := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(m[1], -1) {
				keys = append(keys, k[1])
			}
			if m[2] == "annotations" {
				annotations = append(annotations, keys...)
			} else {
				labels = append(labels, keys...)
			}
		}
	}
	if len(annotations) == 0 || len(labels) == 0 {
		t.Fatalf("examples/default.yaml's matchConditions: no list of annotation keys (%q) or label keys (%q) "+
			"found: the test no longer reads the expression", annotations, labels)
	}
	return annotations, labels
}

// paragraphs splits a Markdown document, code blocks blanked, at blank lines, list items and table rows.
func paragraphs(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(markdownDoc(text), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "- ") || strings.HasPrefix(trimmed, "| ") || strings.HasPrefix(trimmed, "#"):
			flush()
			cur = append(cur, trimmed)
		default:
			cur = append(cur, trimmed)
		}
	}
	flush()
	return out
}

// A paragraph of the README or docs/ that says which pod updates the examples' matchConditions send to the
// policy (one that mentions matchConditions and names one of the keys they watch, or the legacy label)
// names every key they watch: advice that leaves one out reopens what its rule closes (an operator who
// drops the application-ID labels lets a pod move into another user's application, rule 14b).
func TestDocs_MatchConditionsProseNamesTheExamplesKeys(t *testing.T) {
	annotations, labels := podUpdateKeys(t)
	legacy := defaultSettings(t).LegacyUserLabel
	var described int
	for _, name := range docFiles(t) {
		for _, p := range paragraphs(string(readRepoFile(t, name))) {
			if !strings.Contains(p, "matchConditions") {
				continue
			}
			watched := strings.Contains(p, "legacy label")
			for _, k := range slices.Concat(annotations, labels) {
				watched = watched || strings.Contains(p, "`"+k+"`")
			}
			if !watched {
				continue
			}
			described++
			var missing []string
			for _, k := range annotations {
				if !strings.Contains(p, "`"+k+"`") {
					missing = append(missing, "annotation "+k)
				}
			}
			for _, k := range labels {
				if !strings.Contains(p, "`"+k+"`") && (k != legacy || !strings.Contains(p, "legacy label")) {
					missing = append(missing, "label "+k)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s describes the examples' matchConditions without %s, which they send to the policy "+
					"when it changes (examples/default.yaml): %.160s...", name, strings.Join(missing, ", "), p)
			}
		}
	}
	if described == 0 {
		t.Error("no page describes which pod updates the examples' matchConditions send: the test reads the wrong files")
	}
}

// shellComment is a shell comment: from a # at the start of a line or after white space to the line's end.
var shellComment = regexp.MustCompile(`(?m)(^|\s)#.*$`)

// singleQuoted is a single-quoted shell word: the shell expands nothing inside it (a jq filter, JSON).
var singleQuoted = regexp.MustCompile(`'[^']*'`)

// printedVariables returns the variables a hack/ script prints as NAME=value for `eval "$(script)"`.
func printedVariables(t *testing.T, script string) []string {
	t.Helper()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*echo "((?:[A-Z_]+=\S*\s*)+)"`).FindAllStringSubmatch(string(readRepoFile(t, script)), -1) {
		for _, kv := range strings.Fields(m[1]) {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
	}
	return names
}

// Every shell block of the README and docs/ runs from a clone's root as written: a file it reads by a
// relative path (`*.yml`, `*.yaml`, `*.json`) is in the repository, and a variable it uses is set in it or an
// earlier block of the page (by NAME=, export, for, or eval of a hack/ script that prints NAME=...).
func TestDocs_CommandsUseFilesAndVariablesTheyHave(t *testing.T) {
	environment := map[string]bool{"HOME": true, "PATH": true, "PWD": true, "TMPDIR": true, "USER": true}
	assign := regexp.MustCompile(`(?:^|[\s;&|(])(?:export\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=`)
	loop := regexp.MustCompile(`\b(?:for|read(?:\s+-r)?)\s+([A-Za-z_][A-Za-z0-9_]*)`)
	evalScript := regexp.MustCompile(`eval\s+"\$\((hack/[A-Za-z0-9_.-]+\.sh)\b`)
	use := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
	file := regexp.MustCompile(`(?:^|[\s=])((?:\.\./|\./)?(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+\.(?:ya?ml|json))(?:\s|$|")`)
	var blocks int
	for _, name := range docFiles(t) {
		set := map[string]bool{}
		for _, b := range docBlocks(name, string(readRepoFile(t, name))) {
			if b.lang != "sh" {
				continue
			}
			blocks++
			code := shellComment.ReplaceAllString(b.text, "$1")
			for _, m := range assign.FindAllStringSubmatch(code, -1) {
				set[m[1]] = true
			}
			for _, m := range loop.FindAllStringSubmatch(code, -1) {
				set[m[1]] = true
			}
			for _, m := range evalScript.FindAllStringSubmatch(code, -1) {
				for _, v := range printedVariables(t, m[1]) {
					set[v] = true
				}
			}
			reported := map[string]bool{}
			for _, m := range use.FindAllStringSubmatch(singleQuoted.ReplaceAllString(code, "''"), -1) {
				if !set[m[1]] && !environment[m[1]] && !reported[m[1]] {
					reported[m[1]] = true
					t.Errorf("%s:%d, a sh block, uses $%s, which neither it nor an earlier block of the page sets", b.file, b.line, m[1])
				}
			}
			for _, m := range file.FindAllStringSubmatch(code, -1) {
				if !fileExists(repoPath(m[1])) {
					t.Errorf("%s:%d, a sh block, reads %s, which a clone does not have at that path", b.file, b.line, m[1])
				}
			}
		}
	}
	if blocks < 10 {
		t.Errorf("%d sh blocks: the test reads the wrong files", blocks)
	}
}

// The pre-flight command is written once, in the README's "Pre-flight check", where
// TestReadme_PreflightCommandPrintsTheExample runs it; other pages link there instead of restating it.
func TestDocs_PreflightCommandIsWrittenOnce(t *testing.T) {
	invocation := regexp.MustCompile(`(?:^|[\s|;&])(?:[^\s|;&]*/)?yunikorn-user-info-preflight\s+--`)
	for _, name := range docFiles(t) {
		for _, b := range docBlocks(name, string(readRepoFile(t, name))) {
			if b.lang == "sh" && invocation.MatchString(b.text) && name != "README.md" {
				t.Errorf("%s:%d runs yunikorn-user-info-preflight: link to the README's \"Pre-flight check\" instead, "+
					"whose command a test runs", b.file, b.line)
			}
		}
	}
}

// The default column of the settings tables (README "Settings", docs/rules.md "Settings"), read as YAML and
// handed to the policy together, gives what no settings give.
func TestDocs_SettingsTablesGiveThePolicysDefaults(t *testing.T) {
	defaults := defaultSettings(t)
	for _, table := range []struct{ file, heading string }{{"README.md", "Settings"}, {"docs/rules.md", "Settings"}} {
		var header []string
		stated := map[string]any{}
		for _, line := range strings.Split(section(t, table.file, table.heading), "\n") {
			if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") {
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if header == nil {
				header = cells
				continue
			}
			col := slices.Index(header, "default")
			if col < 0 || col >= len(cells) {
				t.Fatalf("%s %q: no default column in %q", table.file, table.heading, header)
			}
			var v any
			if err := yaml.Unmarshal([]byte(strings.Trim(cells[col], "`")), &v); err != nil {
				t.Errorf("%s %q, %s: the default %s is not YAML: %v", table.file, table.heading, cells[0], cells[col], err)
				continue
			}
			stated[strings.Trim(cells[0], "`")] = v
		}
		if len(stated) != len(settingsKeys(t)) {
			t.Errorf("%s %q gives defaults for %d keys, the policy has %d", table.file, table.heading, len(stated), len(settingsKeys(t)))
		}
		got := validSettings(t, table.file+"'s defaults", stated)
		if diff := cmp.Diff(summarize(defaults), summarize(got)); diff != "" {
			t.Errorf("%s %q: its defaults differ from the policy's (-policy +table):\n%s", table.file, table.heading, diff)
		}
		for _, user := range []string{"system:serviceaccount:kube-system:job-controller", "system:kube-controller-manager", schedulerUser(t), "alice"} {
			if got.SystemUsers.MatchString(user) != defaults.SystemUsers.MatchString(user) {
				t.Errorf("%s %q: its systemUsers default matches %s: %v, the policy's: %v", table.file, table.heading, user,
					got.SystemUsers.MatchString(user), defaults.SystemUsers.MatchString(user))
			}
		}
	}
}

// staleDocStatements are statements of the README and docs/ found wrong once; they must not come back.
var staleDocStatements = []struct{ text, why string }{
	{"one patch operation", "rule 16 rewrites a map's task groups beside its user.info: a mutation can change more than one annotation"},
	{"operation per annotation map", "rule 16 rewrites a map's task groups beside its user.info"},
	{"Patch operation per map", "rule 16 rewrites a map's task groups beside its user.info"},
	{"preflight --policy policy.wasm --settings-json '{}'", "the policy's defaults leave YuniKorn's scheduler untrusted: give the pre-flight check the settings the policy will run with"},
}

func TestDocs_NoStaleStatement(t *testing.T) {
	for _, name := range docFiles(t) {
		text := strings.Join(strings.Fields(string(readRepoFile(t, name))), " ") // a statement may span lines
		for _, s := range staleDocStatements {
			if strings.Contains(text, s.text) {
				t.Errorf("%s says %q: %s", name, s.text, s.why)
			}
		}
	}
}
