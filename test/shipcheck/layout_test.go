package shipcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped build's own tools (the pre-initialiser that writes policy.wasm) and the released pre-flight
// command import nothing of the test hosts or of the tests: a change to the local host must not change what
// is published. The pre-flight command runs the module through the project's engine (internal/host/wapchost) and
// its kwctl-compatible evaluation (internal/host/kwctl), which the pre-initialiser needs neither of.
func TestLayout_TheBuildDoesNotImportTheTestHost(t *testing.T) {
	testHosts := []string{"/internal/host/webhook", "/cmd/kwhost", "/internal/host/wapchost/guesttest"}
	module, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	for _, tc := range []struct {
		pkg       string
		forbidden []string
	}{
		{"cmd/preinit", append([]string{"/internal/host/wapchost", "/internal/host/kwctl"}, testHosts...)},
		{"cmd/yunikorn-user-info-preflight", testHosts},
	} {
		out, err := exec.Command("go", "list", "-deps", "../../"+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, host := range tc.forbidden {
				if strings.HasSuffix(pkg, host) {
					t.Errorf("%s imports %s, a test host", tc.pkg, pkg)
				}
			}
			if strings.HasPrefix(pkg, strings.TrimSpace(string(module))+"/test/") {
				t.Errorf("%s imports %s, a test package", tc.pkg, pkg)
			}
		}
	}
}
