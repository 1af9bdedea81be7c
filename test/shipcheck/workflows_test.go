package shipcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// workflow is the part of a GitHub Actions workflow these tests read; actionlint (make lint) checks the
// rest of the syntax.
type workflow struct {
	On          yaml.Node               `yaml:"on"`
	Permissions yaml.Node               `yaml:"permissions"`
	Jobs        map[string]*workflowJob `yaml:"jobs"`
}

type workflowJob struct {
	Uses        string            `yaml:"uses"`
	RunsOn      string            `yaml:"runs-on"`
	Container   yaml.Node         `yaml:"container"`
	Permissions yaml.Node         `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Steps       []workflowStep    `yaml:"steps"`
}

type workflowStep struct {
	Name string            `yaml:"name"`
	ID   string            `yaml:"id"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	Env  map[string]string `yaml:"env"`
	With map[string]string `yaml:"with"`
}

// loadWorkflows returns every workflow of .github/workflows by file name.
func loadWorkflows(t *testing.T) map[string]workflow {
	t.Helper()
	files, err := filepath.Glob(repoPath(".github/workflows/*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no workflows under .github/workflows")
	}
	workflows := map[string]workflow{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var w workflow
		if err := yaml.Unmarshal(data, &w); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		workflows[filepath.Base(f)] = w
	}
	return workflows
}

func loadWorkflow(t *testing.T, name string) workflow {
	t.Helper()
	w, ok := loadWorkflows(t)[name]
	if !ok {
		t.Fatalf(".github/workflows/%s is missing", name)
	}
	return w
}

// runs lists every run: script of a workflow, with where it is.
func runs(w workflow) map[string]string {
	scripts := map[string]string{}
	for jobName, job := range w.Jobs {
		for i, step := range job.Steps {
			if step.Run != "" {
				scripts[fmt.Sprintf("job %s step %d (%s)", jobName, i+1, step.Name)] = step.Run
			}
		}
	}
	return scripts
}

