// Command floor is the benchmark's floor: a TinyGo waPC policy that accepts every request without reading
// it, built with the same flags and on the same waPC glue (package wapcguest) as policy.wasm. `make bench` reports every scenario as a ratio to it, so
// results compare across machines: what remains above 1 is the policy's own work.
package main

import "github.com/seed-a6d343df/yunikorn-user-info-policy/wapcguest"

func main() {
	wapcguest.Register(wapcguest.Functions{
		"validate":          func([]byte) []byte { return []byte(`{"accepted":true}`) },
		"validate_settings": func([]byte) []byte { return []byte(`{"valid":true}`) },
		"protocol_version":  func([]byte) []byte { return []byte(`"v1"`) },
	})
}
