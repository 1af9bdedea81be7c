// Command wazero benchmarks policy.wasm on the project's own host (wazero), a fresh instance per
// evaluation as policy-server runs it: `make bench`. bench/wasmtime runs the same benchmark on wasmtime.
package main

import (
	"os"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/bench/wasmbench"
)

func main() {
	args := os.Args[1:]
	engine := wasmbench.Wazero{}
	// -interruptible (first) compiles the modules as `kwhost serve` does for its timeout, to measure
	// what that costs; the other flags are the benchmark's own.
	if len(args) > 0 && args[0] == "-interruptible" {
		engine.Interruptible, args = true, args[1:]
	}
	os.Exit(wasmbench.Main(engine, args, os.Stderr))
}