// makefileVar reads a variable the Makefile (or an included .mk) sets with := or ?=.
func makefileVar(t *testing.T, file, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*[:?]?=[ \t]*(.+?)[ \t]*$`).FindSubmatch(readRepoFile(t, file))
	if m == nil {
		t.Fatalf("%s sets no %s", file, name)
	}
	return string(m[1])
}

// The README's test command is what CI runs, and nothing else: a contributor who runs it sees what CI sees.
func TestWorkflows_CIRunsTheReadmeTestCommand(t *testing.T) {
	if !strings.Contains(string(readRepoFile(t, "README.md")), "make test ") {
		t.Fatal("README.md does not show `make test`")
	}
	ci := loadWorkflow(t, "ci.yml")
	var triggers []string
	for i := 0; i+1 < len(ci.On.Content); i += 2 {
		triggers = append(triggers, ci.On.Content[i].Value)
	}
	sort.Strings(triggers)
	if got, want := strings.Join(triggers, " "), "pull_request push workflow_call"; got != want {
		t.Errorf("ci.yml triggers = %q, want %q", got, want)
	}
	var makes []string
	for where, script := range runs(workflow{Jobs: map[string]*workflowJob{"test": ci.Jobs["test"]}}) {
		if regexp.MustCompile(`\b(make|go|bats)\s`).MatchString(script) && !strings.HasPrefix(script, "apt-get ") {
			makes = append(makes, where+": "+strings.TrimSpace(script))
		}
	}
	if len(makes) != 1 || !strings.HasSuffix(makes[0], ": make test") {
		t.Errorf("ci.yml job test runs %q, want exactly one step running tests, and it runs `make test`", makes)
	}
}

// Stages of make test run in network and mount namespaces of their own (unshare --net --mount: the operators;
// unshare -n: YuniKorn's scheduler; unshare -rn: the release rehearsal), which a container refuses without
// CAP_SYS_ADMIN (Docker's defaults). In an unprivileged container those stages stop with their banner, and
// with CI=true, which GitHub sets, the run fails. The job runs either on the VM runner or in a privileged
// container.
func TestWorkflows_CITestJobCanCreateNamespaces(t *testing.T) {
	job := loadWorkflow(t, "ci.yml").Jobs["test"]
	if job == nil {
		t.Fatal("ci.yml has no job test")
	}
	c := job.Container
	if c.Kind == 0 {
		return // the VM runner
	}
	var options string
	if c.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(c.Content); i += 2 {
			if c.Content[i].Value == "options" {
				options = c.Content[i+1].Value
			}
		}
	}
	if !regexp.MustCompile(`(^|\s)--privileged(\s|$)`).MatchString(options) {
		t.Errorf("ci.yml job test runs make test in a container without --privileged (options %q): unshare --net --mount "+
			"is refused there, and the stages that need namespaces of their own stop", options)
	}
}

// On GitHub, where kwctl can be installed, CI also runs the e2e suite through real kwctl (make test runs it
// through the project's host when kwctl is missing), on policy.wasm and on the annotated module the release
// pushes. The release calls ci.yml first, so this job gates the release too.
func TestWorkflows_CIRunsTheE2ESuiteThroughKwctl(t *testing.T) {
	job := loadWorkflow(t, "ci.yml").Jobs["e2e-kwctl"]
	if job == nil {
		t.Fatal("ci.yml has no e2e-kwctl job")
	}
	steps := stepScripts(job)
	for _, want := range []string{`hack/install-release-tools.sh "$RUNNER_TEMP/release-tools"`, "make e2e-tests",
		"make annotated-policy.wasm", "make e2e-tests POLICY=annotated-policy.wasm"} {
		if indexOfLine(steps, want) < 0 {
			t.Errorf("ci.yml job e2e-kwctl runs no %q", want)
		}
	}
}

// stepScripts lists the lines each step of a job runs, one entry per line, in order.
func stepScripts(job *workflowJob) []string {
	var lines []string
	for _, step := range job.Steps {
		for _, line := range strings.Split(step.Run, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// indexOfLine is the index of the first line that is want or starts with want and a space, or -1.
func indexOfLine(lines []string, want string) int {
	for i, l := range lines {
		if l == want || strings.HasPrefix(l, want+" ") {
			return i
		}
	}
	return -1
}

// The release installs TinyGo's own build of the version hack/install-tinygo.sh builds from source for
// everybody else, so that the released module is built by the compiler the tests used.
func TestRelease_TinyGoIsTheVersionTheProjectBuilds(t *testing.T) {
	want := regexp.MustCompile(`TINYGO_VERSION:-([0-9.]+)`).FindStringSubmatch(string(readRepoFile(t, "hack/install-tinygo.sh")))
	if want == nil {
		t.Fatal("hack/install-tinygo.sh has no TINYGO_VERSION default")
	}
	var installs int
	shas := map[string]bool{}
	for name, w := range loadWorkflows(t) {
		for jobName, job := range w.Jobs {
			for _, step := range job.Steps {
				if step.Name != "Install TinyGo" {
					continue
				}
				installs++
				shas[step.Env["TINYGO_SHA256"]] = true
				if got := step.Env["TINYGO_VERSION"]; got != want[1] {
					t.Errorf("%s job %s installs TinyGo %q, hack/install-tinygo.sh builds %q", name, jobName, got, want[1])
				}
			}
		}
	}
	if len(shas) != 1 {
		t.Errorf("the workflows install TinyGo with %d different checksums, want one", len(shas))
	}
	if installs < 2 {
		t.Errorf("%d steps install TinyGo, want the release's and CI's kwctl job's", installs)
	}
}

// The release builds with the Makefile's target, so TINYGO_FLAGS has one home: no workflow may call tinygo
// itself or use Kubewarden's TinyGo build action, which has its own flags.
func TestWorkflows_BuildWithTheMakefileFlags(t *testing.T) {
	flags := makefileVar(t, "Makefile", "TINYGO_FLAGS")
	if !strings.Contains(string(readRepoFile(t, "Makefile")), "$(TINYGO_FLAGS) .") {
		t.Errorf("the Makefile's policy.wasm recipe does not build with $(TINYGO_FLAGS) (%s)", flags)
	}
	for name, w := range loadWorkflows(t) {
		for where, script := range runs(w) {
			if regexp.MustCompile(`\btinygo\s+build\b`).MatchString(script) {
				t.Errorf("%s %s runs tinygo itself: call `make policy.wasm` so the flags cannot drift", name, where)
			}
		}
		for jobName, job := range w.Jobs {
			for _, step := range job.Steps {
				if strings.Contains(step.Uses, "policy-build-tinygo") || strings.Contains(step.Uses, "policy-build-go") {
					t.Errorf("%s job %s uses %s, which builds with its own flags", name, jobName, step.Uses)
				}
			}
			if strings.Contains(job.Uses, "reusable-release-policy") || strings.Contains(job.Uses, "reusable-test-policy") {
				t.Errorf("%s job %s uses %s, which builds with its own flags", name, jobName, job.Uses)
			}
		}
	}
	release := loadWorkflow(t, "release.yml")
	var scripts []string
	for _, s := range runs(release) {
		scripts = append(scripts, strings.TrimSpace(s))
	}
	for _, want := range []string{"make policy.wasm", "make annotated-policy.wasm", "make e2e-tests"} {
		if !contains(scripts, want) {
			t.Errorf("release.yml has no step running exactly %q", want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

var pinnedAction = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$`)

