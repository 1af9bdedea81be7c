package shipcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped build's own tools (the pre-initialiser that writes policy.wasm) import nothing of the test
// hosts: a change to the local host must not change the module that is published.
func TestLayout_TheBuildDoesNotImportTheTestHost(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/preinit").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, host := range []string{"/internal/wapchost", "/internal/kwctl", "/internal/webhook", "/cmd/kwhost"} {
			if strings.HasSuffix(pkg, host) {
				t.Errorf("cmd/preinit imports %s, a test host", pkg)
			}
		}
	}
}
