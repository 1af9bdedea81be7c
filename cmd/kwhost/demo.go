package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// demoCommand evaluates each request in a fresh instance, as policy-server would, and prints
// what a person wants to see: who asked for what, the decision and the decoded patch.
func demoCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags("demo", args, false)
	switch {
	case err != nil:
		return usageError(stderr, "demo", err)
	case len(f.positional) < 2:
		return usageError(stderr, "demo", errors.New("want a policy module and at least one request file"))
	}
	settings, err := f.Settings()
	if err == nil {
		settings, err = kwctl.SettingsFor(settings, f.payload)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kwhost demo: %v\n", err)
		return kwctl.ExitUsage
	}
	ctx := context.Background()
	// The guest's log lines are collected per request and shown in its block (the demo is sequential).
	var logs bytes.Buffer
	problems := &logProblems{}
	host, err := loadPolicy(ctx, f.positional[0], &logs, problems, f.policyTimeout)
	var startErr *wapchost.StartError
	if err != nil {
		fmt.Fprintf(stderr, "kwhost demo: %v\n", err)
		if errors.As(err, &startErr) {
			return kwctl.ExitStart
		}
		return kwctl.ExitUsage
	}
	defer host.Close(ctx)
	if err := kwctl.ValidateSettings(ctx, host, settings); err != nil {
		_, _ = stderr.Write(logs.Bytes())
		fmt.Fprintln(stderr, err)
		if errors.As(err, &startErr) {
			return kwctl.ExitStart
		}
		return kwctl.ExitSettings
	}
	var refused []string // log entries policy-server would refuse, over all requests

	code := kwctl.ExitOK
	for i, path := range f.positional[1:] {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintln(stdout, filepath.Base(path))
		req, err := readRequest(path, f.payload)
		if err != nil {
			fmt.Fprintf(stdout, "  %-9s %v\n", "error", err)
			code = kwctl.ExitUsage
			continue
		}
		logs.Reset()
		evalCtx, cancel := withTimeout(ctx, f.policyTimeout)
		resp, err := kwctl.Validate(evalCtx, host, req, settings)
		cancel()
		if err != nil {
			fmt.Fprintf(stdout, "  %-9s the policy could not be started: %v\n", "error", err)
			code = kwctl.ExitStart
			continue
		}
		printDecision(stdout, req, resp)
		for _, entry := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if entry != "" {
				fmt.Fprintf(stdout, "  %-9s %s\n", "log", entry)
			}
		}
		refused = append(refused, problems.take()...)
	}
	if strictCode := reportLogProblems(stderr, refused, f.strict); code == kwctl.ExitOK {
		code = strictCode
	}
	return code
}

func readRequest(path string, form kwctl.Payload) (*kwctl.Request, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return kwctl.ParseRequest(data, form)
}

func printDecision(w io.Writer, req *kwctl.Request, resp *kwctl.Response) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-9s "+format+"\n", append([]any{label}, args...)...)
	}
	user := req.Username
	if user == "" {
		user = "(no user)"
	}
	line("request", "%s %s by %s", req.Operation, req.Kind, user)
	decision := "ALLOWED"
	if !resp.Allowed {
		decision = "REJECTED"
		if resp.Status != nil && resp.Status.Code != nil {
			decision = fmt.Sprintf("REJECTED (%d)", *resp.Status.Code)
		}
	}
	line("decision", "%s", decision)
	if resp.Status != nil && resp.Status.Message != nil {
		line("message", "%s", *resp.Status.Message)
	}
	for _, warning := range resp.Warnings {
		line("warning", "%s", warning)
	}
	ops, err := resp.PatchOps()
	switch {
	case err != nil:
		line("patch", "undecodable: %v", err)
	case len(ops) == 0:
		line("patch", "no patch")
	}
	for i, op := range ops {
		label := ""
		if i == 0 {
			label = "patch"
		}
		switch {
		case op.From != "":
			line(label, "%s %s -> %s", op.Op, op.From, op.Path)
		case op.Value != nil:
			line(label, "%s %s = %s", op.Op, op.Path, op.Value)
		default:
			line(label, "%s %s", op.Op, op.Path)
		}
	}
}

// tourStep is one scenario of `make demo`'s tour (testdata/tour.json): a request of testdata/requests,
// the settings it needs (an example's, from testdata/settings, or "reject"; default {}), what it shows in
// one line, and the outcome it must have.
type tourStep struct {
	Request  string `json:"request"`
	Settings string `json:"settings"`
	Shows    string `json:"shows"`
	Expect   string `json:"expect"` // stamp, replace, reject or unchanged
}

// Outcomes, as a newcomer reads them: the policy wrote the requester's identity (stamp), undid somebody
// else's (replace: replaced or restored, with a warning), refused the request, or left it as it was.
const (
	outcomeStamp     = "stamp"
	outcomeReplace   = "replace"
	outcomeReject    = "reject"
	outcomeUnchanged = "unchanged"
)

