// Package guesttest compiles TinyGo programs into waPC modules for tests: the test guests under
// internal/*/testdata and the policy itself. It is imported only by _test.go files.
//
// TinyGo is looked up in $TINYGO, then on PATH, then at <repo>/.tools/tinygo/bin/tinygo, where
// `make test` installs it. Without one the calling test is skipped, unless $CI or $REQUIRE_TINYGO is
// set: there a missing compiler must fail the run, not hide every wasm test.
//
// `go test ./...` runs a test binary per package, and seven of them need the policy: each would compile it
// again (25-40 s of TinyGo each on the 2-core test machine). A module is therefore also kept in
// build/guesttest/, named by a hash of everything that goes into it (the compiler, the arguments, the
// directory and every Go source, go.mod and go.sum of the repository): a binary that finds it there
// reads it instead of compiling, and a lock file makes the others wait for the one compiling it.
package guesttest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
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
// "internal/host/wapchost/testdata/guest"), with -scheduler=none: test guests start no goroutines.
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
	b.once.Do(func() { b.wasm, b.err = cached(tinygo, dir, args) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.wasm
}

// cached returns the module from build/guesttest/ when one was compiled from the same inputs, and
// otherwise compiles it and keeps it there.
func cached(tinygo, dir string, args []string) ([]byte, error) {
	key, err := inputsHash(tinygo, dir, args)
	if err != nil {
		return nil, err
	}
	cacheDir := filepath.Join(RepoRoot(), "build", "guesttest")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(cacheDir, key+".wasm")
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	// Released when lock is closed; a test binary that dies releases it too.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	if wasm, err := os.ReadFile(path); err == nil {
		return wasm, nil
	}
	wasm, err := compile(tinygo, dir, args)
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, wasm, 0o644); err != nil {
		return nil, err
	}
	return wasm, os.Rename(tmp, path) // whole or absent, whatever stops the run
}

// inputsHash names a build by what goes into it: the compiler (path, size, time), the arguments, the
// directory, and the repository's sources (sourcesHash).
func inputsHash(tinygo, dir string, args []string) (string, error) {
	sources, err := sourcesHash()
	if err != nil {
		return "", err
	}
	info, err := os.Stat(tinygo)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s\x00%s\x00%s", tinygo, info.Size(), info.ModTime().UnixNano(), dir, strings.Join(args, "\x00"), sources)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sourcesHash hashes the path and contents of every .go file, go.mod and go.sum of the repository (outside
// .git, .tools and build), once per test binary: every build of it shares them. Modules from the module
// proxy are fixed by go.sum.
var sourcesHash = sync.OnceValues(func() (string, error) {
	h := sha256.New()
	root := RepoRoot()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == ".git" || name == ".tools" || name == "build" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && name != "go.mod" && name != "go.sum" {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", path)
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

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
