package shipcheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// releaseToolPins reads the versions and checksums hack/install-release-tools.sh pins.
func releaseToolPins(t *testing.T) map[string]string {
	t.Helper()
	pins := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z]+_(?:VERSION|SHA256))=(\S+)$`).FindAllStringSubmatch(string(readRepoFile(t, "hack/install-release-tools.sh")), -1) {
		pins[m[1]] = m[2]
	}
	return pins
}

// kwctl, cosign and syft are installed by the project's own script, each pinned by version and by the
// sha256 of the file downloaded (Kubewarden's policies monorepo does the same): kubewarden/github-actions'
// kwctl installer checks kwctl's signature against the repository kwctl has left, and an installer action
// that resolves "latest" could sign a release with a cosign nobody chose.
func TestRelease_ToolsArePinnedByVersionAndChecksum(t *testing.T) {
	pins := releaseToolPins(t)
	versions := map[string]*regexp.Regexp{
		"KWCTL":  regexp.MustCompile(`^v1\.\d+\.\d+$`),
		"COSIGN": regexp.MustCompile(`^v3\.\d+\.\d+$`), // v3: --new-bundle-format and --use-signing-config
		"SYFT":   regexp.MustCompile(`^v1\.\d+\.\d+$`),
	}
	script := string(readRepoFile(t, "hack/install-release-tools.sh"))
	for tool, re := range versions {
		if !re.MatchString(pins[tool+"_VERSION"]) {
			t.Errorf("%s_VERSION = %q, want %s", tool, pins[tool+"_VERSION"], re)
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(pins[tool+"_SHA256"]) {
			t.Errorf("%s_SHA256 = %q, want the 64 hex digits of a sha256", tool, pins[tool+"_SHA256"])
		}
		// Every download goes through fetch, which checks the file's sha256 before it is used.
		if !regexp.MustCompile(`(?s)fetch "https://[^"]*\$\{` + tool + `_VERSION[^"]*"\s*\\?\s*"\$` + tool + `_SHA256"`).MatchString(script) {
			t.Errorf("hack/install-release-tools.sh does not download %s through fetch with $%s_SHA256", strings.ToLower(tool), tool)
		}
	}
	if !strings.Contains(script, `sha256sum --check --strict`) {
		t.Error("hack/install-release-tools.sh's fetch does not check the sha256")
	}
	for name, w := range loadWorkflows(t) {
		for jobName, job := range w.Jobs {
			for _, step := range job.Steps {
				for _, banned := range []string{"kubewarden/github-actions/", "sigstore/cosign-installer", "anchore/sbom-action"} {
					if strings.HasPrefix(step.Uses, banned) {
						t.Errorf("%s job %s uses %s: install the tool with hack/install-release-tools.sh (pinned by sha256)", name, jobName, step.Uses)
					}
				}
			}
		}
	}
}

// The rehearsal builds the cosign and syft the release installs.
func TestRelease_RehearsalUsesTheReleasedToolVersions(t *testing.T) {
	pins := releaseToolPins(t)
	for _, tool := range []string{"COSIGN", "SYFT"} {
		if got := makefileVar(t, "test/release/release.mk", tool+"_VERSION"); got != pins[tool+"_VERSION"] {
			t.Errorf("test/release/release.mk builds %s %s, the release installs %s", strings.ToLower(tool), got, pins[tool+"_VERSION"])
		}
	}
}

// Nothing is published until the e2e suite has passed on the annotated module (kwctl annotate re-encodes
// the whole module), and the module pushed is then verified with docs/verification-config.yml and run
// by its digest.
func TestRelease_PublishingIsGatedOnTheAnnotatedModule(t *testing.T) {
	job := loadWorkflow(t, "release.yml").Jobs["release"]
	lines := stepScripts(job)
	order := []string{
		"make policy.wasm",
		"make e2e-tests",
		"make annotated-policy.wasm",
		"make e2e-tests POLICY=annotated-policy.wasm",
		`ref=$(kwctl push -o json annotated-policy.wasm`,
		`cosign sign --yes --new-bundle-format=false --use-signing-config=false "$ref"`,
		`kwctl verify --verification-config-path docs/verification-config.yml "registry://$REF"`,
		`kwctl run --request-path testdata/requests/pod-create-alice.json "registry://$REF" > "$RUNNER_TEMP/run.json"`,
		`gh release edit "$GITHUB_REF_NAME" --draft=false`,
	}
	wantInOrder(t, "release.yml job release", lines, order)
	var refFromPush bool
	for _, step := range job.Steps {
		if step.Env["REF"] == "${{ steps.push.outputs.ref }}" {
			refFromPush = true
		}
	}
	if !refFromPush {
		t.Error("the steps after the push do not take REF (the digest kwctl push printed) from steps.push.outputs.ref")
	}
	// The digest reference, not the tag: a tag can be moved between the push and the check.
	if !strings.Contains(strings.Join(lines, "\n"), `case "$ref" in "$OCI_TARGET"@sha256:*)`) {
		t.Error("the push step does not check that kwctl push returned $OCI_TARGET@sha256:...")
	}
}

// wantInOrder fails t unless lines hold each of want (the line, or a line it starts), in that order.
func wantInOrder(t *testing.T, where string, lines, want []string) {
	t.Helper()
	last := -1
	for k, w := range want {
		i := slices.IndexFunc(lines[last+1:], func(l string) bool { return strings.HasPrefix(l, w) })
		if i < 0 {
			t.Errorf("%s runs no %q after %q", where, w, want[max(0, k-1)])
			continue
		}
		last += 1 + i
	}
}

// The release attaches one module, the one it pushes: policy-server refuses a module `kwctl annotate` has
// not written ("Policy is missing protocol version ..."), so the plain policy.wasm is never published.
// hack/build-preflight.sh copies the module it is given to dist/policy.wasm, the name users download.
func TestRelease_AttachesOnlyTheAnnotatedModule(t *testing.T) {
	lines := stepScripts(loadWorkflow(t, "release.yml").Jobs["release"])
	from := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "gh release upload") })
	if from < 0 {
		t.Fatal("release.yml uploads nothing")
	}
	var modules []string
	for _, f := range strings.Fields(strings.Join(lines[from:], " ")) {
		if strings.HasSuffix(f, ".wasm") {
			modules = append(modules, f)
		}
	}
	if !slices.Equal(modules, []string{"dist/policy.wasm"}) {
		t.Errorf("release.yml attaches the modules %q, want dist/policy.wasm alone", modules)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "hack/build-preflight.sh" && f[3] != "annotated-policy.wasm" {
			t.Errorf("dist/policy.wasm is a copy of %s, not of annotated-policy.wasm, the module pushed", f[3])
		}
	}
}

// The pre-flight command (README "Pre-flight check") is released as the module is: built by the script the
// rehearsal runs too, checked before anything is published, its SHA256SUMS signed keylessly, and attached
// with the module to the release that is then published.
func TestRelease_PreflightIsBuiltCheckedSignedAndAttached(t *testing.T) {
	job := loadWorkflow(t, "release.yml").Jobs["release"]
	lines := stepScripts(job)
	wantInOrder(t, "release.yml job release", lines, []string{
		"make e2e-tests POLICY=annotated-policy.wasm",
		`hack/build-preflight.sh "$VERSION" dist annotated-policy.wasm`,
		`hack/check-preflight.sh "$VERSION" dist internal/preflight/testdata/adoption-objects.json`,
		`cosign sign-blob --yes --new-bundle-format=true --use-signing-config=true \`,
		`--bundle dist/SHA256SUMS.bundle.sigstore dist/SHA256SUMS`,
		`ref=$(kwctl push -o json annotated-policy.wasm`,
		`gh release upload "$GITHUB_REF_NAME" dist/policy.wasm`,
		`gh release edit "$GITHUB_REF_NAME" --draft=false`,
	})
	upload := strings.Join(lines[slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "gh release upload") }):], " ")
	for _, asset := range []string{"dist/yunikorn-user-info-preflight-linux-amd64", "dist/yunikorn-user-info-preflight-linux-arm64",
		"dist/SHA256SUMS", "dist/SHA256SUMS.bundle.sigstore"} {
		if !strings.Contains(upload, asset+" ") && !strings.HasSuffix(strings.TrimSpace(upload), asset) {
			t.Errorf("release.yml does not attach %s to the release", asset)
		}
	}
	for _, step := range job.Steps {
		if strings.Contains(step.Run, "hack/build-preflight.sh") && step.Env["VERSION"] != "${{ steps.version.outputs.version }}" {
			t.Errorf("step %q stamps VERSION=%q, want the tag's version (steps.version.outputs.version)", step.Name, step.Env["VERSION"])
		}
	}
	// The rehearsal builds and checks with the same scripts, so that they run before a tag does.
	rehearsal := string(readRepoFile(t, "test/release/rehearsal.sh"))
	for _, script := range []string{"hack/build-preflight.sh", "hack/check-preflight.sh"} {
		if !strings.Contains(rehearsal, script+` "$version" "$RUN/dist"`) {
			t.Errorf("test/release/rehearsal.sh does not run %s on the version it rehearses", script)
		}
	}
	build := string(readRepoFile(t, "hack/build-preflight.sh"))
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=$version", "for arch in amd64 arm64", "SHA256SUMS"} {
		if !strings.Contains(build, want) {
			t.Errorf("hack/build-preflight.sh does not build with %s", want)
		}
	}
}

// The SBOM lists what ships: the Go modules compiled into the module (hack/sbom-source.sh), not bench/'s
// modules or the test hosts' dependencies.
func TestRelease_SBOMListsTheModulesThatShip(t *testing.T) {
	lines := stepScripts(loadWorkflow(t, "release.yml").Jobs["release"])
	if indexOfLine(lines, `hack/sbom-source.sh "$RUNNER_TEMP/sbom-source"`) < 0 ||
		indexOfLine(lines, `syft scan "dir:$RUNNER_TEMP/sbom-source" \`) < 0 {
		t.Errorf("release.yml does not scan hack/sbom-source.sh's directory with syft:\n%s", strings.Join(lines, "\n"))
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	if out, err := runScript(t, repoPath("."), nil, "hack/sbom-source.sh", dir); err != nil {
		t.Fatalf("hack/sbom-source.sh: %v\n%s", err, out)
	}
	gomod := string(readFile(t, filepath.Join(dir, "go.mod")))
	for _, want := range []string{"github.com/kubewarden/policy-sdk-go ", "github.com/tidwall/gjson "} {
		if !strings.Contains(gomod, want) {
			t.Errorf("the SBOM's go.mod lacks %s, which the module is built from:\n%s", want, gomod)
		}
	}
	// The waPC glue is the module's own (package wapcguest); the waPC package builds the typed module and test guests only.
	for _, never := range []string{"k8s.io/", "apache/yunikorn", "wasmtime-go", "tetratelabs/wazero", "google/go-cmp", "gopkg.in/yaml", "wI2L/jsondiff",
		"wapc/wapc-guest-tinygo"} {
		if strings.Contains(gomod, never) {
			t.Errorf("the SBOM's go.mod lists %s, which does not ship:\n%s", never, gomod)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// When the module proxy refuses a tool, the rehearsal is skipped loudly on a developer's machine (exit 3,
// which make release-rehearsal turns into a pass with the banner), and fails in CI or with REQUIRE_RELEASE=1.
func TestRelease_RehearsalSkipsLoudlyOnAProxyRefusal(t *testing.T) {
	bin := t.TempDir()
	// A go that answers every download as a refusing proxy does.
	writeFile(t, bin, "go", "#!/bin/sh\necho '{\"Error\": \"reading https://proxy.golang.org/x/@v/v1.0.0.info: 403 Forbidden\"}'\nexit 1\n")
	if err := os.Chmod(filepath.Join(bin, "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "RELEASE_TOOLS=" + tools,
		"DISTRIBUTION_VERSION=v3.0.0", "COSIGN_VERSION=v3.1.3", "SYFT_VERSION=v1.28.0"}
	tests := []struct {
		name     string
		env      []string
		wantExit int
	}{
		{"on a developer's machine", []string{"CI=", "REQUIRE_RELEASE="}, 3},
		{"in CI", []string{"CI=true", "REQUIRE_RELEASE="}, 1},
		{"with REQUIRE_RELEASE=1", []string{"CI=", "REQUIRE_RELEASE=1"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runScript(t, repoPath("."), append(env, tc.env...), "test/release/tools.sh")
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantExit {
				t.Errorf("tools.sh exited %d, want %d:\n%s", code, tc.wantExit, out)
			}
			if !strings.Contains(out, "RELEASE REHEARSAL SKIPPED") || !strings.Contains(out, "403 Forbidden") {
				t.Errorf("no banner naming the refusal:\n%s", out)
			}
		})
	}
}
