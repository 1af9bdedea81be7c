//go:build tinygo.wasm

package main

import "unsafe"

// The waPC imports and export, as github.com/wapc/wapc-guest-tinygo declares them (the protocol's
// names and signatures), around guest.call.

//go:wasmimport wapc __guest_request
func guestRequest(operation, payload unsafe.Pointer)

//go:wasmimport wapc __guest_response
func guestResponse(ptr unsafe.Pointer, size uint32)

//go:wasmimport wapc __guest_error
func guestError(ptr unsafe.Pointer, size uint32)

//go:wasmimport wapc __host_call
func hostCall(bindingPtr unsafe.Pointer, bindingLen uint32, namespacePtr unsafe.Pointer, namespaceLen uint32,
	operationPtr unsafe.Pointer, operationLen uint32, payloadPtr unsafe.Pointer, payloadLen uint32) bool

//export __guest_call
func guestCall(operationSize, payloadSize uint32) bool {
	answer, ok := theGuest.call(int(operationSize), int(payloadSize), func(operation, payload []byte) {
		guestRequest(unsafe.Pointer(unsafe.SliceData(operation)), unsafe.Pointer(unsafe.SliceData(payload)))
	})
	if !ok {
		guestError(unsafe.Pointer(unsafe.SliceData(answer)), uint32(len(answer)))
		return false
	}
	guestResponse(unsafe.Pointer(unsafe.SliceData(answer)), uint32(len(answer)))
	return true
}

// hostLogCall sends one log line to the host (kubewarden, tracing, log), as the SDK's writer does; the
// host's answer is not read.
func hostLogCall(line []byte) {
	const binding, namespace, operation = "kubewarden", "tracing", "log"
	hostCall(unsafe.Pointer(unsafe.StringData(binding)), uint32(len(binding)),
		unsafe.Pointer(unsafe.StringData(namespace)), uint32(len(namespace)),
		unsafe.Pointer(unsafe.StringData(operation)), uint32(len(operation)),
		unsafe.Pointer(unsafe.SliceData(line)), uint32(len(line)))
}
