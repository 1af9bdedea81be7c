//go:build !tinygo.wasm

package main

// Outside the guest (go vet, native tests) there is no host to log to.
func hostLogCall([]byte) {}
