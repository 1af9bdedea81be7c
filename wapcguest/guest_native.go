//go:build !tinygo.wasm

package wapcguest

// HostLog does nothing outside the guest (go vet, native tests): there is no host to log to.
func HostLog([]byte) {}

// alignHeap has nothing to align outside the guest.
func alignHeap() {}
