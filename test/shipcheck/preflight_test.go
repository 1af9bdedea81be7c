package shipcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// fencedBlock returns the first fenced block of language lang in text, without its fences.
func fencedBlock(t *testing.T, text, lang string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)\n```").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no ```%s block in:\n%s", lang, text)
	}
	return m[1]
}

// The README's pre-flight command runs as written in a clone where `make policy.wasm preflight` ran: kubectl (a
// stand-in that prints what the cluster suite's adoption scenario recorded, plus a Deployment in each namespace
// examples/default.yaml's namespaceSelector leaves out, when asked for every kind the check reads) piped into
// the command built from cmd/yunikorn-user-info-preflight where the Makefile puts it, with the policy module as
// policy.wasm. What it prints is the README's example (see matchExample), and nothing of the left-out
// namespaces.
func TestReadme_PreflightCommandPrintsTheExample(t *testing.T) {
	readme := section(t, "README.md", "Pre-flight check")
	command, example := fencedBlock(t, readme, "sh"), fencedBlock(t, readme, "text")

	bin, work := t.TempDir(), t.TempDir()
	if got := makefileVar(t, "Makefile", "BUILD"); got != "$(CURDIR)/build" {
		t.Fatalf("Makefile: BUILD := %s, but the README's command runs build/...", got)
	}
	preflight := strings.TrimPrefix(makefileVar(t, "Makefile", "PREFLIGHT"), "$(BUILD)/")
	if err := os.MkdirAll(filepath.Join(work, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(work, "build", preflight), "./cmd/yunikorn-user-info-preflight")
	build.Dir = repoPath(".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	objects, excluded := objectsWithExcludedNamespaces(t, work)
	writeFile(t, bin, "kubectl", `#!/bin/sh
[ "$1" = get ] && [ "$3 $4 $5 $6" = "-A -o json " ] || { echo "kubectl $*: not a List of the whole cluster as JSON" >&2; exit 1; }
for kind in pods deployments replicasets statefulsets daemonsets jobs cronjobs replicationcontrollers configmaps; do
  case ",$2," in *",$kind,"*) ;; *) echo "kubectl $*: $kind missing" >&2; exit 1 ;; esac
done
exec cat '`+objects+`'
`)
	if err := os.Chmod(filepath.Join(bin, "kubectl"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, work, "policy.wasm", string(guesttest.Policy(t)))

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", command)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stderr = &strings.Builder{}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the README's command: %v\n%s", err, cmd.Stderr)
	}
	if err := matchExample(example, string(out)); err != nil {
		t.Errorf("the README's example output: %v\nthe command printed:\n%s", err, out)
	}
	for _, ns := range excluded {
		if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ns) + `\s`).Match(out) {
			t.Errorf("the README's command reports objects of namespace %s, which examples/default.yaml's "+
				"namespaceSelector leaves out:\n%s", ns, out)
		}
	}
}

// objectsWithExcludedNamespaces writes into dir the adoption scenario's objects plus a Deployment in each
// namespace examples/default.yaml's namespaceSelector leaves out, and returns the file and those namespaces.
func objectsWithExcludedNamespaces(t *testing.T, dir string) (string, []string) {
	t.Helper()
	var list map[string]any
	if err := json.Unmarshal(readRepoFile(t, "internal/preflight/testdata/adoption-objects.json"), &list); err != nil {
		t.Fatal(err)
	}
	var p clusterAdmissionPolicy
	decodeStrict(t, "examples/default.yaml", readRepoFile(t, "examples/default.yaml"), &p)
	var excluded []string
	for _, e := range p.Spec.NamespaceSelector.MatchExpressions {
		if e.Key == "kubernetes.io/metadata.name" && e.Operator == "NotIn" {
			excluded = append(excluded, e.Values...)
		}
	}
	if len(excluded) == 0 {
		t.Fatal("examples/default.yaml's namespaceSelector leaves no namespace out by name")
	}
	items, _ := list["items"].([]any)
	for _, ns := range excluded {
		items = append(items, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "left-out", "namespace": ns},
			"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}}})
	}
	list["items"] = items
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "objects.json", string(data))
	return filepath.Join(dir, "objects.json"), excluded
}

// matchExample reports whether output is what example shows: each line of example is the next line of
// output, white space runs counting as one space and "..." standing for any text; a line "..." stands
// for any number of lines. The example may stop before the output does.
func matchExample(example, output string) error {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := strings.Split(strings.TrimRight(output, "\n"), "\n")
	next, skip := 0, false
	for _, line := range strings.Split(example, "\n") {
		if norm(line) == "..." {
			skip = true
			continue
		}
		parts := strings.Split(norm(line), "...")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		for next < len(got) && !re.MatchString(norm(got[next])) && skip {
			next++
		}
		if next == len(got) || !re.MatchString(norm(got[next])) {
			return fmt.Errorf("no line %q where the example has it", line)
		}
		next, skip = next+1, false
	}
	return nil
}
