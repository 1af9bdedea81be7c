//go:build tinygo.wasm

package wapcguest

import "unsafe"

// The waPC imports and export, as github.com/wapc/wapc-guest-tinygo declares them (the protocol's
// names and signatures), around guest.call. Memory is handed over as the address of a slice's first
// byte (nil for an empty one); unsafe only reads an address, in alignHeap.

//go:wasmimport wapc __guest_request
func guestRequest(operation, payload *byte)

//go:wasmimport wapc __guest_response
func guestResponse(ptr *byte, size uint32)

//go:wasmimport wapc __guest_error
func guestError(ptr *byte, size uint32)

//go:wasmimport wapc __host_call
func hostCall(binding *byte, bindingLen uint32, namespace *byte, namespaceLen uint32,
	operation *byte, operationLen uint32, payload *byte, payloadLen uint32) bool

//export __guest_call
func guestCall(operationSize, payloadSize uint32) bool {
	answer, ok := theGuest.call(int(operationSize), int(payloadSize), func(operation, payload []byte) {
		guestRequest(first(operation), first(payload))
	})
	if !ok {
		guestError(first(answer), uint32(len(answer)))
		return false
	}
	guestResponse(first(answer), uint32(len(answer)))
	return true
}

// The host call that logs: kubewarden, tracing, log.
var logBinding, logNamespace, logOperation = []byte("kubewarden"), []byte("tracing"), []byte("log")

// HostLog sends one log line to the host (kubewarden, tracing, log), as the SDK's writer does; the host's
// answer is not read.
func HostLog(line []byte) {
	hostCall(first(logBinding), uint32(len(logBinding)), first(logNamespace), uint32(len(logNamespace)),
		first(logOperation), uint32(len(logOperation)), first(line), uint32(len(line)))
}

// page is the unit in which a fresh instance's memory is first written: on wasmtime, policy-server's
// engine, each first write to a 4 KiB page of a fresh instance is a page fault, a few microseconds each
// (docs/runtime.md "Pages").
const page = 4096

// probe holds alignHeap's allocations while it reads their addresses.
var probe []byte

// alignHeap pads the heap, at the end of start-up, so that the first allocation after it starts on a page
// of its own: what main allocates after Register (the policy's reserved storage), then each request's
// buffer (in a pre-initialised module start-up runs once, at build time).
// Start-up leaves its objects ending anywhere in a page; a request's allocations then straddle one page
// more than their size needs (a 4 KB Pod stamp: 7.8 KB from the middle of a page, three pages instead
// of two). The pad is garbage, never read, and freed by the first collection of an instance kept for
// many requests.
//
// It follows TinyGo's allocator (runtime/gc_blocks.go), which takes a new object from the free range at
// the heap's end, in blocks of 16 bytes that start with an 8-byte header; on another allocator it may
// miss the page, which costs nothing but the pad.
func alignHeap() {
	const block, header = 16, 8
	probe = make([]byte, 1) // one block
	next := uintptr(unsafe.Pointer(&probe[0])) - header + block
	if gap := (page - next%page) % page; gap > 0 {
		blocks := (gap + block - 1) / block
		probe = make([]byte, blocks*block-header)
	}
	probe = nil
}

// first is the address of b's first byte, nil when b is empty.
func first(b []byte) *byte {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}
