package shipcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Go comments are read like the docs: statements found wrong once must not come back.
var staleComments = []struct{ text, why string }{
	{"into an HTTP 500", "a guest error or trap is a rejection with code 500 inside an HTTP 200 (docs/rules.md \"Bad input\")"},
	{"answers with HTTP 500", "a guest error or trap is a rejection with code 500 inside an HTTP 200"},
	{"turns a Go error into an HTTP 500", "a guest error is a rejection with code 500 inside an HTTP 200"},
	{`README "Performance"`, "the figures moved to docs/performance.md"},
	{"keysOf", "gone"},
	{"All of the module's unsafe code", "wapcguest has unsafe code too"},
	{"The payload is only read", "ValidateOver writes the answer over it"},
	{"cref is one target of a declared kind", "a cref serves every kind"},
}

var commentLine = regexp.MustCompile(`^\s*//\s?(.*)$`)

func TestComments_NoStaleStatement(t *testing.T) {
	root := repoPath(".")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".tools" || d.Name() == "build" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var comments []string // the file's comment lines, joined so that a statement may span lines
		for _, line := range strings.Split(string(data), "\n") {
			if m := commentLine.FindStringSubmatch(line); m != nil {
				comments = append(comments, m[1])
			}
		}
		text := strings.Join(comments, " ")
		for _, s := range staleComments {
			if strings.Contains(text, s.text) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: a comment says %q: %s", rel, s.text, s.why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
