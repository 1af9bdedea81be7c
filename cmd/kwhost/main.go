// Command kwhost is a test host, not a production server. It runs a Kubewarden waPC policy the
// way `kwctl run` and policy-server do (a fresh instance per evaluation, settings validated first,
// the same AdmissionResponse JSON), so that tests and developers need no kwctl.
//
//	kwhost run [--request-path|-r FILE] [--settings-json JSON | --settings-path|-s FILE] policy.wasm
//	kwhost demo [--settings-json JSON | --settings-path|-s FILE] policy.wasm REQUEST.json...
//	kwhost serve --policy policy.wasm [--settings-json JSON | -s FILE] --cert-file F --key-file F [--listen ADDR] [--record FILE]
//
// serve answers AdmissionReviews over HTTPS for a real API server, for the cluster suite under
// test/cluster (see package internal/webhook); it is a test host too, not a production server.
//
// run prints one line of AdmissionResponse JSON on stdout and the policy's logs on stderr. Exit
// codes: 0 when the policy answered (allowed or rejected), 1 when it refused its settings, 2 for a
// bad command line or an unreadable or malformed file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost"
)

const usage = `usage:
  kwhost run [--request-path|-r FILE] [--settings-json JSON | --settings-path|-s FILE] policy.wasm
  kwhost demo [--settings-json JSON | --settings-path|-s FILE] policy.wasm REQUEST.json...
  kwhost serve --policy policy.wasm [--settings-json JSON | --settings-path|-s FILE]
               --cert-file F --key-file F [--listen 127.0.0.1:9443] [--record FILE] [--eval-timeout 10s]
               [--log-level info]

run   evaluates one request like ` + "`kwctl run`" + `: one line of AdmissionResponse JSON on stdout
      (FILE "-" reads stdin), the policy's logs on stderr.
demo  evaluates each request and prints a readable summary of the decision and the patch.
serve answers admission.k8s.io/v1 AdmissionReviews over HTTPS as a mutating webhook (a test host,
      not a production server) until SIGINT or SIGTERM: one line per request on stderr (plus the
      policy's logs at --log-level and above), and with --record one JSON line per request
      (userInfo as sent) in FILE.

exit codes: 0 the policy answered (allowed or rejected), 1 it refused its settings,
            2 bad command line or unreadable or malformed file
`

const (
	exitOK       = 0
	exitSettings = 1
	exitUsage    = 2
)

func main() {
	os.Exit(kwhost(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// kwhost is main without the process: tests call it with their own streams.
func kwhost(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdin, stdout, stderr)
	case "demo":
		return demoCommand(args[1:], stdout, stderr)
	case "serve":
		return serveCommand(args[1:], stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "kwhost: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// flags are kwctl run's, parsed so that they may come before or after the module, as clap allows.
type flags struct {
	requestPath  string
	settingsJSON string
	settingsPath string
	positional   []string
}

func parseFlags(name string, args []string, withRequest bool) (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("kwhost "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by the caller
	if withRequest {
		fs.StringVar(&f.requestPath, "request-path", "", "")
		fs.StringVar(&f.requestPath, "r", "", "")
	}
	fs.StringVar(&f.settingsJSON, "settings-json", "", "")
	fs.StringVar(&f.settingsPath, "settings-path", "", "")
	fs.StringVar(&f.settingsPath, "s", "", "")
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
	if f.settingsJSON != "" && f.settingsPath != "" {
		return nil, errors.New("--settings-json and --settings-path are mutually exclusive")
	}
	return f, nil
}

// usageError reports a command line that cannot be run, with the usage, since the fix is there.
func usageError(stderr io.Writer, command string, err error) int {
	fmt.Fprintf(stderr, "kwhost %s: %v\n\n%s", command, err, usage)
	return exitUsage
}

// settings reads whichever settings flag was given; none means {}.
func (f *flags) settings() (json.RawMessage, error) {
	if f.settingsPath != "" {
		data, err := os.ReadFile(f.settingsPath)
		if err != nil {
			return nil, fmt.Errorf("cannot read settings file: %w", err)
		}
		s, err := kwctl.SettingsFromFile(data)
		if err != nil {
			return nil, fmt.Errorf("cannot parse settings file %s: %w", f.settingsPath, err)
		}
		return s, nil
	}
	s, err := kwctl.SettingsFromJSON([]byte(f.settingsJSON))
	if err != nil {
		return nil, fmt.Errorf("cannot parse settings JSON: %w", err)
	}
	return s, nil
}

// loadPolicy compiles the module; the policy's logs and prints go to stderr, keeping stdout for
// the response alone.
func loadPolicy(ctx context.Context, path string, stderr io.Writer) (*wapchost.Host, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	host, err := wapchost.Load(ctx, wasm, wapchost.Options{Log: stderr, Stdio: stderr})
	if err != nil {
		return nil, fmt.Errorf("cannot load policy %s: %w", path, err)
	}
	return host, nil
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
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kwhost run: %v\n", err)
		return exitUsage
	}
	settings, err := f.settings()
	if err != nil {
		return fail(err)
	}
	var request []byte
	if f.requestPath == "-" {
		request, err = io.ReadAll(stdin)
	} else {
		request, err = os.ReadFile(f.requestPath)
	}
	if err != nil {
		return fail(fmt.Errorf("cannot read the request: %w", err))
	}

	ctx := context.Background()
	host, err := loadPolicy(ctx, f.positional[0], stderr)
	if err != nil {
		return fail(err)
	}
	defer host.Close(ctx)
	resp, err := kwctl.Run(ctx, host, request, settings)
	var settingsErr *kwctl.SettingsError
	switch {
	case errors.As(err, &settingsErr):
		fmt.Fprintln(stderr, settingsErr) // kwctl's exact words, unprefixed, so scripts can match them
		return exitSettings
	case err != nil:
		return fail(fmt.Errorf("%s: %w", f.requestPath, err))
	}
	fmt.Fprintf(stdout, "%s\n", resp.JSON())
	return exitOK
}
