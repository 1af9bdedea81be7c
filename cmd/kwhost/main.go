// Command kwhost is a test host, not a production server. It runs a Kubewarden waPC policy the
// way `kwctl run` and policy-server do (a fresh instance per evaluation, settings validated first,
// the same AdmissionResponse JSON), so that tests and developers need no kwctl.
//
//	kwhost run [--request-path|-r FILE] [--settings-json JSON | --settings-path|-s FILE] [--strict] [--payload policy-server|raw] [--policy-timeout 2s] [file://]policy.wasm
//	kwhost demo [--settings-json JSON | --settings-path|-s FILE] [--strict] [--payload ...] policy.wasm REQUEST.json...
//	kwhost serve --policy annotated-policy.wasm [--settings-json JSON | -s FILE] --cert-file F --key-file F [--listen ADDR] [--record FILE] [--allow-unannotated]
//	kwhost front --upstream http://127.0.0.1:PORT --cert-file F --key-file F [--listen ADDR] [--record FILE]
//
// serve answers AdmissionReviews over HTTPS for a real API server, for the cluster suite under
// test/cluster (see package internal/host/webhook); it is a test host too, not a production server.
//
// run prints one line of AdmissionResponse JSON on stdout and the policy's logs on stderr. Exit
// codes: 0 when the policy answered (allowed or rejected), 1 when it refused its settings, 2 for a
// bad command line or an unreadable or malformed file (or a request policy-server would refuse), 3
// when the module could not start, 4 when --strict found something policy-server would refuse.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/webhook"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

const usage = `usage:
  kwhost run [--request-path|-r FILE] [--settings-json JSON | --settings-path|-s FILE]
             [--strict] [--payload policy-server|raw] [--policy-timeout 2s] [file://]policy.wasm
  kwhost demo [--settings-json JSON | --settings-path|-s FILE] [--strict] [--payload policy-server|raw]
              policy.wasm REQUEST.json...
  kwhost tour [--payload policy-server|raw] policy.wasm TOUR.json
  kwhost serve --policy annotated-policy.wasm [--settings-json JSON | --settings-path|-s FILE]
               --cert-file F --key-file F [--listen 127.0.0.1:9443] [--record FILE]
               [--policy-timeout 2s] [--payload policy-server|raw] [--log-level info]
               [--allow-unannotated] [--allowed-to-mutate=false] [--policy-id NAME]
  kwhost front --upstream http://127.0.0.1:PORT [--ready URL] --cert-file F --key-file F
               [--listen 127.0.0.1:9443] [--record FILE]

run   evaluates one request like ` + "`kwctl run`" + `: one line of AdmissionResponse JSON on stdout
      (FILE "-" reads stdin; an AdmissionReview or a bare AdmissionRequest), the policy's logs on
      stderr. Local modules only: OCI pulls and policy CR files are kwctl's.
demo  evaluates each request and prints a readable summary of the decision and the patch.
tour  runs the scenarios of a tour file (testdata/tour.json: request, settings, what it shows, the
      outcome expected), each with its settings, and ends with a table of expected and got outcomes.
serve answers admission.k8s.io/v1 AdmissionReviews over HTTPS as a mutating webhook (a test host,
      not a production server) until SIGINT or SIGTERM: one line per request on stderr (plus the
      policy's logs at --log-level and above), and with --record one JSON line per request
      (userInfo as sent) in FILE. Like policy-server, it answers a review its typed AdmissionReview
      refuses with HTTP 400 or 422 before the policy runs, and refuses a module without the metadata
      ` + "`kwctl annotate`" + ` writes (exit 3) unless --allow-unannotated. With
      --allowed-to-mutate=false it serves the policy as policy-server serves one deployed with
      mutating: false: an answer with a patch becomes a rejection naming --policy-id.
front passes each review over HTTPS, byte for byte, to a policy server on loopback (the real
      policy-server, over plain HTTP) and its answer back, with serve's log line and --record: the
      cluster suites' hook for the real policy-server (POLICY_SERVER).

--payload policy-server (the default) hands the policy the request as policy-server does: read
      into its typed AdmissionRequest and written again (unknown members dropped, nulls left out,
      keys sorted, compact); raw hands over the bytes as given (malformed-input tests; serve
      still refuses, before the policy runs, what policy-server refuses).
--policy-timeout stops an evaluation as policy-server does (default 2s; 0 for none, as kwctl).
--strict fails the command when the policy logged an entry policy-server would refuse (an
      unknown level such as "warn", or an entry that is not its JSON object).

exit codes: 0 the policy answered (allowed or rejected), 1 it refused its settings,
            2 bad command line, unreadable or malformed file, 3 the module could not start,
            4 --strict found log entries policy-server would refuse
`

// exitStrict is kwhost's own exit code: --strict found log entries policy-server would refuse.
const exitStrict = 4