// Actions are pinned by commit, as Kubewarden pins them: a tag can be moved, a commit cannot. The version
// the commit is, as a comment, lets Renovate (helpers:pinGitHubActionDigestsToSemver) and readers follow it.
func TestWorkflows_ActionsArePinnedByCommitWithTheirVersion(t *testing.T) {
	comment := regexp.MustCompile(`(?m)^\s*(?:-\s*)?uses:\s*(\S+)(.*)$`)
	for _, name := range workflowFiles(t) {
		for _, m := range comment.FindAllStringSubmatch(string(readRepoFile(t, ".github/workflows/"+name)), -1) {
			ref, rest := m[1], m[2]
			if strings.HasPrefix(ref, "./") {
				continue // a workflow of this repository
			}
			if !pinnedAction.MatchString(ref) {
				t.Errorf("%s: uses %s: pin the action by its full commit SHA", name, ref)
			}
			if !regexp.MustCompile(`^\s+# v\d+(\.\d+)*\s*$`).MatchString(rest) {
				t.Errorf("%s: uses %s%s: add the version as a comment (# vX.Y.Z)", name, ref, rest)
			}
		}
	}
}

func workflowFiles(t *testing.T) []string {
	t.Helper()
	var names []string
	for name := range loadWorkflows(t) {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// The default token gets nothing it does not need: each workflow starts from read access (or none), and
// every job says what it needs.
func TestWorkflows_PermissionsAreMinimalPerJob(t *testing.T) {
	for _, name := range workflowFiles(t) {
		w := loadWorkflows(t)[name]
		top := w.Permissions
		switch {
		case top.Kind == yaml.ScalarNode && top.Value == "read-all":
		case top.Kind == yaml.MappingNode && len(top.Content) == 0:
		case top.Kind == yaml.MappingNode && len(top.Content) == 2 && top.Content[0].Value == "contents" && top.Content[1].Value == "read":
		default:
			t.Errorf("%s: top-level permissions must be {}, read-all or contents: read", name)
		}
		for jobName, job := range w.Jobs {
			if job.Permissions.Kind == 0 {
				t.Errorf("%s job %s declares no permissions", name, jobName)
			}
			for i := 0; i+1 < len(job.Permissions.Content); i += 2 {
				if job.Permissions.Content[i+1].Value == "write" && !mayWrite(name, job.Permissions.Content[i].Value) {
					t.Errorf("%s job %s: %s: write outside the release and Scorecard's upload", name, jobName, job.Permissions.Content[i].Value)
				}
			}
		}
	}
}

// mayWrite lists the write permissions a workflow may ask for: the release publishes, and Scorecard
// uploads its results (code scanning) and authenticates to the OpenSSF API (id-token).
func mayWrite(workflow, permission string) bool {
	switch workflow {
	case "release.yml":
		return true
	case "scorecard.yml":
		return permission == "security-events" || permission == "id-token"
	}
	return false
}

// The release is triggered by v* tags, and pushes where metadata.yml says the policy lives: the workflow's
// target, with the repository owner filled in from go.mod's module path, is io.kubewarden.policy.ociUrl.
func TestRelease_PushesToTheMetadataOCIURL(t *testing.T) {
	release := loadWorkflow(t, "release.yml")
	if got := nodeString(release.On); got != "push: tags: v*" {
		t.Errorf("release.yml triggers = %q, want push of tags v*", got)
	}
	target := release.Jobs["release"].Env["OCI_TARGET"]
	owner := moduleOwner(t)
	resolved := strings.ReplaceAll(target, "${{ github.repository_owner }}", owner)
	if want := loadMetadata(t).Annotations[annOCIURL]; resolved != want {
		t.Errorf("release.yml OCI_TARGET = %q (%q for owner %s), want io.kubewarden.policy.ociUrl %q", target, resolved, owner, want)
	}
	push := `ref=$(kwctl push -o json annotated-policy.wasm "registry://$OCI_TARGET:$GITHUB_REF_NAME" | jq -r .immutable_ref)`
	if indexOfLine(stepScripts(release.Jobs["release"]), push) < 0 {
		t.Errorf("release.yml pushes nothing with %s", push)
	}
	if indexOfLine(stepScripts(release.Jobs["release"]), `hack/check-release.sh "$GITHUB_REF_NAME" "$OCI_TARGET"`) < 0 {
		t.Error("release.yml does not check the tag against metadata.yml (hack/check-release.sh)")
	}
}

// nodeString flattens a small YAML node ("push: tags: v*") for comparisons.
func nodeString(n yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.MappingNode:
		var parts []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, n.Content[i].Value+": "+nodeString(*n.Content[i+1]))
		}
		return strings.Join(parts, ", ")
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			parts = append(parts, nodeString(*c))
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// moduleOwner is the GitHub owner of the repository, from go.mod's module path.
func moduleOwner(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^module github\.com/([^/\s]+)/`).FindSubmatch(readRepoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod's module path is not github.com/<owner>/...")
	}
	return string(m[1])
}
