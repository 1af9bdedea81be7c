package shipcheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runScript runs a hack/ script with dir as its working directory and returns its combined output. A skip
// the script reports is the test's, not the make test stage's that runs the tests: STAGE_NOTES is unset.
func runScript(t *testing.T, dir string, env []string, script string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{repoPath(script)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "STAGE_NOTES="), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyRepoFiles copies files of the repository into a new temporary directory, keeping their paths.
func copyRepoFiles(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		writeFile(t, dir, name, string(readRepoFile(t, name)))
	}
	return dir
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func editFile(t *testing.T, dir, name, old, replacement string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", name, old)
	}
	writeFile(t, dir, name, strings.Replace(string(data), old, replacement, 1))
}

// prepareRelease does in dir what docs/release.md "Before tagging" asks: the development version
// (<next>-unreleased) becomes <next> in metadata.yml and artifacthub-pkg.yml, and the [Unreleased] section of
// CHANGELOG.md gets that version and a date. It returns the version to tag.
func prepareRelease(t *testing.T, dir, version string) string {
	t.Helper()
	release, unreleased := strings.CutSuffix(version, "-unreleased")
	if !unreleased {
		return version
	}
	for _, name := range []string{"metadata.yml", "artifacthub-pkg.yml"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), version, release)
		writeFile(t, dir, name, text)
	}
	editFile(t, dir, "CHANGELOG.md", "## [Unreleased]\n", "## [Unreleased]\n\n## ["+release+"] - 2026-12-01\n")
	return release
}

// The release's own check (hack/check-release.sh, run before anything is built) refuses the development
// version, accepts the repository once the release is prepared as docs/release.md says, and refuses each
// kind of drift from that.
func TestRelease_CheckAgreesWithMetadataAndArtifactHub(t *testing.T) {
	md := loadMetadata(t)
	version, target := md.Annotations[annVersion], md.Annotations[annOCIURL]
	files := []string{"metadata.yml", "artifacthub-pkg.yml", "CHANGELOG.md"}

	if strings.HasSuffix(version, "-unreleased") {
		out, err := runScript(t, repoPath("."), nil, "hack/check-release.sh", "v"+version, target)
		if err == nil || !strings.Contains(out, "is a development version") {
			t.Errorf("check-release.sh v%s on the repository: %v, want it refused as a development version:\n%s", version, err, out)
		}
	}
	dir := copyRepoFiles(t, files...)
	release := prepareRelease(t, dir, version)
	tag := "v" + release
	if out, err := runScript(t, dir, nil, "hack/check-release.sh", tag, target); err != nil {
		t.Fatalf("check-release.sh %s %s on the prepared repository: %v\n%s", tag, target, err, out)
	}
	tests := []struct {
		name        string
		tag, target string
		drift       func(dir string)
		wantMessage string
	}{
		{"another tag", "v" + release + "9", target, nil, "io.kubewarden.policy.version"},
		{"not a version tag", "latest", target, nil, "is not v<major>.<minor>.<patch>"},
		{"another registry", tag, "ghcr.io/someone-else/policies/yunikorn-user-info", nil, "io.kubewarden.policy.ociUrl"},
		{"metadata.yml version", tag, target, func(dir string) {
			editFile(t, dir, "metadata.yml", "io.kubewarden.policy.version: "+release, "io.kubewarden.policy.version: 9.9.9")
		}, "io.kubewarden.policy.version is '9.9.9'"},
		{"artifacthub-pkg.yml version", tag, target, func(dir string) {
			editFile(t, dir, "artifacthub-pkg.yml", "\nversion: "+release, "\nversion: 9.9.9")
		}, "artifacthub-pkg.yml version is '9.9.9'"},
		{"artifacthub-pkg.yml image", tag, target, func(dir string) {
			editFile(t, dir, "artifacthub-pkg.yml", "image: "+target+":"+tag, "image: "+target+":latest")
		}, "containersImages image"},
		{"CHANGELOG.md section", tag, target, func(dir string) {
			editFile(t, dir, "CHANGELOG.md", "## ["+release+"]", "## [9.9.9]")
		}, "CHANGELOG.md has no section"},
		{"CHANGELOG.md section with headings only", tag, target, func(dir string) {
			editFile(t, dir, "CHANGELOG.md", "## ["+release+"] - 2026-12-01\n",
				"## ["+release+"] - 2026-12-01\n\n### Added\n\n### Fixed\n\n## [0.0.1] - 2026-11-30\n")
		}, "or it is empty"},
		{"a development version", "v" + release + "-unreleased", target, func(dir string) {
			for _, name := range []string{"metadata.yml", "artifacthub-pkg.yml"} {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, name, strings.ReplaceAll(string(data), release, release+"-unreleased"))
			}
			editFile(t, dir, "CHANGELOG.md", "## ["+release+"]", "## ["+release+"-unreleased]")
		}, "is a development version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRepoFiles(t, files...)
			prepareRelease(t, dir, version)
			if tc.drift != nil {
				tc.drift(dir)
			}
			out, err := runScript(t, dir, nil, "hack/check-release.sh", tc.tag, tc.target)
			if err == nil {
				t.Fatalf("check-release.sh passed:\n%s", out)
			}
			if !strings.Contains(out, tc.wantMessage) {
				t.Errorf("output does not name the problem (%q):\n%s", tc.wantMessage, out)
			}
		})
	}
}