// tourCommand runs every step of a tour file in a fresh instance, each with its own settings, prints
// what each shows and what the policy did, and ends with a table of scenario, expected and got. A step
// whose outcome is not the one it expects fails the command.
func tourCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags("tour", args, false)
	switch {
	case err != nil:
		return usageError(stderr, "tour", err)
	case len(f.positional) != 2:
		return usageError(stderr, "tour", errors.New("want a policy module and a tour file"))
	}
	steps, err := readTour(f.positional[1])
	if err != nil {
		fmt.Fprintf(stderr, "kwhost tour: %v\n", err)
		return kwctl.ExitUsage
	}
	ctx := context.Background()
	var logs bytes.Buffer
	host, err := loadPolicy(ctx, f.positional[0], &logs, &logProblems{}, f.policyTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "kwhost tour: %v\n", err)
		var startErr *wapchost.StartError
		if errors.As(err, &startErr) {
			return kwctl.ExitStart
		}
		return kwctl.ExitUsage
	}
	defer host.Close(ctx)
	dir := filepath.Dir(f.positional[1])
	got := make([]string, len(steps))
	code := kwctl.ExitOK
	for i, step := range steps {
		fmt.Fprintf(stdout, "\n[%2d/%d] %s\n", i+1, len(steps), step.Shows)
		fmt.Fprintf(stdout, "        %s.json, settings: %s\n", step.Request, step.settingsName())
		outcome, err := runTourStep(ctx, host, dir, step, f.payload, stdout)
		if err != nil {
			fmt.Fprintf(stdout, "  %-9s %v\n", "error", err)
			outcome = "error"
		}
		got[i] = outcome
		if outcome != step.Expect {
			code = kwctl.ExitSettings
		}
	}
	printTourTable(stdout, steps, got)
	if code != kwctl.ExitOK {
		fmt.Fprintln(stderr, "kwhost tour: some scenarios did not give what they expect (marked MISMATCH above)")
	}
	return code
}

func (s tourStep) settingsName() string {
	if s.Settings == "" {
		return "default"
	}
	return s.Settings
}

func readTour(path string) ([]tourStep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var steps []tourStep
	if err := json.Unmarshal(data, &steps); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, s := range steps {
		switch s.Expect {
		case outcomeStamp, outcomeReplace, outcomeReject, outcomeUnchanged:
		default:
			return nil, fmt.Errorf("%s: step %d (%s): expect must be stamp, replace, reject or unchanged, not %q", path, i+1, s.Request, s.Expect)
		}
		if s.Request == "" || s.Shows == "" {
			return nil, fmt.Errorf("%s: step %d needs a request and what it shows", path, i+1)
		}
	}
	return steps, nil
}

// tourSettings reads a step's settings: {} by default, YuniKorn's behaviour for "reject", else an
// example's settings as the e2e tests read them.
func tourSettings(dir, name string) (json.RawMessage, error) {
	switch name {
	case "":
		return json.RawMessage(`{}`), nil
	case "reject":
		return json.RawMessage(`{"onUntrustedAnnotation":"reject"}`), nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "settings", name+".json"))
	if err != nil {
		return nil, err
	}
	return kwctl.SettingsFromJSON(data)
}

func runTourStep(ctx context.Context, host *wapchost.Host, dir string, step tourStep, form kwctl.Payload, stdout io.Writer) (string, error) {
	settings, err := tourSettings(dir, step.Settings)
	if err == nil {
		settings, err = kwctl.SettingsFor(settings, form)
	}
	if err != nil {
		return "", err
	}
	if err := kwctl.ValidateSettings(ctx, host, settings); err != nil {
		return "", err
	}
	req, err := readRequest(filepath.Join(dir, "requests", step.Request+".json"), form)
	if err != nil {
		return "", err
	}
	resp, err := kwctl.Validate(ctx, host, req, settings)
	if err != nil {
		return "", err
	}
	printDecision(stdout, req, resp)
	ops, _ := resp.PatchOps()
	switch {
	case !resp.Allowed:
		return outcomeReject, nil
	case len(ops) == 0:
		return outcomeUnchanged, nil
	case len(resp.Warnings) > 0:
		return outcomeReplace, nil
	}
	return outcomeStamp, nil
}

func printTourTable(w io.Writer, steps []tourStep, got []string) {
	fmt.Fprintf(w, "\n%-3s %-40s %-18s %-10s %-10s\n", "#", "scenario", "settings", "expected", "got")
	fmt.Fprintln(w, strings.Repeat("-", 86))
	for i, s := range steps {
		mark := ""
		if got[i] != s.Expect {
			mark = "  MISMATCH"
		}
		fmt.Fprintf(w, "%-3d %-40s %-18s %-10s %-10s%s\n", i+1, s.Request, s.settingsName(), s.Expect, got[i], mark)
	}
}
