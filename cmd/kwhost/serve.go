package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/webhook"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

// serveConfig is serve's command line.
type serveConfig struct {
	policy, certFile, keyFile, listen, recordPath, logLevel string
	settings                                                kwctl.SettingsFlags
	evalTimeout                                             time.Duration
	payload                                                 kwctl.Payload
	allowUnannotated                                        bool
	allowedToMutate                                         bool
	policyID                                                string
}

func parseServeFlags(args []string) (*serveConfig, error) {
	c := &serveConfig{}
	fs := flag.NewFlagSet("kwhost serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.policy, "policy", "", "")
	c.settings.Register(fs)
	fs.StringVar(&c.certFile, "cert-file", "", "")
	fs.StringVar(&c.keyFile, "key-file", "", "")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9443", "")
	fs.StringVar(&c.recordPath, "record", "", "")
	fs.DurationVar(&c.evalTimeout, "policy-timeout", webhook.DefaultEvalTimeout, "")
	fs.DurationVar(&c.evalTimeout, "eval-timeout", webhook.DefaultEvalTimeout, "") // the older name
	fs.StringVar(&c.logLevel, "log-level", "info", "")
	fs.BoolVar(&c.allowUnannotated, "allow-unannotated", false, "")
	fs.BoolVar(&c.allowedToMutate, "allowed-to-mutate", true, "")
	fs.StringVar(&c.policyID, "policy-id", "yunikorn-user-info", "")
	payload := fs.String("payload", string(kwctl.PayloadPolicyServer), "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if c.payload, err = kwctl.ParsePayload(*payload); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q (the module goes in --policy)", fs.Arg(0))
	case c.policy == "":
		return nil, errors.New("--policy is required")
	case c.certFile == "" || c.keyFile == "":
		return nil, errors.New("--cert-file and --key-file are required (the API server calls webhooks over HTTPS only)")
	case c.settings.Conflict() != nil:
		return nil, c.settings.Conflict()
	case c.evalTimeout <= 0:
		return nil, errors.New("--policy-timeout must be positive")
	case levels[c.logLevel] == 0:
		return nil, fmt.Errorf("--log-level %q: want trace, debug, info, warning or error", c.logLevel)
	}
	return c, nil
}

// serveCommand runs the webhook until SIGINT or SIGTERM.
func serveCommand(args []string, stderr io.Writer) int {
	c, err := parseServeFlags(args)
	if err != nil {
		return usageError(stderr, "serve", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, c, stderr, nil)
}

// serve is serveCommand without the command line and the signals: it serves until ctx is done,
// and calls ready with the address once it accepts connections (tests listen on port 0).
func serve(ctx context.Context, c *serveConfig, stderr io.Writer, ready func(addr string)) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kwhost serve: %v\n", err)
		return kwctl.ExitUsage
	}
	settings, err := c.settings.Settings()
	if err != nil {
		return fail(err)
	}
	wasm, err := os.ReadFile(c.policy)
	if err != nil {
		return fail(err)
	}
	// Interruptible: --policy-timeout (or the API server's shorter ?timeout=) must stop a runaway guest.
	policyLog := &levelFilter{w: stderr, min: levels[c.logLevel]}
	var logMu sync.Mutex
	logProblem := func(entry []byte, err error) { // policy-server logs an error instead of the entry
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "%s ERROR Cannot log event: policy-server would refuse this policy log entry: %v: %s\n",
			time.Now().UTC().Format(time.RFC3339Nano), err, bytes.TrimSpace(entry))
	}
	host, err := wapchost.Load(ctx, wasm, wapchost.Options{Log: policyLog, Stdio: stderr, Interruptible: true, LogProblem: logProblem,
		Record: corpus.Recorder()})
	if err != nil {
		return fail(fmt.Errorf("cannot load policy %s: %w", c.policy, err))
	}
	defer host.Close(context.WithoutCancel(ctx))
	// policy-server loads only a module `kwctl annotate` has written (kwctl run takes both).
	if err := kwctl.CheckLoadable(wasm); err != nil && !c.allowUnannotated {
		fmt.Fprintf(stderr, "kwhost serve: cannot load policy %s: %v (policy-server refuses it too: serve the module "+
			"`kwctl annotate` writes, or pass --allow-unannotated)\n", c.policy, err)
		return kwctl.ExitStart
	}

	opts := webhook.Options{Settings: settings, Log: stderr, EvalTimeout: c.evalTimeout, Payload: c.payload,
		NoMutations: !c.allowedToMutate, PolicyID: c.policyID}
	record, closeRecord, err := openRecord(c.recordPath)
	if err != nil {
		return fail(err)
	}
	defer closeRecord()
	opts.Record = record
	handler, err := webhook.New(ctx, host, opts)
	var settingsErr *kwctl.SettingsError
	switch {
	case errors.As(err, &settingsErr):
		fmt.Fprintln(stderr, settingsErr) // policy-server's and kwctl's words, so scripts can match them
		return kwctl.ExitSettings
	case err != nil:
		return fail(err)
	}
	err = serveTLS(ctx, handler, c.certFile, c.keyFile, c.listen, func(addr string) {
		mode := ""
		if !c.allowedToMutate {
			mode = ", not allowed to mutate (a validating webhook)"
		}
		fmt.Fprintf(stderr, "kwhost serve: %s on https://%s (a test host, not a production server), settings %s%s\n",
			c.policy, addr, settings, mode)
		if ready != nil {
			ready(addr)
		}
	})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stderr, "kwhost serve: stopped")
	return kwctl.ExitOK
}

// openRecord opens the --record file for appending and returns its closer; a nil Writer without one.
func openRecord(path string) (io.Writer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

// serveTLS serves h over HTTPS at listen with the certificate in certFile and keyFile until ctx is done, then
// shuts down; started is called with the address once it accepts connections.
func serveTLS(ctx context.Context, h http.Handler, certFile, keyFile, listen string, started func(addr string)) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("cannot load the serving certificate: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := webhook.Server(h, cert)
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	started(ln.Addr().String())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// levels ranks the SDK's log levels; policy-server shows info and above unless told otherwise.
var levels = map[string]int{"trace": 1, "debug": 2, "info": 3, "warning": 4, "error": 5}

// levelFilter drops the policy's log lines below min, so that stderr keeps about one line per request.
// wapchost writes one line per Write; a line that is not the SDK's JSON passes.
type levelFilter struct {
	w   io.Writer
	min int
}

func (f *levelFilter) Write(p []byte) (int, error) {
	var line struct {
		Level string `json:"level"`
	}
	if json.Unmarshal(p, &line) == nil && levels[strings.ToLower(line.Level)] != 0 && levels[strings.ToLower(line.Level)] < f.min {
		return len(p), nil
	}
	return f.w.Write(p)
}
