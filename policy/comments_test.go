package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Comments say what a caller or the next maintainer needs, in a sentence or two; runtime explanations
// live in docs/runtime.md (docs/development.md "Architecture").
const (
	maxCommentRatio    = 0.35 // comment characters per code character, package policy
	maxDocCommentWords = 60
)

// shippedSources are the directories (relative to this package) and files whose comments are held to
// the limits, non-test files only.
var shippedSources = []string{".", "internal/rawjson", "../wapcguest", "../main.go"}

// goSources lists the non-test .go files of dir, or dir itself when it is a file.
func goSources(t *testing.T, dir string) []string {
	t.Helper()
	if strings.HasSuffix(dir, ".go") {
		return []string{dir}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

// isDirective reports a comment line that speaks to the tools, not to the reader (//go:noinline).
func isDirective(trimmed string) bool {
	for _, p := range []string{"//go:", "//export ", "//nolint", "//line "} {
		if strings.HasPrefix(trimmed, p) {
			return true
		}
	}
	return false
}

// commentRatio is the characters of the comment lines of files per character of their other non-blank
// lines.
func commentRatio(t *testing.T, files []string) float64 {
	t.Helper()
	comment, code := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case trimmed == "":
			case strings.HasPrefix(trimmed, "//") && !isDirective(trimmed):
				comment += len(line)
			default:
				code += len(line)
			}
		}
	}
	return float64(comment) / float64(code)
}

// longestDocComment returns the longest doc comment of files, in words, and where it is.
func longestDocComment(t *testing.T, files []string) (words int, where string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		var docs []*ast.CommentGroup
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.File:
				docs = append(docs, n.Doc)
			case *ast.FuncDecl:
				docs = append(docs, n.Doc)
			case *ast.GenDecl:
				docs = append(docs, n.Doc)
			case *ast.TypeSpec:
				docs = append(docs, n.Doc)
			case *ast.ValueSpec:
				docs = append(docs, n.Doc)
			case *ast.Field:
				docs = append(docs, n.Doc)
			}
			return true
		})
		for _, doc := range docs {
			if doc == nil {
				continue
			}
			if n := len(strings.Fields(doc.Text())); n > words {
				words, where = n, fset.Position(doc.Pos()).String()
			}
		}
	}
	return words, where
}

func TestComments_ShortAndFew(t *testing.T) {
	for _, dir := range shippedSources {
		files := goSources(t, dir)
		ratio := commentRatio(t, files)
		words, where := longestDocComment(t, files)
		t.Logf("%s: %.2f comment characters per code character; longest doc comment %d words (%s)", dir, ratio, words, where)
		if dir == "." && ratio > maxCommentRatio {
			t.Errorf("package policy has %.2f comment characters per code character, over %.2f: say less, or move "+
				"the explanation to docs/runtime.md", ratio, maxCommentRatio)
		}
		if words > maxDocCommentWords {
			t.Errorf("%s: a doc comment of %d words, over %d: say what the caller needs in a sentence or two",
				where, words, maxDocCommentWords)
		}
	}
}
