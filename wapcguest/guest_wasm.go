//go:build tinygo.wasm

package wapcguest

import "unsafe"

// The waPC imports and export, with github.com/wapc/wapc-guest-tinygo's names and signatures, around
// guest.call. Memory goes over as the address of a slice's first byte; unsafe only reads an address.

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

// HostLog sends one log line to the host, as the SDK's writer does; the host's answer is not read.
func HostLog(line []byte) {
	hostCall(first(logBinding), uint32(len(logBinding)), first(logNamespace), uint32(len(logNamespace)),
		first(logOperation), uint32(len(logOperation)), first(line), uint32(len(line)))
}

// page is the unit in which wasmtime maps a fresh instance's memory (docs/runtime.md "Pages").
const page = 4096

// probe holds alignHeap's allocations while it reads their addresses.
var probe []byte

// alignHeap pads the heap so that the next allocation starts on a page of its own. It follows TinyGo's
// allocator (16-byte blocks, an 8-byte header); with another it may miss the page, which costs only the
// pad (docs/runtime.md "Pages").
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
