package shipcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

// docBlock is a fenced code block of a Markdown document.
type docBlock struct {
	file string
	line int // of the opening fence
	lang string
	text string
}

var fence = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_+-]*)")

// docBlocks returns the fenced blocks of a Markdown text, with their indentation removed.
func docBlocks(file, text string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	var indent string
	for i, line := range strings.Split(text, "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &docBlock{file: file, line: i + 1, lang: strings.ToLower(m[1])}
			indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		case cur != nil && m != nil && m[1] == "":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	return blocks
}

// checkDocBlock parses a yaml or json block and hands every settings object it holds (a top-level
// `settings:` or a policy's `spec.settings`) to validate_settings, as policy-server would. It returns the
// problems found.
func checkDocBlock(b docBlock) []string {
	var docs []any
	var err error
	switch b.lang {
	case "yaml", "yml":
		if docs, err = decodeAll(yaml.NewDecoder(strings.NewReader(b.text))); err != nil {
			return []string{"not valid YAML: " + err.Error()}
		}
	case "json":
		if docs, err = decodeAll(json.NewDecoder(strings.NewReader(b.text))); err != nil {
			return []string{"not valid JSON: " + err.Error()}
		}
	default:
		return nil
	}
	var problems []string
	for _, doc := range docs {
		for _, settings := range settingsIn(doc) {
			data, err := json.Marshal(settings)
			if err != nil {
				problems = append(problems, "settings cannot be written as JSON: "+err.Error())
				continue
			}
			if p := validateSettings(data); p != "" {
				problems = append(problems, p)
			}
		}
	}
	return problems
}

// validateSettings hands settings (JSON) to validate_settings and returns its refusal, if any.
func validateSettings(data []byte) string {
	var answer struct {
		Valid   bool   `json:"valid"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(policy.ValidateSettings(data), &answer); err != nil {
		return "validate_settings answered no JSON: " + err.Error()
	}
	if !answer.Valid {
		return fmt.Sprintf("validate_settings refuses %s: %s", data, answer.Message)
	}
	return ""
}

// settingsJSON matches the settings a command line gives kwctl or the project's host.
var settingsJSON = regexp.MustCompile(`--settings-json '([^']*)'`)

// settingsIn returns the policy settings a parsed block holds: the value of a top-level `settings` key, or
// the spec.settings of a ClusterAdmissionPolicy or AdmissionPolicy.
func settingsIn(doc any) []any {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	if s, ok := m["settings"]; ok {
		return []any{orEmpty(s)}
	}
	if kind, _ := m["kind"].(string); strings.HasSuffix(kind, "AdmissionPolicy") {
		if spec, ok := m["spec"].(map[string]any); ok {
			if s, ok := spec["settings"]; ok {
				return []any{orEmpty(s)}
			}
		}
	}
	return nil
}

// orEmpty reads an empty `settings:` as policy-server does: no settings, an empty object.
func orEmpty(s any) any {
	if s == nil {
		return map[string]any{}
	}
	return s
}

// Every YAML and JSON block of the README and docs/ parses, and every settings block in them, and every
// `--settings-json` of their commands, passes validate_settings: a reader copies them as they are.
func TestDocs_YAMLAndJSONBlocksParseAndSettingsAreValid(t *testing.T) {
	files := []string{"README.md"}
	docs, err := filepath.Glob(repoPath("docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	var checked, settings int
	for _, name := range files {
		for _, b := range docBlocks(name, string(readRepoFile(t, name))) {
			for _, m := range settingsJSON.FindAllStringSubmatch(b.text, -1) {
				settings++
				if p := validateSettings([]byte(m[1])); p != "" {
					t.Errorf("%s:%d, a command's --settings-json: %s", b.file, b.line, p)
				}
			}
			if b.lang != "yaml" && b.lang != "yml" && b.lang != "json" {
				continue
			}
			checked++
			if strings.Contains(b.text, "settings") {
				settings++
			}
			for _, p := range checkDocBlock(b) {
				t.Errorf("%s:%d, a %s block: %s", b.file, b.line, b.lang, p)
			}
		}
	}
	if checked == 0 || settings == 0 {
		t.Errorf("%d blocks, %d with settings: the test reads the wrong files", checked, settings)
	}
}

// The check catches what it is for: a flow list with an unquoted [*] (YAML reads * as an alias), JSON with a
// trailing comma, and settings the policy refuses.
func TestDocs_BlockCheckRefusesBrokenBlocks(t *testing.T) {
	tests := []struct {
		name, lang, text, want string
	}{
		{"unquoted [*] in a flow list", "yaml", "settings:\n  customWorkloads:\n    - apiGroup: ray.io\n      kind: RayCluster\n      annotationPaths: [spec.workerGroupSpecs[*].template>metadata.annotations]\n", "not valid YAML"},
		{"trailing comma", "json", `{"systemUsers": ["^a$",]}`, "not valid JSON"},
		{"unknown key", "yaml", "settings:\n  bypassauth: true\n", `unknown key "bypassauth"`},
		{"a policy's settings", "yaml", "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nspec:\n  settings:\n    onUntrustedAnnotation: ignore\n", "not a valid mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			problems := checkDocBlock(docBlock{file: "test", lang: tc.lang, text: tc.text})
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("problems %q, want one naming %q", problems, tc.want)
			}
		})
	}
	if p := checkDocBlock(docBlock{lang: "yaml", text: "settings:\n  customWorkloads:\n    - apiGroup: ray.io\n      kind: RayCluster\n      annotationPaths: [\"spec.workerGroupSpecs[*].template>metadata.annotations\"]\n"}); len(p) > 0 {
		t.Errorf("the quoted form is refused: %q", p)
	}
}

// decodeAll reads every document of a YAML or JSON stream.
func decodeAll(dec interface{ Decode(any) error }) ([]any, error) {
	var docs []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}