func main() {
	os.Exit(kwhost(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// kwhost is main without the process: tests call it with their own streams.
func kwhost(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return kwctl.ExitUsage
	}
	if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
		fmt.Fprint(stdout, usage)
		return kwctl.ExitOK
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdin, stdout, stderr)
	case "demo":
		return demoCommand(args[1:], stdout, stderr)
	case "tour":
		return tourCommand(args[1:], stdout, stderr)
	case "serve":
		return serveCommand(args[1:], stderr)
	case "front":
		return frontCommand(args[1:], stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return kwctl.ExitOK
	}
	fmt.Fprintf(stderr, "kwhost: unknown command %q\n\n%s", args[0], usage)
	return kwctl.ExitUsage
}

// flags are kwctl run's, parsed so that they may come before or after the module, as clap allows,
// and the host's own.
type flags struct {
	requestPath string
	kwctl.SettingsFlags
	strict        bool
	payload       kwctl.Payload
	policyTimeout time.Duration
	positional    []string
}

func parseFlags(name string, args []string, withRequest bool) (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("kwhost "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by the caller
	if withRequest {
		fs.StringVar(&f.requestPath, "request-path", "", "")
		fs.StringVar(&f.requestPath, "r", "", "")
	}
	f.Register(fs)
	fs.BoolVar(&f.strict, "strict", false, "")
	payload := fs.String("payload", string(kwctl.PayloadPolicyServer), "")
	fs.DurationVar(&f.policyTimeout, "policy-timeout", webhook.DefaultEvalTimeout, "")
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		f.positional = append(f.positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	var err error
	if f.payload, err = kwctl.ParsePayload(*payload); err != nil {
		return nil, err
	}
	switch {
	case f.Conflict() != nil:
		return nil, f.Conflict()
	case f.policyTimeout < 0:
		return nil, errors.New("--policy-timeout must not be negative")
	}
	return f, nil
}

// modulePath reads a module argument as kwctl does for local files: a path, or a file:// URI.
// Other schemes need kwctl, which pulls and caches modules.
func modulePath(uri string) (string, error) {
	scheme, rest, found := strings.Cut(uri, "://")
	switch {
	case !found:
		return uri, nil
	case scheme == "file":
		return rest, nil
	}
	return "", fmt.Errorf("%s: kwhost runs local modules only (a path or file://); "+
		"pull it first with `kwctl pull %s`, then pass the file", uri, uri)
}

// logProblems collects the log entries policy-server would refuse (--strict).
type logProblems struct {
	mu      sync.Mutex
	entries []string
}

func (p *logProblems) add(entry []byte, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries = append(p.entries, fmt.Sprintf("%v: %s", err, bytes.TrimSpace(entry)))
}

// take returns the problems collected so far and forgets them.
func (p *logProblems) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.entries
	p.entries = nil
	return out
}

// report prints problems loudly; under --strict they fail the command.
func reportLogProblems(stderr io.Writer, problems []string, strict bool) int {
	if len(problems) == 0 {
		return kwctl.ExitOK
	}
	verdict := "WARNING"
	if strict {
		verdict = "ERROR (--strict)"
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "kwhost: %s: policy-server would refuse this log entry (it logs \"Cannot log event\" instead): %s\n", verdict, p)
	}
	if strict {
		return exitStrict
	}
	return kwctl.ExitOK
}

// usageError reports a command line that cannot be run, with the usage, since the fix is there.
func usageError(stderr io.Writer, command string, err error) int {
	fmt.Fprintf(stderr, "kwhost %s: %v\n\n%s", command, err, usage)
	return kwctl.ExitUsage
}

// loadPolicy compiles the module; the policy's logs and prints go to stderr, keeping stdout for
// the response alone. A positive timeout makes evaluations interruptible.
func loadPolicy(ctx context.Context, uri string, stderr io.Writer, problems *logProblems, timeout time.Duration) (*wapchost.Host, error) {
	path, err := modulePath(uri)
	if err != nil {
		return nil, err
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	host, err := wapchost.Load(ctx, wasm, wapchost.Options{
		Log: stderr, Stdio: stderr, LogProblem: problems.add, Interruptible: timeout > 0,
		Record: corpus.Recorder(),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot load policy %s: %w", path, err)
	}
	return host, nil
}

// withTimeout bounds ctx by the policy timeout, if any.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseFlags("run", args, true)
	switch {
	case err != nil:
		return usageError(stderr, "run", err)
	case len(f.positional) != 1:
		return usageError(stderr, "run", fmt.Errorf("want exactly one policy module, got %d arguments", len(f.positional)))
	case f.requestPath == "":
		return usageError(stderr, "run", errors.New("--request-path is required"))
	}
	fail := kwctl.Failer(stderr, "kwhost run")
	settings, err := f.Settings()
	if err != nil {
		return fail(kwctl.ExitUsage, err)
	}
	request, err := kwctl.ReadInput(f.requestPath, stdin)
	if err != nil {
		return fail(kwctl.ExitUsage, fmt.Errorf("cannot read the request: %w", err))
	}

	ctx := context.Background()
	problems := &logProblems{}
	host, err := loadPolicy(ctx, f.positional[0], stderr, problems, f.policyTimeout)
	var startErr *wapchost.StartError
	switch {
	case errors.As(err, &startErr):
		return fail(kwctl.ExitStart, err)
	case err != nil:
		return fail(kwctl.ExitUsage, err)
	}
	defer host.Close(ctx)
	evalCtx, cancel := withTimeout(ctx, f.policyTimeout)
	defer cancel()
	resp, err := kwctl.Run(evalCtx, host, request, settings, f.payload)
	var settingsErr *kwctl.SettingsError
	switch {
	case errors.As(err, &settingsErr):
		fmt.Fprintln(stderr, settingsErr) // kwctl's exact words, unprefixed, so scripts can match them
		if code := reportLogProblems(stderr, problems.take(), f.strict); code != kwctl.ExitOK {
			return code
		}
		return kwctl.ExitSettings
	case errors.As(err, &startErr):
		return fail(kwctl.ExitStart, fmt.Errorf("the policy could not be started: %w", err))
	case err != nil:
		return fail(kwctl.ExitUsage, fmt.Errorf("%s: %w", f.requestPath, err))
	}
	fmt.Fprintf(stdout, "%s\n", resp.JSON())
	return reportLogProblems(stderr, problems.take(), f.strict)
}
