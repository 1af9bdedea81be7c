package shipcheck

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The repository must stand on its own: what it cites is inside it. These tests read every text file of the
// checkout (not .git, .tools, build outputs or node_modules).

// repoTextFiles returns the repository's text files by slash path from the root.
func repoTextFiles(t *testing.T) map[string]string {
	t.Helper()
	root := repoPath(".")
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", ".tools", "build", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(rel, ".wasm") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return nil // binary
		}
		files[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// outsideReference matches what points outside the repository: the private design notes the project was
// started from, and the directory they were kept in. Built from parts so that this file does not match.
var outsideReference = regexp.MustCompile(strings.Join([]string{
	`\b(SPEC|NOTES|STYLE)` + `\.md\b`,
	`\.\./` + `shared\b`,
	`/work/` + `shared\b`,
	`\bSPEC` + ` rule`,
	`user-group-` + `design\.md`,
}, "|"))

func TestReferences_NothingOutsideTheRepository(t *testing.T) {
	for name, text := range repoTextFiles(t) {
		for i, line := range strings.Split(text, "\n") {
			if m := outsideReference.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, which is not in the repository: cite docs/rules.md (the rules, settings, value "+
					"format, bad input), docs/runtime.md (how Kubewarden runs the policy) or docs/development.md", name, i+1, m)
			}
		}
	}
}

// markdownDoc is a Markdown file with its fenced code blocks blanked out (links and headings inside code are
// examples, not links).
func markdownDoc(text string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, "")
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

var headingLine = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)

// anchors returns the GitHub anchors of a Markdown document's headings.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	result := map[string]bool{}
	for _, m := range headingLine.FindAllStringSubmatch(markdownDoc(text), -1) {
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			result[slug+"-"+strconv.Itoa(n)] = true
		} else {
			result[slug] = true
		}
		seen[slug]++
	}
	return result
}

// slugify is GitHub's heading anchor: lower case, spaces to hyphens, punctuation other than - and _ dropped.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headings returns a Markdown document's heading texts, lower case.
func headings(text string) map[string]bool {
	result := map[string]bool{}
	for _, m := range headingLine.FindAllStringSubmatch(markdownDoc(text), -1) {
		h := strings.ToLower(strings.ReplaceAll(m[1], "`", ""))
		result[h] = true
		if _, rest, ok := strings.Cut(h, ": "); ok && strings.HasPrefix(h, "rule ") {
			result[rest] = true
		}
	}
	return result
}

var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// repoURL is the repository's own address: the README links the files it names there, since Artifact Hub
// and `kwctl inspect` show the README without the repository around it.
const repoURL = "https://github.com/seed-a6d343df/yunikorn-user-info-policy/"

// Every relative link of every Markdown file, and every link to a file of this repository's main branch,
// leads to a file of the repository, and its #anchor (if any) to a heading of that file.
func TestReferences_MarkdownLinksResolve(t *testing.T) {
	files := repoTextFiles(t)
	for name, text := range files {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(markdownDoc(text), -1) {
			target := m[1]
			inRepo := false
			for _, prefix := range []string{repoURL + "blob/main/", repoURL + "tree/main/"} {
				if rest, ok := strings.CutPrefix(target, prefix); ok {
					target, inRepo = "/"+rest, true
				}
			}
			if !inRepo && (strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:")) {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := name
			if strings.HasPrefix(file, "/") {
				resolved = path.Clean(strings.TrimPrefix(file, "/"))
			} else if file != "" {
				resolved = path.Clean(path.Join(path.Dir(name), file))
			}
			if file != "" {
				if strings.HasPrefix(resolved, "../") {
					t.Errorf("%s links to %s, outside the repository", name, target)
					continue
				}
				if _, err := os.Stat(repoPath(resolved)); err != nil {
					t.Errorf("%s links to %s: %s does not exist", name, target, resolved)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchors(files[resolved])[anchor] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", name, target, resolved, anchor)
			}
		}
	}
}

// The README is also read on Artifact Hub and in `kwctl inspect`, where a relative link leads nowhere: it
// links the repository's files by their address (repoURL), and its own sections by their anchor.
func TestReferences_ReadmeLinksAreAbsolute(t *testing.T) {
	for _, m := range markdownLink.FindAllStringSubmatch(markdownDoc(string(readRepoFile(t, "README.md"))), -1) {
		target := m[1]
		if !strings.HasPrefix(target, "#") && !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:") {
			t.Errorf("README.md links to %s: link %s%s instead", target, repoURL+"blob/main/", target)
		}
	}
}

// repoDirs are the top-level directories of the repository: a path in a document that starts with one of
// them names a file of the repository.
var repoDirs = []string{".ci", ".github", "bench", "cmd", "docs", "examples", "hack", "internal", "policy", "test", "testdata"}

var codeSpan = regexp.MustCompile("`([^`\\s]+)`")

// Every file path a document shows in code (`docs/rules.md`, `hack/install-tinygo.sh`, `examples/*.yaml`)
// exists, so that a reader who looks for it finds it.
func TestReferences_PathsInDocsExist(t *testing.T) {
	for name, text := range repoTextFiles(t) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(markdownDoc(text), -1) {
			p := strings.TrimSuffix(strings.TrimRight(m[1], ".,:;"), "/")
			first, _, hasSlash := strings.Cut(p, "/")
			isRepoPath := hasSlash && contains(repoDirs, first)
			isRootDoc := !hasSlash && regexp.MustCompile(`^[A-Z][A-Z_-]*\.md$`).MatchString(p)
			if !isRepoPath && !isRootDoc || strings.ContainsAny(p, "<>$={}") {
				continue
			}
			matches, err := filepath.Glob(repoPath(p))
			if err != nil || len(matches) == 0 {
				t.Errorf("%s mentions `%s`, which the repository does not contain", name, m[1])
			}
		}
	}
}

