// Command preinit pre-initialises a WASI command module (internal/build/preinit): it runs `_start` once and
// writes a module that starts where that run ended. `make policy.wasm` ships the policy this way.
//
//	preinit -o policy.wasm build/policy.tinygo.wasm
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/build/preinit"
)

func main() {
	out := flag.String("o", "", "the pre-initialised module to write (required)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: preinit -o OUT.wasm IN.wasm")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "preinit:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	wasm, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	snapshot, rep, err := preinit.Snapshot(context.Background(), wasm)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := os.WriteFile(out, snapshot, 0o644); err != nil { //nolint:gosec // a build artifact others read, as TinyGo writes it
		return err
	}
	fmt.Printf("preinit: %s -> %s: %d bytes -> %d; memory %d pages, %d data segments (%d bytes), %d globals set, %d bytes of stack emptied\n",
		in, out, len(wasm), len(snapshot), rep.MemoryPages, rep.Segments, rep.DataBytes, rep.Globals, rep.StackBytes)
	return nil
}