const changelogFixture = `# Changelog

## [Unreleased]

- not released yet

## [1.1.0] - 2026-12-01

### Fixed

- a fix

## [1.0.0] - 2026-11-30

First.

## [0.9.0] - 2026-11-01

## [0.8.0] - 2026-10-01

### Added

### Fixed

[Unreleased]: https://example.invalid/compare/v1.1.0...HEAD
[1.1.0]: https://example.invalid/releases/tag/v1.1.0
`

// The release notes are the tag's CHANGELOG.md section, without its heading, the next section or the links.
func TestRelease_NotesAreTheChangelogSection(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "CHANGELOG.md", changelogFixture)
	tests := []struct {
		version string
		want    string // "" for a failure
	}{
		{"v1.1.0", "### Fixed\n\n- a fix\n"},
		{"1.1.0", "### Fixed\n\n- a fix\n"},
		{"v1.0.0", "First.\n"},
		{"v0.9.0", ""}, // empty: a release must say what it changes
		{"v0.8.0", ""}, // headings with nothing under them are empty too
		{"v1.2.0", ""}, // missing
		{"v1.1", ""},   // a prefix of a version is not that version
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			cmd := exec.Command("bash", repoPath("hack/changelog-section.sh"), tc.version)
			cmd.Dir = dir
			out, err := cmd.Output()
			if tc.want == "" {
				if err == nil {
					t.Fatalf("changelog-section.sh %s succeeded with %q, want a failure", tc.version, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("changelog-section.sh %s: %v", tc.version, err)
			}
			if string(out) != tc.want {
				t.Errorf("changelog-section.sh %s = %q, want %q", tc.version, out, tc.want)
			}
		})
	}
	// The repository's own CHANGELOG.md gives notes for its version once a release prepared it.
	version := loadMetadata(t).Annotations[annVersion]
	dir = copyRepoFiles(t, "metadata.yml", "artifacthub-pkg.yml", "CHANGELOG.md")
	release := prepareRelease(t, dir, version)
	if out, err := runScript(t, dir, nil, "hack/changelog-section.sh", "v"+release); err != nil || strings.TrimSpace(out) == "" {
		t.Errorf("changelog-section.sh v%s on CHANGELOG.md: %v\n%s", release, err, out)
	}
}

