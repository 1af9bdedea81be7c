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
	settings, err := f.settings()
	if err != nil {
		fmt.Fprintf(stderr, "kwhost demo: %v\n", err)
		return exitUsage
	}
	ctx := context.Background()
	// The guest's log lines are collected per request and shown in its block (the demo is sequential).
	var logs bytes.Buffer
	host, err := loadPolicy(ctx, f.positional[0], &logs)
	if err != nil {
		fmt.Fprintf(stderr, "kwhost demo: %v\n", err)
		return exitUsage
	}
	defer host.Close(ctx)
	if err := kwctl.ValidateSettings(ctx, host, settings); err != nil {
		_, _ = stderr.Write(logs.Bytes())
		fmt.Fprintln(stderr, err)
		return exitSettings
	}

	code := exitOK
	for i, path := range f.positional[1:] {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintln(stdout, filepath.Base(path))
		req, err := readRequest(path)
		if err != nil {
			fmt.Fprintf(stdout, "  %-9s %v\n", "error", err)
			code = exitUsage
			continue
		}
		logs.Reset()
		printDecision(stdout, req, kwctl.Validate(ctx, host, req, settings))
		for _, entry := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if entry != "" {
				fmt.Fprintf(stdout, "  %-9s %s\n", "log", entry)
			}
		}
	}
	return code
}

func readRequest(path string) (*kwctl.Request, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return kwctl.ParseRequest(data)
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
