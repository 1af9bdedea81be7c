package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost"
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
		return exitUsage
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
			return exitStart
		}
		return exitUsage
	}
	defer host.Close(ctx)
	if err := kwctl.ValidateSettings(ctx, host, settings); err != nil {
		_, _ = stderr.Write(logs.Bytes())
		fmt.Fprintln(stderr, err)
		if errors.As(err, &startErr) {
			return exitStart
		}
		return exitSettings
	}
	var refused []string // log entries policy-server would refuse, over all requests

	code := exitOK
	for i, path := range f.positional[1:] {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintln(stdout, filepath.Base(path))
		req, err := readRequest(path, f.payload)
		if err != nil {
			fmt.Fprintf(stdout, "  %-9s %v\n", "error", err)
			code = exitUsage
			continue
		}
		logs.Reset()
		evalCtx, cancel := withTimeout(ctx, f.policyTimeout)
		resp, err := kwctl.Validate(evalCtx, host, req, settings)
		cancel()
		if err != nil {
			fmt.Fprintf(stdout, "  %-9s the policy could not be started: %v\n", "error", err)
			code = exitStart
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
	if strictCode := reportLogProblems(stderr, refused, f.strict); code == exitOK {
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