// hack/push-artifacthub.sh publishes the generated package with the tag's artifacthub-repo.yml and README
// on the artifacthub branch: one commit per release, none when nothing changed.
func TestRelease_PushArtifactHubBranch(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	remote := t.TempDir()
	work := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(remote, "init", "-q", "--bare")
	git(work, "init", "-q", "-b", "main")
	writeFile(t, work, "artifacthub-repo.yml", string(readRepoFile(t, "artifacthub-repo.yml")))
	writeFile(t, work, "README.md", "# readme v0.1.0\n")
	git(work, "add", ".")
	git(work, "commit", "-qm", "one")
	git(work, "tag", "v0.1.0")
	git(work, "remote", "add", "origin", remote)
	writeFile(t, work, "pkg.yml", "version: 0.1.0\nname: yunikorn-user-info\nlinks:\n- name: policy\n  url: https://github.com/o/r/releases/download/v0.1.0/policy.wasm\n")

	push := func(tag string) string {
		t.Helper()
		out, err := runScript(t, work, nil, "hack/push-artifacthub.sh", tag, filepath.Join(work, "pkg.yml"))
		if err != nil {
			t.Fatalf("push-artifacthub.sh %s: %v\n%s", tag, err, out)
		}
		return out
	}
	push("v0.1.0")
	if got := git(remote, "ls-tree", "--name-only", "artifacthub"); got != "README.md\nartifacthub-pkg.yml\nartifacthub-repo.yml" {
		t.Errorf("artifacthub branch holds %q", got)
	}
	// the package is pushed as kwctl wrote it: its policy link names the release's policy.wasm, the annotated module
	if got := git(remote, "show", "artifacthub:artifacthub-pkg.yml"); got != "version: 0.1.0\nname: yunikorn-user-info\nlinks:\n- name: policy\n  url: https://github.com/o/r/releases/download/v0.1.0/policy.wasm" {
		t.Errorf("artifacthub-pkg.yml on the branch = %q", got)
	}
	if out := push("v0.1.0"); !strings.Contains(out, "already holds") {
		t.Errorf("a second push of the same release: %q, want nothing pushed", out)
	}

	writeFile(t, work, "README.md", "# readme v0.2.0\n")
	git(work, "commit", "-qam", "two")
	git(work, "tag", "v0.2.0")
	if _, err := runScript(t, work, nil, "hack/push-artifacthub.sh", "v0.2.0", filepath.Join(work, "pkg.yml")); err == nil {
		t.Error("push-artifacthub.sh v0.2.0 with a package of version 0.1.0 succeeded")
	}
	writeFile(t, work, "pkg.yml", "version: 0.2.0\nname: yunikorn-user-info\n")
	push("v0.2.0")
	if got := git(remote, "rev-list", "--count", "artifacthub"); got != "2" {
		t.Errorf("artifacthub branch has %s commits, want 2 (one per release)", got)
	}
	if got := git(remote, "show", "artifacthub:README.md"); got != "# readme v0.2.0" {
		t.Errorf("README.md on the branch = %q, want the v0.2.0 one", got)
	}
	if got := git(work, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("the checkout is on %q after the push, want main untouched", got)
	}
}

