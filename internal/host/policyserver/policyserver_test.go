package policyserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fake writes an executable script standing in for policy-server.
func fake(t *testing.T, script string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "policy-server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

// A policy-server that exits before it is ready is reported with what it printed, at once.
func TestStart_ReportsAServerThatExited(t *testing.T) {
	began := time.Now()
	_, err := Start(Options{Binary: fake(t, `echo "cannot load the policy"; exit 3`), Policies: []byte(`{}`), Dir: t.TempDir(),
		Port: 24990, Ready: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited: cannot load the policy") {
		t.Fatalf("err = %v, want the exit with its output", err)
	}
	if time.Since(began) > 10*time.Second {
		t.Fatalf("took %s to see the exit", time.Since(began))
	}
}

// A policy-server that never becomes ready is stopped once the wait is over, and reported.
func TestStart_StopsAServerNeverReady(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	_, err := Start(Options{Binary: fake(t, `echo $$ > `+pidFile+`; exec sleep 30`), Policies: []byte(`{}`), Dir: dir,
		Port: 24992, Ready: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not ready within 300ms") {
		t.Fatalf("err = %v, want not ready", err)
	}
	pid, _ := os.ReadFile(pidFile)
	if _, statErr := os.Stat("/proc/" + strings.TrimSpace(string(pid))); len(pid) == 0 || statErr == nil {
		t.Fatalf("the server (pid %q) is still running after the refusal", pid)
	}
}
