// Command floor is the benchmark's floor: a TinyGo waPC policy that accepts every request without reading
// it, built with the same flags as policy.wasm. `make bench` reports every scenario as a ratio to it, so
// results compare across machines: what remains above 1 is the policy's own work.
package main

import wapc "github.com/wapc/wapc-guest-tinygo"

func main() {
	wapc.RegisterFunctions(wapc.Functions{
		"validate":          func([]byte) ([]byte, error) { return []byte(`{"accepted":true}`), nil },
		"validate_settings": func([]byte) ([]byte, error) { return []byte(`{"valid":true}`), nil },
		"protocol_version":  func([]byte) ([]byte, error) { return []byte(`"v1"`), nil },
	})
}
