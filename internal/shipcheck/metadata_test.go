package shipcheck

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantRules are the kinds docs/rules.md "Words" (target metadata) lists, with the operations the policy decides
// on: CREATE and UPDATE. DELETE and CONNECT are accepted unchanged, so the webhook need not see them.
var wantRules = []rule{
	{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/status", "replicationcontrollers"}, Operations: []string{"CREATE", "UPDATE"}},
	{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "replicasets", "statefulsets", "daemonsets"}, Operations: []string{"CREATE", "UPDATE"}},
	{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs", "cronjobs"}, Operations: []string{"CREATE", "UPDATE"}},
}

func TestMetadata_RulesCoverEveryKindOfTheSpec(t *testing.T) {
	md := loadMetadata(t)
	if diff := cmp.Diff(wantRules, md.Rules); diff != "" {
		t.Errorf("metadata.yml rules (-want +got):\n%s", diff)
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
		annTitle, annVersion, annDescription, annAuthor, annURL, annSource, annLicense, annOCIURL, annResources,
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
		{annVersion, `^\d+\.\d+\.\d+$`}, // kwctl scaffold artifacthub wants semver; the tag is v<version>
		{annLicense, `^Apache-2\.0$`},   // the LICENSE file
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

// The resources annotations (shown by Artifact Hub and Rancher) must name exactly the kinds of the rules.
func TestMetadata_ResourcesAnnotationsNameTheKindsOfTheRules(t *testing.T) {
	md := loadMetadata(t)
	var ruleResources []string
	for _, r := range md.Rules {
		for _, resource := range r.Resources {
			if !strings.Contains(resource, "/") { // a subresource (pods/status) is no kind of its own
				ruleResources = append(ruleResources, resource)
			}
		}
	}
	for _, key := range []string{annResources, annAHResources} {
		t.Run(key, func(t *testing.T) {
			var fromKinds []string
			for _, kind := range splitList(md.Annotations[key]) {
				fromKinds = append(fromKinds, strings.ToLower(kind)+"s") // true for all eight kinds: Pod -> pods
			}
			if diff := cmp.Diff(ruleResources, fromKinds); diff != "" {
				t.Errorf("%s = %q does not list the rules' resources in order (-rules +annotation):\n%s",
					key, md.Annotations[key], diff)
			}
		})
	}
}
