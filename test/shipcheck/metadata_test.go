package shipcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// wantRules derives metadata.yml's rules from the policy's table of kinds: one rule per API group and set
// of operations, in the table's order, listing the resources (and subresources) that carry the kinds.
// DELETE and CONNECT are accepted unchanged, so the webhook need not see them.
func wantRules() []rule {
	var rules []rule
	for _, k := range policy.Kinds() {
		i := slices.IndexFunc(rules, func(r rule) bool {
			return r.APIGroups[0] == k.Group && slices.Equal(r.Operations, k.Operations)
		})
		if i < 0 {
			rules = append(rules, rule{APIGroups: []string{k.Group}, APIVersions: []string{"v1"}, Operations: k.Operations})
			i = len(rules) - 1
		}
		rules[i].Resources = append(rules[i].Resources, k.Resources...)
	}
	return rules
}

func TestMetadata_RulesAreTheTableOfKinds(t *testing.T) {
	md := loadMetadata(t)
	if diff := cmp.Diff(wantRules(), md.Rules); diff != "" {
		t.Errorf("metadata.yml rules differ from policy.Kinds() (-table +metadata.yml):\n%s", diff)
	}
}

func TestMetadata_Flags(t *testing.T) {
	md := loadMetadata(t)
	tests := []struct {
		key  string
		got  any
		want any
		why  string
	}{
		{"mutating", deref(md.Mutating), true, "the policy stamps the annotation: a patch from a non-mutating policy is a rejection"},
		{"backgroundAudit", deref(md.BackgroundAudit), false, "the decision needs request.userInfo, which audit scans do not have"},
		{"executionMode", md.ExecutionMode, "kubewarden-wapc", "main.go registers waPC functions"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("metadata.yml %s = %v, want %v: %s", tc.key, tc.got, tc.want, tc.why)
			}
		})
	}
}

// testedKubewarden are the Kubewarden versions the suites ran (README "Installation").
var testedKubewarden = []string{"1.36.0-beta.1", "1.36.0"}

// TestMetadata_MinimumKubewardenVersionAdmitsTheTestedVersions checks the minimum as policy-server and kwctl
// do: their own version, prerelease included, against the minimum's major.minor.0.
func TestMetadata_MinimumKubewardenVersionAdmitsTheTestedVersions(t *testing.T) {
	md := loadMetadata(t)
	var major, minor, patch int
	if _, err := fmt.Sscanf(md.MinimumKubewarden, "%d.%d.%d", &major, &minor, &patch); err != nil {
		t.Fatalf("minimumKubewardenVersion %q: %v", md.MinimumKubewarden, err)
	}
	readme := string(readRepoFile(t, "README.md"))
	for _, v := range testedKubewarden {
		var vMajor, vMinor, vPatch int
		if _, err := fmt.Sscanf(v, "%d.%d.%d", &vMajor, &vMinor, &vPatch); err != nil {
			t.Fatal(err)
		}
		pre := strings.Contains(v, "-")
		admitted := vMajor > major || vMajor == major && (vMinor > minor || vMinor == minor && (vPatch > 0 || !pre))
		if !admitted {
			t.Errorf("minimumKubewardenVersion %s refuses the tested %s", md.MinimumKubewarden, v)
		}
		if !strings.Contains(readme, v) {
			t.Errorf("README.md does not name the tested Kubewarden %s", v)
		}
	}
	if major != 1 || minor < 35 {
		t.Errorf("minimumKubewardenVersion %s is below any version tested", md.MinimumKubewarden)
	}
}

// kwctl reads contextAwareResources (the older contextAware boolean is ignored, so it would silently mean
// nothing); the policy reads nothing from the cluster, so the list is there and empty.
func TestMetadata_ContextAwareResourcesIsEmpty(t *testing.T) {
	md := loadMetadata(t)
	if md.ContextAwareResources == nil {
		t.Fatal("metadata.yml has no contextAwareResources: want contextAwareResources: [] (the policy reads nothing from the cluster)")
	}
	if len(*md.ContextAwareResources) != 0 {
		t.Errorf("metadata.yml contextAwareResources = %v, want []: the policy reads nothing from the cluster", *md.ContextAwareResources)
	}
}

