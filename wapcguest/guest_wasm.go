//go:build tinygo.wasm

package wapcguest

// The waPC imports and export, as github.com/wapc/wapc-guest-tinygo declares them (the protocol's
// names and signatures), around guest.call. Memory is handed over as the address of a slice's first
// byte (nil for an empty one), so that no unsafe is needed here.

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

// first is the address of b's first byte, nil when b is empty.
func first(b []byte) *byte {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}
