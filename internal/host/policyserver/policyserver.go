// Package policyserver starts Kubewarden's policy-server on loopback for the corpus replay and the
// benchmark, and stops it by its PID.
package policyserver

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Options says which policy-server to start and how.
type Options struct {
	Binary   string        // Kubewarden's policy-server
	Policies []byte        // its policies.yml (JSON is YAML)
	Dir      string        // for the policies file, downloads and the Sigstore cache
	Port     int           // the API on 127.0.0.1; readiness on Port+1
	Flags    []string      // more flags (--sigstore-trust-config FILE, offline)
	Ready    time.Duration // how long to wait for readiness
}

// Server is a policy-server Start started.
type Server struct {
	URL     string        // its /validate/ endpoint: append a policy's name
	Startup time.Duration // from the start to its first ready answer
	cmd     *exec.Cmd
	exited  chan struct{}
	mu      sync.Mutex
	log     bytes.Buffer
}

// Start starts policy-server and waits until it is ready, or exited, or o.Ready has passed (then it is
// stopped); the error carries what it printed.
func Start(o Options) (*Server, error) {
	file := filepath.Join(o.Dir, fmt.Sprintf("policies-%d.yml", o.Port))
	if err := os.WriteFile(file, o.Policies, 0o600); err != nil {
		return nil, err
	}
	args := append([]string{"--policies", file, "--addr", "127.0.0.1", "--port", strconv.Itoa(o.Port),
		"--readiness-probe-port", strconv.Itoa(o.Port + 1), "--policies-download-dir", o.Dir,
		"--sigstore-cache-dir", filepath.Join(o.Dir, "sigstore"), "--ignore-kubernetes-connection-failure",
		"--log-level", "error"}, o.Flags...)
	s := &Server{cmd: exec.Command(o.Binary, args...), exited: make(chan struct{})} //nolint:gosec // the binary the caller was given
	s.cmd.Stdout, s.cmd.Stderr = s, s
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	ready := fmt.Sprintf("http://127.0.0.1:%d/readiness", o.Port+1)
	for deadline := began.Add(o.Ready); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("policy-server exited: %s", s.Log())
		default:
		}
		if resp, err := http.Get(ready); err == nil { //nolint:gosec // its own loopback readiness URL
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.Startup, s.URL = time.Since(began), fmt.Sprintf("http://127.0.0.1:%d/validate/", o.Port)
				return s, nil
			}
		}
	}
	s.Stop()
	return nil, fmt.Errorf("policy-server not ready within %s: %s", o.Ready, s.Log())
}

// Write collects what policy-server prints.
func (s *Server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Write(p)
}

// Log is what policy-server printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop kills the server by its PID and waits until it has exited.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}
