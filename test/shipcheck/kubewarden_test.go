package shipcheck

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Statements the docs make about Kubewarden, checked against its current source (the kwctl, policy-server
// and controller code in the kubewarden/kubewarden-controller repository, policy-server 1.36.0-beta.1).

// verificationSettings mirrors kwctl's VerificationSettings (crates/policy-fetcher src/verify/config.rs):
// serde with deny_unknown_fields everywhere, signatures tagged by `kind`, a subject that is exactly one of
// `equal` and `urlPrefix`.
type verificationSettings struct {
	APIVersion string              `yaml:"apiVersion"`
	AllOf      []verificationEntry `yaml:"allOf"`
	AnyOf      *struct {
		MinimumMatches *int                `yaml:"minimumMatches"`
		Signatures     []verificationEntry `yaml:"signatures"`
	} `yaml:"anyOf"`
}

type verificationEntry struct {
	Kind        string            `yaml:"kind"`
	Owner       string            `yaml:"owner"`
	Repo        string            `yaml:"repo"`
	Key         string            `yaml:"key"`
	Issuer      string            `yaml:"issuer"`
	Subject     *subjectMatch     `yaml:"subject"`
	Annotations map[string]string `yaml:"annotations"`
}

type subjectMatch struct {
	Equal     *string `yaml:"equal"`
	URLPrefix *string `yaml:"urlPrefix"`
}

// readVerificationConfig decodes a verification config as kwctl does, and refuses what kwctl refuses.
func readVerificationConfig(t *testing.T, what string, data []byte) verificationSettings {
	t.Helper()
	var vs verificationSettings
	decodeStrict(t, what, data, &vs)
	if vs.APIVersion != "v1" {
		t.Fatalf("%s: apiVersion %q, want v1", what, vs.APIVersion)
	}
	if len(vs.AllOf) == 0 && vs.AnyOf == nil {
		t.Fatalf("%s: no signatures in allOf nor anyOf (kwctl refuses it)", what)
	}
	for _, e := range vs.AllOf {
		switch e.Kind {
		case "genericIssuer":
			if e.Issuer == "" || e.Subject == nil || (e.Subject.Equal == nil) == (e.Subject.URLPrefix == nil) {
				t.Fatalf("%s: a genericIssuer needs an issuer and a subject of exactly one of equal, urlPrefix", what)
			}
			if e.Owner != "" || e.Repo != "" || e.Key != "" {
				t.Fatalf("%s: a genericIssuer takes no owner, repo or key (kwctl refuses unknown fields)", what)
			}
			if e.Subject.URLPrefix != nil {
				if _, err := url.Parse(*e.Subject.URLPrefix); err != nil {
					t.Fatalf("%s: urlPrefix is not a URL: %v", what, err)
				}
			}
		case "githubAction", "pubKey":
		default:
			t.Fatalf("%s: unknown kind %q", what, e.Kind)
		}
	}
	return vs
}

// subjectMatches is kwctl's check of a certificate subject against a genericIssuer's subject: urlPrefix is
// first given a trailing slash (so that .../kubewarden does not match .../kubewarden-malicious).
func subjectMatches(m subjectMatch, subject string) bool {
	if m.Equal != nil {
		return subject == *m.Equal
	}
	prefix := *m.URLPrefix
	if u, err := url.Parse(prefix); err == nil && !strings.HasSuffix(u.Path, "/") {
		prefix += "/"
	}
	return strings.HasPrefix(subject, prefix)
}

// The verification config docs/operations.md shows is docs/verification-config.yml (which the release checks the module
// it has just signed with), kwctl can read it, and it accepts what the release workflow signs for a tag and
// nothing another workflow or a branch of the repository could sign. A `githubAction` constraint would
// accept all of those.
func TestDocs_VerificationConfigPinsTheReleaseWorkflowOnATag(t *testing.T) {
	file := readRepoFile(t, "docs/verification-config.yml")
	var body []string
	for _, line := range strings.Split(strings.TrimSpace(string(file)), "\n") {
		if len(body) == 0 && strings.HasPrefix(line, "#") {
			continue
		}
		body = append(body, line)
	}
	block := "```yaml\n# docs/verification-config.yml\n" + strings.Join(body, "\n") + "\n```"
	if !strings.Contains(string(readRepoFile(t, "docs/operations.md")), block) {
		t.Errorf("docs/operations.md does not show docs/verification-config.yml as a yaml block:\n%s", block)
	}
	vs := readVerificationConfig(t, "docs/verification-config.yml", file)
	if len(vs.AllOf) != 1 || vs.AnyOf != nil {
		t.Fatalf("want exactly one allOf constraint, got %+v", vs)
	}
	c := vs.AllOf[0]
	if c.Kind != "genericIssuer" || c.Issuer != "https://token.actions.githubusercontent.com" {
		t.Fatalf("want a genericIssuer for GitHub's OIDC issuer, got kind %q issuer %q", c.Kind, c.Issuer)
	}
	repo := loadMetadata(t).Annotations[annSource]
	signed := repo + "/.github/workflows/release.yml@refs/tags/v" + loadMetadata(t).Annotations[annVersion]
	if release := loadWorkflow(t, "release.yml"); nodeString(release.On) != "push: tags: v*" {
		t.Fatalf("release.yml no longer runs on v* tags: the subject %s would never be signed", signed)
	}
	tests := []struct {
		subject string
		want    bool
	}{
		{signed, true},
		{repo + "/.github/workflows/release.yml@refs/heads/main", false},
		{repo + "/.github/workflows/ci.yml@refs/tags/v0.1.0", false},
		{repo + "-fork/.github/workflows/release.yml@refs/tags/v0.1.0", false},
		{strings.Replace(repo, "github.com/", "github.com/x", 1) + "/.github/workflows/release.yml@refs/tags/v0.1.0", false},
	}
	for _, tc := range tests {
		if got := subjectMatches(*c.Subject, tc.subject); got != tc.want {
			t.Errorf("certificate subject %s: accepted = %v, want %v", tc.subject, got, tc.want)
		}
	}
}

// A verification config kwctl would refuse, or one that pins less than it claims, fails the checks above.
func TestDocs_VerificationConfigCheckRefusesWhatKwctlRefuses(t *testing.T) {
	for name, cfg := range map[string]string{
		"a flattened subject (kwctl's old format)": "apiVersion: v1\nallOf:\n  - kind: genericIssuer\n    issuer: https://token.actions.githubusercontent.com\n    subjectUrlPrefix: https://github.com/o/r/\n",
		"both equal and urlPrefix":                 "apiVersion: v1\nallOf:\n  - kind: genericIssuer\n    issuer: i\n    subject:\n      equal: a\n      urlPrefix: https://b/\n",
	} {
		var vs verificationSettings
		dec := yaml.NewDecoder(bytes.NewReader([]byte(cfg)))
		dec.KnownFields(true)
		err := dec.Decode(&vs)
		if err == nil && len(vs.AllOf) == 1 && vs.AllOf[0].Subject != nil &&
			(vs.AllOf[0].Subject.Equal == nil) != (vs.AllOf[0].Subject.URLPrefix == nil) {
			t.Errorf("%s: accepted", name)
		}
	}
	prefix := "https://github.com/o/r"
	if subjectMatches(subjectMatch{URLPrefix: &prefix}, "https://github.com/o/r-evil/x") {
		t.Error("urlPrefix without a trailing slash matched another repository: kwctl appends one")
	}
}

// docStatement is a statement a document must make, or must no longer make, about Kubewarden.
type docStatement struct {
	file, section string
	want, never   []string
}

// section returns the text of a Markdown section (from its heading to the next heading of any level,
// outside code blocks), or the whole file when heading is "".
func section(t *testing.T, file, heading string) string {
	t.Helper()
	text := string(readRepoFile(t, file))
	if heading == "" {
		return text
	}
	var out []string
	in, fenced := false, false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") && regexp.MustCompile(`^#+ `).MatchString(line) {
			if in {
				break
			}
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == heading
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	if !in {
		t.Fatalf("%s has no section %q", file, heading)
	}
	return strings.Join(out, "\n")
}

func TestDocs_StatementsAboutKubewardenHold(t *testing.T) {
	statements := []docStatement{
		// A guest panic or error is a denial with code 500 inside an HTTP 200: failurePolicy never applies.
		{file: "docs/rules.md", section: "Bad input",
			want: []string{"code 500", "inside an HTTP 200", "`failurePolicy` never"}, never: []string{"into an HTTP 500"}},
		// Old and new ReplicaSets mount the same ConfigMap: a restarted old pod crash-loops on bad settings.
		{file: "docs/operations.md", section: "A settings typo on a shared PolicyServer",
			want:  []string{"only until an old pod restarts", "same ConfigMap", "crash-loops", "spec.minAvailable"},
			never: []string{"Nothing is left unprotected"}},
		// spec.policyServer is immutable; the PolicyServer's image is copied from the default one.
		{file: "docs/operations.md", section: "A dedicated PolicyServer", want: []string{"immutable", "under another name"}},
		{file: "docs/operations.md", section: "Verifying the signature",
			want:  []string{"kubectl get policyserver default -o jsonpath='{.spec.image}'", "minAvailable: 1"},
			never: []string{"ghcr.io/kubewarden/policy-server:", "ghcr.io/kubewarden/adm-controller/policy-server:"}},
		// The emergency delete blocks on the finalizer while the controller is down.
		{file: "docs/operations.md", section: "Emergency disable", want: []string{"--wait=false", "finalizer"}},
		{file: "docs/reliability.md", section: "What an operator should set",
			want: []string{"spec.timeoutEvalSeconds", "matchExpressions", "drops its `matchLabels`", "minAvailable: 1"}},
		{file: "README.md", section: "Limitations", want: []string{"2 MB", "`oldObject`", "warnings still reach the user"}},
		// bench/wasmtime approximates policy-server; the README says how.
		{file: "docs/performance.md", section: "On wasmtime, and over the requester's groups",
			want: []string{"approximation", "wasmtime-go\nv" + wasmtimeGoMajor(t), "`InstancePre`"}},
		// The versions the runtime notes were checked against.
		{file: "docs/runtime.md",
			want: []string{"policy-server 1.36.0-beta.1", "policy-evaluator 0.32.0", "wapc 2.1.0", "wasmtime 44.0.1",
				"`InstancePre`", "`spec.timeoutEvalSeconds`", "`oldObject`", "keeps the policy's `warnings`", "`Cannot log event`"}},
		// policy-server grants what the policy resource lists, not what metadata.yml lists.
		{file: "metadata.yml", want: []string{"spec.contextAwareResources"}, never: []string{"grant a policy read access only to the kinds listed here"}},
		// kwctl writes its own artifacthub-pkg.yml at release.
		{file: "artifacthub-pkg.yml", want: []string{"NOT what the release publishes", "kwctl scaffold artifacthub"},
			never: []string{"preview of what the release will publish"}},
	}
	for _, s := range statements {
		text := section(t, s.file, s.section)
		for _, w := range s.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %q does not say %q", s.file, s.section, w)
			}
		}
		for _, n := range s.never {
			if strings.Contains(text, n) {
				t.Errorf("%s %q still says %q", s.file, s.section, n)
			}
		}
	}
}

// wasmtimeGoMajor is the major version of wasmtime-go bench/wasmtime builds with.
func wasmtimeGoMajor(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`github\.com/bytecodealliance/wasmtime-go/v(\d+) `).FindSubmatch(readRepoFile(t, "bench/wasmtime/go.mod"))
	if m == nil {
		t.Fatal("bench/wasmtime/go.mod requires no github.com/bytecodealliance/wasmtime-go/vN")
	}
	return string(m[1])
}

// policy-server's message for a log entry it refuses is "Cannot log event", capital C: what users grep for.
func TestDocs_RefusedLogEntryMessageIsPolicyServers(t *testing.T) {
	for name, text := range repoTextFiles(t) {
		if strings.HasPrefix(name, "test/shipcheck/") {
			continue
		}
		if strings.Contains(text, "cannot log event") {
			t.Errorf("%s says %q: policy-server logs %q", name, "cannot log event", "Cannot log event")
		}
	}
}