// Every image reference users copy (README, examples, Artifact Hub files, docs) is the one the release
// pushes: io.kubewarden.policy.ociUrl, at the current version's tag or with a placeholder tag.
func TestImageReferences_AreWhatTheReleasePushes(t *testing.T) {
	md := loadMetadata(t)
	image := md.Annotations[annOCIURL]
	allowed := map[string]bool{
		image: true, image + ":v" + md.Annotations[annVersion]: true, image + ":v<version>": true, image + ":<tag>": true,
	}
	// Policies (".../policies/..."), not other images such as policy-server's.
	ref := regexp.MustCompile(`ghcr\.io/[A-Za-z0-9._<>-]+/policies/[A-Za-z0-9._/<>-]+(?::[A-Za-z0-9._<>-]+)?`)
	files := []string{"README.md", "artifacthub-pkg.yml", "artifacthub-repo.yml", "CHANGELOG.md", "SECURITY.md", "metadata.yml"}
	for _, pattern := range []string{"examples/*.yaml", "docs/*.md"} {
		matches, err := filepath.Glob(repoPath(pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(repoPath("."), m)
			files = append(files, filepath.ToSlash(rel))
		}
	}
	var seen int
	for _, name := range files {
		for _, r := range ref.FindAllString(string(readRepoFile(t, name)), -1) {
			r = strings.TrimRight(r, ".")
			seen++
			if !allowed[r] {
				t.Errorf("%s refers to %s: want %s or %s:v%s, what the release pushes", name, r, image, image, md.Annotations[annVersion])
			}
		}
	}
	if seen == 0 {
		t.Error("no image reference found: the test reads the wrong files")
	}
}

// artifacthub-repo.yml names the same maintainers as metadata.yml (the Artifact Hub package's
// maintainers come from io.kubewarden.policy.author).
func TestArtifactHubRepo_OwnersAreTheMaintainers(t *testing.T) {
	var repo struct {
		RepositoryID string `yaml:"repositoryID"`
		Owners       []struct {
			Name  string `yaml:"name"`
			Email string `yaml:"email"`
		} `yaml:"owners"`
	}
	decodeStrict(t, "artifacthub-repo.yml", readRepoFile(t, "artifacthub-repo.yml"), &repo)
	var owners []string
	for _, o := range repo.Owners {
		owners = append(owners, o.Name+" <"+o.Email+">")
	}
	if got, want := strings.Join(owners, ", "), loadMetadata(t).Annotations[annAuthor]; got != want {
		t.Errorf("artifacthub-repo.yml owners = %q, want io.kubewarden.policy.author %q", got, want)
	}
}

// renovateConfig is the part of renovate.json these tests read.
type renovateConfig struct {
	CustomManagers []struct {
		Description    string   `json:"description"`
		FileMatch      []string `json:"fileMatch"`
		MatchStrings   []string `json:"matchStrings"`
		DepName        string   `json:"depNameTemplate"`
		Datasource     string   `json:"datasourceTemplate"`
		ExtractVersion string   `json:"extractVersionTemplate"`
	} `json:"customManagers"`
}

// Renovate bumps the versions the Makefile and the scripts pin only while its patterns still find them: each
// pattern must match exactly once in its file and capture the version the file sets.
func TestRenovate_CustomManagersFindThePinnedVersions(t *testing.T) {
	var cfg renovateConfig
	if err := json.Unmarshal(readRepoFile(t, "renovate.json"), &cfg); err != nil {
		t.Fatalf("renovate.json: %v", err)
	}
	want := map[string]string{ // dependency -> the version the repository pins today
		"tinygo-org/tinygo":                    regexp.MustCompile(`TINYGO_VERSION: ([0-9.]+)`).FindStringSubmatch(string(readRepoFile(t, ".github/workflows/release.yml")))[1],
		"github.com/tinygo-org/tinygo":         regexp.MustCompile(`TINYGO_VERSION:-([0-9.]+)`).FindStringSubmatch(string(readRepoFile(t, "hack/install-tinygo.sh")))[1],
		"github.com/golangci/golangci-lint/v2": makefileVar(t, "Makefile", "GOLANGCI_LINT_VERSION"),
		"github.com/rhysd/actionlint":          makefileVar(t, "Makefile", "ACTIONLINT_VERSION"),
		"node":                                 regexp.MustCompile(`NODE_VERSION:-([0-9.]+)`).FindStringSubmatch(string(readRepoFile(t, "hack/install-renovate.sh")))[1],
		"renovate":                             makefileVar(t, "Makefile", "RENOVATE_VERSION"),
		"k8s.io/kubernetes":                    makefileVar(t, "test/cluster/cluster.mk", "KUBE_VERSION"),
	}
	found := map[string]bool{}
	for _, m := range cfg.CustomManagers {
		t.Run(m.DepName, func(t *testing.T) {
			if len(m.FileMatch) != 1 || len(m.MatchStrings) != 1 {
				t.Fatalf("want one fileMatch and one matchStrings per manager, got %q and %q", m.FileMatch, m.MatchStrings)
			}
			file := strings.NewReplacer(`^`, "", `$`, "", `\.`, ".").Replace(m.FileMatch[0])
			re, err := regexp.Compile(m.MatchStrings[0])
			if err != nil {
				t.Fatalf("matchStrings %q: %v", m.MatchStrings[0], err)
			}
			matches := re.FindAllStringSubmatch(string(readRepoFile(t, file)), -1)
			if len(matches) != 1 {
				t.Fatalf("%q matches %d times in %s, want once", m.MatchStrings[0], len(matches), file)
			}
			got := matches[0][re.SubexpIndex("currentValue")]
			if got != want[m.DepName] {
				t.Errorf("captures %q in %s, want %q", got, file, want[m.DepName])
			}
			found[m.DepName] = true
		})
	}
	for dep := range want {
		if !found[dep] {
			t.Errorf("renovate.json has no custom manager for %s", dep)
		}
	}
}

// kwctl moved into the Kubewarden controller's repository (kubewarden/adm-controller); its old repository
// is archived and its releases stop at an old version. What users read must send them to the current one.
func TestKwctl_IsFetchedFromItsCurrentHome(t *testing.T) {
	for _, name := range []string{"README.md", "Makefile", "artifacthub-pkg.yml", "SECURITY.md", "docs/rules.md", "docs/runtime.md"} {
		if strings.Contains(string(readRepoFile(t, name)), "github.com/kubewarden/kwctl") {
			t.Errorf("%s sends users to github.com/kubewarden/kwctl (archived): use https://github.com/kubewarden/adm-controller/releases", name)
		}
	}
	for _, name := range []string{"README.md", "Makefile"} {
		if !strings.Contains(string(readRepoFile(t, name)), "https://github.com/kubewarden/adm-controller/releases") {
			t.Errorf("%s does not say where to get kwctl (https://github.com/kubewarden/adm-controller/releases)", name)
		}
	}
}
