package shipcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lintTool finds a linter `make lint` installs: the path in env when set, the Makefile's pinned copy under
// .tools/ when it is installed, else the command on PATH. Outside CI a missing tool skips the test (run
// `make lint` once to install it); in CI (CI=true, which GitHub Actions sets) it fails, since `make test`
// runs `make lint` first.
func lintTool(t *testing.T, env, pinned, command string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p := repoPath(pinned); pinned != "" && fileExists(p) {
		return p
	}
	if p, err := exec.LookPath(command); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (%s): `make lint` installs it", command, pinned)
	}
	t.Skipf("%s is not installed: run `make lint` once to install it into .tools/", command)
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// The workflow check of `make lint` (hack/lint-workflows.sh with the pinned actionlint) passes on the
// workflows and fails on a copy with one deliberate mistake of each kind actionlint is there to catch.
func TestLint_WorkflowCheckFailsOnABrokenWorkflow(t *testing.T) {
	actionlint := lintTool(t, "ACTIONLINT", ".tools/actionlint/"+makefileVar(t, "Makefile", "ACTIONLINT_VERSION")+"/actionlint", "actionlint")
	env := []string{"ACTIONLINT=" + actionlint}
	copyWorkflows := func(t *testing.T) string {
		t.Helper()
		var names []string
		for _, name := range workflowFiles(t) {
			names = append(names, ".github/workflows/"+name)
		}
		return copyRepoFiles(t, names...)
	}

	if out, err := runScript(t, copyWorkflows(t), env, "hack/lint-workflows.sh"); err != nil {
		t.Fatalf("lint-workflows.sh on an intact copy of the workflows: %v\n%s", err, out)
	}
	tests := []struct {
		name, file, old, replacement, wantMessage string
	}{
		{"a misspelt step id in an expression", "release.yml",
			"${{ steps.version.outputs.version }}", "${{ steps.tagversion.outputs.version }}", "tagversion"},
		{"an unknown job key", "ci.yml", "runs-on: ubuntu-24.04", "runs_on: ubuntu-24.04", "runs_on"},
		{"a shell error in a run: script", "release.yml",
			`echo "version=${GITHUB_REF_NAME#v}" >> "$GITHUB_OUTPUT"`, `echo "version=${GITHUB_REF_NAME#v}" >> $GITHUB_OUTPUT`, "SC2086"},
		{"an unknown permission", "scorecard.yml", "security-events: write", "security-event: write", "security-event"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantMessage == "SC2086" {
				if _, err := exec.LookPath("shellcheck"); err != nil {
					t.Skip("shellcheck is not installed: actionlint checks run: scripts only with it")
				}
			}
			dir := copyWorkflows(t)
			editFile(t, dir, ".github/workflows/"+tc.file, tc.old, tc.replacement)
			out, err := runScript(t, dir, env, "hack/lint-workflows.sh")
			if err == nil {
				t.Fatalf("lint-workflows.sh passed on the broken copy:\n%s", out)
			}
			if !strings.Contains(out, tc.wantMessage) {
				t.Errorf("the output does not point at the mistake (%q):\n%s", tc.wantMessage, out)
			}
		})
	}
}

// The shell check of `make lint` finds every script (by extension and by shebang) and fails on one that
// shellcheck rejects.
func TestLint_ShellCheckFailsOnABrokenScript(t *testing.T) {
	lintTool(t, "SHELLCHECK", "", "shellcheck") // Debian's, which hack/ensure-debian-packages.sh installs
	dir := t.TempDir()
	writeFile(t, dir, "hack/good.sh", "#!/usr/bin/env bash\nset -euo pipefail\necho \"$1\"\n")
	writeFile(t, dir, ".ci/run", "#!/usr/bin/env bash\necho ok\n") // no extension, in a directory with a dot
	writeFile(t, dir, "main.go", "package main\n")
	out, err := runScript(t, dir, nil, "hack/lint-shell.sh")
	if err != nil {
		t.Fatalf("lint-shell.sh on clean scripts: %v\n%s", err, out)
	}
	if !strings.Contains(out, "2 scripts") {
		t.Errorf("lint-shell.sh did not find both scripts (by extension and by shebang):\n%s", out)
	}
	for name, script := range map[string]string{
		"hack/broken.sh": "#!/usr/bin/env bash\ncd $1\nrm -rf \"$dir\"/*\n",
		".ci/run":        "#!/usr/bin/env bash\nfor f in $(ls *.txt); do echo $f; done\n",
		"lib.bash":       "x=\"$(pwd)\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "hack/good.sh", "#!/usr/bin/env bash\necho ok\n")
			writeFile(t, dir, name, script)
			if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := runScript(t, dir, nil, "hack/lint-shell.sh")
			if err == nil {
				t.Fatalf("lint-shell.sh passed on %q:\n%s", script, out)
			}
			if !strings.Contains(out, name) {
				t.Errorf("the output does not name %s:\n%s", name, out)
			}
		})
	}
}

// The Renovate check of `make lint` (renovate-config-validator --strict) passes on renovate.json and fails
// on a copy with an unknown option or a broken custom manager.
func TestLint_RenovateCheckFailsOnABrokenConfig(t *testing.T) {
	validator := lintTool(t, "RENOVATE_CONFIG_VALIDATOR",
		".tools/renovate/"+makefileVar(t, "Makefile", "RENOVATE_VERSION")+"/renovate-config-validator", "renovate-config-validator")
	env := []string{"RENOVATE_CONFIG_VALIDATOR=" + validator}
	dir := copyRepoFiles(t, "renovate.json")
	if out, err := runScript(t, dir, env, "hack/lint-renovate.sh", "renovate.json"); err != nil {
		t.Fatalf("lint-renovate.sh on renovate.json: %v\n%s", err, out)
	}
	tests := []struct{ name, old, replacement string }{
		{"an unknown option", `"postUpdateOptions"`, `"postUpdateOption"`},
		{"a custom manager without its datasource", `"datasourceTemplate": "npm"`, `"datasourceTemplat": "npm"`},
		{"not JSON", `"labels": [`, `"labels": [,`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRepoFiles(t, "renovate.json")
			editFile(t, dir, "renovate.json", tc.old, tc.replacement)
			if out, err := runScript(t, dir, env, "hack/lint-renovate.sh", "renovate.json"); err == nil {
				t.Fatalf("lint-renovate.sh passed on the broken copy:\n%s", out)
			}
		})
	}
}