// deref shows a missing key as "<missing>" rather than as false.
func deref(b *bool) any {
	if b == nil {
		return "<missing>"
	}
	return *b
}

func TestMetadata_AnnotationsArePresent(t *testing.T) {
	md := loadMetadata(t)
	for _, key := range []string{
		annTitle, annVersion, annDescription, annAuthor, annURL, annSource, annLicense, annOCIURL,
		"io.kubewarden.policy.severity", "io.kubewarden.policy.category",
		annAHDisplay, annAHResources, annAHKeywords,
	} {
		if strings.TrimSpace(md.Annotations[key]) == "" {
			t.Errorf("metadata.yml annotation %s is missing or empty", key)
		}
	}
}

func TestMetadata_AnnotationValues(t *testing.T) {
	ann := loadMetadata(t).Annotations
	tests := []struct {
		key     string
		pattern string
	}{
		// kwctl scaffold artifacthub wants semver; the tag is v<version>; between releases <next>-unreleased.
		{annVersion, `^\d+\.\d+\.\d+(-unreleased)?$`},
		{annLicense, `^Apache-2\.0$`}, // the LICENSE file
		{annOCIURL, `^ghcr\.io/seed-a6d343df/policies/yunikorn-user-info$`},
		{annAuthor, `^[^<>]+ <[^<>@\s]+@[^<>@\s]+>$`}, // "Name <email>": kwctl turns it into Artifact Hub maintainers
		{annURL, `^https://github\.com/seed-a6d343df/yunikorn-user-info-policy$`},
		{annSource, `^https://github\.com/`}, // kwctl only derives the policy.wasm download link for GitHub
		{"io.kubewarden.policy.severity", `^(low|medium|high|critical)$`},
		{annAHKeywords, `^yunikorn, scheduling, quota, impersonation, kubewarden, mutating$`},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if !regexp.MustCompile(tc.pattern).MatchString(ann[tc.key]) {
				t.Errorf("metadata.yml %s = %q, want a match for %s", tc.key, ann[tc.key], tc.pattern)
			}
		})
	}
}

// The contact fields reach Artifact Hub's maintainers list: an address in a domain reserved for examples
// (RFC 2606) is a placeholder nobody reads.
func TestMetadata_AuthorIsNoPlaceholder(t *testing.T) {
	author := loadMetadata(t).Annotations[annAuthor]
	placeholder := regexp.MustCompile(`(?i)@([^>]*\.)?(example|invalid|test|localhost)(\.(com|org|net))?>|placeholder|changeme`)
	if placeholder.MatchString(author) {
		t.Errorf("%s = %q: a placeholder, want the project's real contact", annAuthor, author)
	}
	if !strings.HasPrefix(author, "yunikorn-user-info-policy ") {
		t.Errorf("%s = %q: want the project's own name first", annAuthor, author)
	}
}

// io.artifacthub.resources (Artifact Hub's, which kwctl scaffold artifacthub copies into kubewarden/resources)
// names exactly the kinds of the table. Kubewarden reads no io.kubewarden.policy.resources:
// a value there would be checked by nothing but this test, so the key is not used.
func TestMetadata_ResourcesAnnotationNamesTheKindsOfTheTable(t *testing.T) {
	md := loadMetadata(t)
	var kinds []string
	for _, k := range policy.Kinds() {
		kinds = append(kinds, k.Kind)
	}
	if diff := cmp.Diff(kinds, splitList(md.Annotations[annAHResources])); diff != "" {
		t.Errorf("%s = %q does not list the table's kinds in order (-table +annotation):\n%s", annAHResources, md.Annotations[annAHResources], diff)
	}
	if v, ok := md.Annotations["io.kubewarden.policy.resources"]; ok {
		t.Errorf("metadata.yml has io.kubewarden.policy.resources (%q), a key Kubewarden does not read: io.artifacthub.resources is the one", v)
	}
}
