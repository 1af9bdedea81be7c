package shipcheck

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// artifactHubPkg is artifacthub-pkg.yml in the layout `kwctl scaffold artifacthub` writes.
type artifactHubPkg struct {
	Version          string `yaml:"version"`
	Name             string `yaml:"name"`
	DisplayName      string `yaml:"displayName"`
	CreatedAt        string `yaml:"createdAt"`
	Description      string `yaml:"description"`
	License          string `yaml:"license"`
	HomeURL          string `yaml:"homeURL"`
	ContainersImages []struct {
		Name  string `yaml:"name"`
		Image string `yaml:"image"`
	} `yaml:"containersImages"`
	Keywords []string `yaml:"keywords"`
	Links    []struct {
		Name string `yaml:"name"`
		URL  string `yaml:"url"`
	} `yaml:"links"`
	Install     string `yaml:"install"`
	Maintainers []struct {
		Name  string `yaml:"name"`
		Email string `yaml:"email"`
	} `yaml:"maintainers"`
	Provider struct {
		Name string `yaml:"name"`
	} `yaml:"provider"`
	Recommendations []struct {
		URL string `yaml:"url"`
	} `yaml:"recommendations"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadArtifactHub(t *testing.T) artifactHubPkg {
	t.Helper()
	var pkg artifactHubPkg
	decodeStrict(t, "artifacthub-pkg.yml", readRepoFile(t, "artifacthub-pkg.yml"), &pkg)
	return pkg
}

// Every field kwctl derives from metadata.yml must say what metadata.yml says.
func TestArtifactHub_FieldsComeFromMetadata(t *testing.T) {
	md := loadMetadata(t)
	ann := md.Annotations
	pkg := loadArtifactHub(t)
	image := ann[annOCIURL] + ":v" + ann[annVersion]

	tests := []struct {
		field string
		got   string
		want  string
	}{
		{"version", pkg.Version, ann[annVersion]},
		{"name", pkg.Name, ann[annTitle]},
		{"displayName", pkg.DisplayName, ann[annAHDisplay]},
		{"description", pkg.Description, ann[annDescription]},
		{"license", pkg.License, ann[annLicense]},
		{"homeURL", pkg.HomeURL, ann[annURL]},
		{"containersImages", imagesOf(pkg), "policy=" + image},
		{"links", linksOf(pkg), "policy=" + ann[annSource] + "/releases/download/v" + ann[annVersion] + "/policy.wasm, source=" + ann[annSource]},
		{"keywords", strings.Join(pkg.Keywords, ", "), strings.Join(splitList(ann[annAHKeywords]), ", ")},
		{"maintainers", maintainersOf(pkg), ann[annAuthor]},
		{"provider", pkg.Provider.Name, "kubewarden"},
		{"annotations kubewarden/mutation", pkg.Annotations["kubewarden/mutation"], strconv.FormatBool(*md.Mutating)},
		{"annotations kubewarden/resources", pkg.Annotations["kubewarden/resources"], ann[annAHResources]},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("artifacthub-pkg.yml %s = %q, want %q (from metadata.yml)", tc.field, tc.got, tc.want)
			}
		})
	}
}

func imagesOf(pkg artifactHubPkg) string {
	var s []string
	for _, c := range pkg.ContainersImages {
		s = append(s, c.Name+"="+c.Image)
	}
	return strings.Join(s, ", ")
}

func linksOf(pkg artifactHubPkg) string {
	var s []string
	for _, l := range pkg.Links {
		s = append(s, l.Name+"="+l.URL)
	}
	return strings.Join(s, ", ")
}

// maintainersOf writes the maintainers back in the author annotation's "Name <email>, ..." form.
func maintainersOf(pkg artifactHubPkg) string {
	var s []string
	for _, m := range pkg.Maintainers {
		s = append(s, m.Name+" <"+m.Email+">")
	}
	return strings.Join(s, ", ")
}

// The issue asks for these exact values; the table above only checks they match metadata.yml.
func TestArtifactHub_MutationAndResources(t *testing.T) {
	md := loadMetadata(t)
	pkg := loadArtifactHub(t)
	if got := pkg.Annotations["kubewarden/mutation"]; got != "true" {
		t.Errorf("kubewarden/mutation = %q, want \"true\": the policy mutates", got)
	}
	if got, want := pkg.Annotations["kubewarden/resources"], md.Annotations[annAHResources]; got != want {
		t.Errorf("kubewarden/resources = %q, want io.artifacthub.resources %q (what kwctl copies it from)", got, want)
	}
	if got, ok := pkg.Annotations["kubewarden/contextAwareResources"]; ok {
		t.Errorf("kubewarden/contextAwareResources = %q, want none: metadata.yml has no contextAwareResources", got)
	}
}

func TestArtifactHub_RulesAreMetadataRules(t *testing.T) {
	md := loadMetadata(t)
	pkg := loadArtifactHub(t)
	raw, ok := pkg.Annotations["kubewarden/rules"]
	if !ok {
		t.Fatal("artifacthub-pkg.yml has no kubewarden/rules annotation")
	}
	var rules []rule
	decodeStrict(t, "kubewarden/rules", []byte(raw), &rules)
	if diff := cmp.Diff(md.Rules, rules); diff != "" {
		t.Errorf("kubewarden/rules differ from metadata.yml rules (-metadata +artifacthub):\n%s", diff)
	}
}

// kwctl scaffold artifacthub --questions-path questions-ui.yml embeds the file; the copy must not drift.
func TestArtifactHub_QuestionsUIIsQuestionsFile(t *testing.T) {
	pkg := loadArtifactHub(t)
	raw, ok := pkg.Annotations["kubewarden/questions-ui"]
	if !ok {
		t.Fatal("artifacthub-pkg.yml has no kubewarden/questions-ui annotation: Rancher would show no settings form")
	}
	var embedded, file any
	if err := yaml.Unmarshal([]byte(raw), &embedded); err != nil {
		t.Fatalf("kubewarden/questions-ui: %v", err)
	}
	if err := yaml.Unmarshal(readRepoFile(t, "questions-ui.yml"), &file); err != nil {
		t.Fatalf("questions-ui.yml: %v", err)
	}
	if diff := cmp.Diff(file, embedded); diff != "" {
		t.Errorf("kubewarden/questions-ui differs from questions-ui.yml (-file +embedded):\n%s", diff)
	}
}

// kwctl scaffold artifacthub writes its own install text (policy-evaluator's compose_install, read in
// kubewarden/kubewarden-controller at 1.36.0-beta.1) from the image and the version: the file holds exactly
// that text, so that what reviewers read is what Artifact Hub shows.
func TestArtifactHub_InstallIsKwctls(t *testing.T) {
	md := loadMetadata(t)
	image := md.Annotations[annOCIURL] + ":v" + md.Annotations[annVersion]
	want := "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):\n" +
		"```console\nkwctl pull " + image + "\n```\n" +
		"Then, generate the policy manifest and tune it to your liking. For example:\n" +
		"```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://" + image + "\n```\n"
	if diff := cmp.Diff(want, loadArtifactHub(t).Install); diff != "" {
		t.Errorf("install is not the text kwctl scaffold artifacthub writes (-kwctl +file):\n%s", diff)
	}
}

// createdAt is fixed (the file must not change on every regeneration) but must still be an RFC 3339 time.
func TestArtifactHub_CreatedAtIsRFC3339(t *testing.T) {
	pkg := loadArtifactHub(t)
	if _, err := time.Parse(time.RFC3339, pkg.CreatedAt); err != nil {
		t.Errorf("createdAt = %q: %v", pkg.CreatedAt, err)
	}
}