var docSection = regexp.MustCompile(`(docs/[A-Za-z0-9_-]+\.md)"?:? \\?"([^"\\]+)\\?"`)

// A citation of a section (`docs/rules.md "Value format"`, in a comment, a test or a document) names a
// heading of that document.
func TestReferences_CitedSectionsExist(t *testing.T) {
	files := repoTextFiles(t)
	for name, text := range files {
		for _, m := range docSection.FindAllStringSubmatch(text, -1) {
			doc, section := m[1], strings.ToLower(m[2])
			target, ok := files[doc]
			if !ok {
				t.Errorf("%s cites %s, which does not exist", name, doc)
				continue
			}
			if !headings(target)[section] {
				t.Errorf("%s cites %s %q: no such heading there", name, doc, m[2])
			}
		}
	}
}

// ruleCitation matches "rule 5", "rules 6-9", "rules 6 to 8", "rules 2, 5 and 9", "Rules 11 to 13".
var ruleCitation = regexp.MustCompile(`(?i)\brules? (\d+)((?:\s*(?:-|–|,|and|or|to)\s*\d+)*)`)

// Every rule cited in code, tests, bats files, log messages, metadata and documents is a rule of
// docs/rules.md (a "### Rule N: ..." heading), so that "rule 5" in a log line leads somewhere.
func TestReferences_CitedRulesAreRulesOfTheDocs(t *testing.T) {
	files := repoTextFiles(t)
	rules := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} Rule (\d+): `).FindAllStringSubmatch(files["docs/rules.md"], -1) {
		n, _ := strconv.Atoi(m[1])
		rules[n] = true
	}
	if len(rules) < 10 {
		t.Fatalf("docs/rules.md has %d rule headings (### Rule N: ...), want the ten decision rules at least", len(rules))
	}
	var cited int
	for name, text := range files {
		for i, line := range strings.Split(text, "\n") {
			for _, m := range ruleCitation.FindAllStringSubmatch(line, -1) {
				for _, n := range citedNumbers(m[1], m[2]) {
					cited++
					if !rules[n] {
						t.Errorf("%s:%d cites rule %d, which docs/rules.md does not have (%q)", name, i+1, n, m[0])
					}
				}
			}
		}
	}
	if cited == 0 {
		t.Error("no rule citation found: the test reads the wrong files")
	}
}

// citedNumbers expands "6", "-9" into 6..9 and "2", ", 5 and 9" into 2, 5, 9.
func citedNumbers(first, rest string) []int {
	n, _ := strconv.Atoi(first)
	numbers := []int{n}
	for _, m := range regexp.MustCompile(`(-|–|to|,|and|or)\s*(\d+)`).FindAllStringSubmatch(rest, -1) {
		next, _ := strconv.Atoi(m[2])
		if m[1] == "-" || m[1] == "–" || m[1] == "to" {
			for k := numbers[len(numbers)-1] + 1; k < next; k++ {
				numbers = append(numbers, k)
			}
		}
		numbers = append(numbers, next)
	}
	return numbers
}
