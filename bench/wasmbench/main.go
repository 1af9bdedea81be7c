package wasmbench

import (
	"flag"
	"fmt"
	"io"
)

// Main parses the benchmark's command line and runs it on engine; it returns the exit code.
func Main(engine Engine, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("wasmbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Policy, "policy", "policy.wasm", "the policy module")
	fs.StringVar(&o.Floor, "floor", "build/floor.wasm", "the floor module")
	fs.StringVar(&o.MutFloor, "mutfloor", "build/mutfloor.wasm", "the mutating floor module (empty or a missing file: left out)")
	fs.StringVar(&o.Typed, "typed", "build/typed.wasm", "the typed encoding/json comparison module (empty: left out)")
	fs.StringVar(&o.Requests, "requests", "testdata/requests", "the fixtures directory")
	fs.IntVar(&o.N, "n", 1000, "evaluations per scenario and module")
	fs.IntVar(&o.Reuse, "reuse", 10000, "evaluations in one reused instance (memory growth check)")
	fs.StringVar(&o.Native, "native", "", "bench/yunikorn's binary: YuniKorn's own admission handler, measured natively on the same requests (empty: left out)")
	fs.StringVar(&o.Only, "only", "", "run only the scenarios whose name contains this (skips the targets summary)")
	startup := fs.Bool("startup", false, "only measure instantiate + _start + wapc_init of the modules given as arguments")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	run := func() error { return Run(engine, o) }
	if *startup {
		run = func() error { return StartupOnly(engine, fs.Args(), o.N) }
	}
	if err := run(); err != nil {
		fmt.Fprintln(stderr, "wasmbench:", err)
		return 1
	}
	return 0
}
