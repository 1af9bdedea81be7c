// Command wasmbench benchmarks policy.wasm on the project's own host (wazero), a fresh instance per
// evaluation as policy-server runs it: `make bench`. bench/wasmtime runs the same benchmark on wasmtime.
package main

import (
	"os"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wasmbench"
)

func main() {
	os.Exit(wasmbench.Main(wasmbench.Wazero{}, os.Args[1:], os.Stderr))
}
