// Package guesttest compiles TinyGo programs into waPC modules for tests: the test guests under
// internal/*/testdata and the policy itself. It is imported only by _test.go files.
//
// TinyGo is looked up in $TINYGO, then on PATH, then at <repo>/.tools/tinygo/bin/tinygo, where
// `make test` installs it. Without one the calling test is skipped, unless $CI or $REQUIRE_TINYGO is
// set: there a missing compiler must fail the run, not hide every wasm test.
package guesttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// RepoRoot is the directory holding go.mod, found from this file's location so that it does not
// depend on the directory `go test` runs in.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			panic("guesttest: no go.mod above " + file)
		}
	}
}

// TinyGo returns the path of a tinygo binary, or skips (or fails) t when there is none.
func TinyGo(t testing.TB) string {
	t.Helper()
	if path, err := findTinyGo(); err == nil {
		return path
	}
	msg := "TinyGo not found ($TINYGO, PATH, .tools/tinygo): the wasm tests did NOT run. " +
		"Run `make test`, which installs TinyGo into .tools/tinygo."
	if os.Getenv("CI") != "" || os.Getenv("REQUIRE_TINYGO") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func findTinyGo() (string, error) {
	if path := os.Getenv("TINYGO"); path != "" {
		return exec.LookPath(path)
	}
	if path, err := exec.LookPath("tinygo"); err == nil {
		return path, nil
	}
	return exec.LookPath(filepath.Join(RepoRoot(), ".tools", "tinygo", "bin", "tinygo"))
}

type build struct {
	once sync.Once
	wasm []byte
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
)

// Guest builds a test guest, dir being relative to the repository root (for example
// "internal/wapchost/testdata/guest"), with -scheduler=none: test guests start no goroutines.
// args go before the package, e.g. "-ldflags=-X main.code=3".
func Guest(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	return Build(t, filepath.Join(RepoRoot(), filepath.FromSlash(dir)), append([]string{"-scheduler=none"}, args...)...)
}

// Policy builds the policy module with upstream Kubewarden's flags.
func Policy(t testing.TB) []byte {
	t.Helper()
	return Build(t, RepoRoot())
}

// Build runs `tinygo build -target=wasi -no-debug args... dir` once per test binary for each
// distinct (dir, args) and returns the module.
func Build(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	tinygo := TinyGo(t)
	key := dir + "\x00" + strings.Join(args, "\x00")
	buildsMu.Lock()
	b := builds[key]
	if b == nil {
		b = &build{}
		builds[key] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() { b.wasm, b.err = compile(tinygo, dir, args) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.wasm
}

func compile(tinygo, dir string, args []string) ([]byte, error) {
	out, err := os.MkdirTemp("", "guesttest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	wasm := filepath.Join(out, "module.wasm")
	cmdArgs := append([]string{"build", "-o", wasm, "-target=wasi", "-no-debug"}, args...)
	cmd := exec.Command(tinygo, append(cmdArgs, ".")...)
	cmd.Dir = dir
	// No git metadata is needed in a test module, and a checkout without .git would fail on it.
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if output, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s (in %s): %w\n%s", strings.Join(cmd.Args, " "), dir, err, output)
	}
	return os.ReadFile(wasm)
}
