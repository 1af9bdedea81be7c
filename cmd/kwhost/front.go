package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/webhook"
)

// frontConfig is front's command line.
type frontConfig struct {
	upstream, ready, certFile, keyFile, listen, recordPath string
}

func parseFrontFlags(args []string) (*frontConfig, error) {
	c := &frontConfig{}
	fs := flag.NewFlagSet("kwhost front", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.upstream, "upstream", "", "")
	fs.StringVar(&c.ready, "ready", "", "")
	fs.StringVar(&c.certFile, "cert-file", "", "")
	fs.StringVar(&c.keyFile, "key-file", "", "")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9443", "")
	fs.StringVar(&c.recordPath, "record", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.upstream == "":
		return nil, errors.New("--upstream is required (the policy server's http://127.0.0.1:PORT)")
	case c.certFile == "" || c.keyFile == "":
		return nil, errors.New("--cert-file and --key-file are required (the API server calls webhooks over HTTPS only)")
	}
	return c, nil
}

// frontCommand serves the front until SIGINT or SIGTERM.
func frontCommand(args []string, stderr io.Writer) int {
	c, err := parseFrontFlags(args)
	if err != nil {
		return usageError(stderr, "front", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kwhost front: %v\n", err)
		return kwctl.ExitUsage
	}
	opts := webhook.FrontOptions{Upstream: c.upstream, Ready: c.ready, Log: stderr}
	record, closeRecord, err := openRecord(c.recordPath)
	if err != nil {
		return fail(err)
	}
	defer closeRecord()
	opts.Record = record
	err = serveTLS(ctx, webhook.NewFront(opts), c.certFile, c.keyFile, c.listen, func(addr string) {
		fmt.Fprintf(stderr, "kwhost front: https://%s -> %s (every decision is the policy server's)\n", addr, c.upstream)
	})
	if err != nil {
		return fail(err)
	}
	return kwctl.ExitOK
}
