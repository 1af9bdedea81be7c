package shipcheck

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// internal/ holds one folder per role (docs/development.md "Architecture"): build/ is the build step of
// policy.wasm (cmd/preinit), host/ runs policy.wasm as policy-server and kwctl do (cmd/kwhost, the
// pre-flight command, the benchmarks and the tests), and preflight/ is the operator tool a release attaches.
// Packages that hold only tests live under test/.
var internalRoles = []string{"build", "host", "preflight"}

func TestLayout_InternalHoldsOneFolderPerRole(t *testing.T) {
	entries, err := os.ReadDir(repoPath("internal"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("internal/%s: internal/ holds only its role folders (%s)", e.Name(), strings.Join(internalRoles, ", "))
			continue
		}
		got = append(got, e.Name())
	}
	if !slices.Equal(got, internalRoles) {
		t.Errorf("internal/ holds %v, want the role folders %v: a new role is a folder of its own, named in "+
			"docs/development.md \"Architecture\" and in internalRoles", got, internalRoles)
	}
	doc := string(readRepoFile(t, "docs/development.md"))
	_, arch, _ := strings.Cut(doc, "\n## Architecture\n")
	arch, _, _ = strings.Cut(arch, "\n## ")
	for _, role := range internalRoles {
		if !strings.Contains(arch, "internal/"+role+"/") {
			t.Errorf("docs/development.md does not name internal/%s/ (its Architecture section draws every role)", role)
		}
	}
}

// The shipped build's own tools (the pre-initialiser that writes policy.wasm) and the released pre-flight
// command import nothing of the test hosts or of the tests: a change to the local host must not change what
// is published. The pre-flight command runs the module through the project's engine (internal/host/wapchost)
// and its kwctl-compatible evaluation (internal/host/kwctl); the pre-initialiser imports nothing of
// internal/host at all.
func TestLayout_TheBuildDoesNotImportTheTestHost(t *testing.T) {
	testHosts := []string{"internal/host/webhook", "cmd/kwhost", "internal/host/wapchost/guesttest", "test"}
	module, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	prefix := strings.TrimSpace(string(module)) + "/"
	for _, tc := range []struct {
		pkg       string
		forbidden []string
	}{
		{"cmd/preinit", append([]string{"internal/host", "internal/preflight"}, testHosts...)},
		{"internal/build/...", append([]string{"internal/host", "internal/preflight"}, testHosts...)},
		{"cmd/yunikorn-user-info-preflight", testHosts},
	} {
		out, err := exec.Command("go", "list", "-deps", "../../"+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(pkg, prefix)
			if !ok {
				continue
			}
			for _, f := range tc.forbidden {
				if rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s imports %s, which is under %s", tc.pkg, pkg, f)
				}
			}
		}
	}
}
