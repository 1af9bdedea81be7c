package shipcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// rule is one admission rule, as metadata.yml, a ClusterAdmissionPolicy and kubewarden/rules write it.
type rule struct {
	APIGroups   []string `yaml:"apiGroups"`
	APIVersions []string `yaml:"apiVersions"`
	Resources   []string `yaml:"resources"`
	Operations  []string `yaml:"operations"`
}

// metadataFile is metadata.yml. The booleans are pointers so that a missing key fails the checks
// instead of reading as false: kwctl's default for backgroundAudit is true.
type metadataFile struct {
	Rules    []rule `yaml:"rules"`
	Mutating *bool  `yaml:"mutating"`
	// ContextAwareResources is a pointer so that a missing key is told apart from an empty list. The older
	// boolean key contextAware has no field: decodeStrict refuses it.
	ContextAwareResources *[]contextAwareResource `yaml:"contextAwareResources"`
	ExecutionMode         string                  `yaml:"executionMode"`
	MinimumKubewarden     string                  `yaml:"minimumKubewardenVersion"`
	BackgroundAudit       *bool                   `yaml:"backgroundAudit"`
	Annotations           map[string]string       `yaml:"annotations"`
}

// contextAwareResource is one Kubernetes kind a context-aware policy may read.
type contextAwareResource struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

// The metadata.yml annotations the other files are compared with.
const (
	annVersion     = "io.kubewarden.policy.version"
	annTitle       = "io.kubewarden.policy.title"
	annDescription = "io.kubewarden.policy.description"
	annAuthor      = "io.kubewarden.policy.author"
	annURL         = "io.kubewarden.policy.url"
	annSource      = "io.kubewarden.policy.source"
	annLicense     = "io.kubewarden.policy.license"
	annOCIURL      = "io.kubewarden.policy.ociUrl"
	annAHDisplay   = "io.artifacthub.displayName"
	annAHResources = "io.artifacthub.resources"
	annAHKeywords  = "io.artifacthub.keywords"
)

// repoPath is the absolute path of a file named by its path from the repository root.
func repoPath(name string) string {
	return filepath.Join(guesttest.RepoRoot(), filepath.FromSlash(name))
}

// readRepoFile returns a file of the repository, failing the test when it is missing.
func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(repoPath(name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return data
}

// decodeStrict decodes YAML into v and refuses keys v has no field for: a misspelt key (`mutatting`,
// `backgroundaudit`) must fail here rather than silently take its default in Kubewarden.
func decodeStrict(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", what, err)
	}
}

func loadMetadata(t *testing.T) metadataFile {
	t.Helper()
	var md metadataFile
	decodeStrict(t, "metadata.yml", readRepoFile(t, "metadata.yml"), &md)
	return md
}

// moduleRef is where the release is pushed, as a ClusterAdmissionPolicy's spec.module names it.
func moduleRef(md metadataFile) string {
	return "registry://" + md.Annotations[annOCIURL] + ":v" + md.Annotations[annVersion]
}

// splitList splits the comma-separated lists of the annotations ("Pod, Deployment").
func splitList(s string) []string {
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// settingsKeys is the policy's own list of settings keys, so that a key added to the policy without a
// question in questions-ui.yml or a row in the README fails the tests.
func settingsKeys(t *testing.T) []string {
	t.Helper()
	_, msg := policy.CheckSettings([]byte(`{"x":1}`))
	if want := "valid keys are " + strings.Join(policy.SettingsKeys[:], ", "); !strings.Contains(msg, want) {
		t.Fatalf(`CheckSettings({"x":1}) = %q: want a message listing the valid keys: %q`, msg, want)
	}
	return append([]string(nil), policy.SettingsKeys[:]...)
}

// defaultSettings is what the policy runs with when given no settings.
func defaultSettings(t *testing.T) policy.Settings {
	t.Helper()
	s, msg := policy.CheckSettings([]byte(`{}`))
	if msg != "" {
		t.Fatalf("CheckSettings({}) = %q: the defaults must be valid", msg)
	}
	return s
}
