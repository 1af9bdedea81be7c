// Package wapcguest is the waPC guest of the project's modules: the protocol's exports and imports, the
// functions a module registers, and the one buffer every request is read into. policy.wasm and the
// benchmark's floor modules share it, so the floor pays for the protocol what the policy pays.
package wapcguest

// guest holds the registered functions and the one buffer every request is read into and its answer
// written over, replaced only by a larger one (docs/runtime.md "The waPC buffer").
type guest struct {
	functions Functions
	// operation holds the operation's name when it fits, as every name of these modules does.
	operation [32]byte
	buf       []byte // the payload, as read by the last call
	// want is the next buffer's size: the largest payload or answer seen.
	want int
}

// call runs the operation of a __guest_call: request fills the operation and payload slices it is
// given; the answer, or an error message with ok false, goes back to the host.
func (g *guest) call(operationSize, payloadSize int, request func(operation, payload []byte)) (answer []byte, ok bool) {
	operation := g.operationRoom(operationSize)
	g.want = max(g.want, payloadSize)
	if cap(g.buf) < g.want {
		size := g.want // a fresh instance's: no room to spare
		if g.buf != nil {
			size = roomFor(g.want)
		}
		g.buf = nil // no longer referenced while its successor is allocated
		g.buf = make([]byte, size)
	}
	// The payload's capacity runs to the buffer's end: the answer may be written that far.
	payload := g.buf[:payloadSize:cap(g.buf)]
	request(operation, payload)
	f, found := g.functions[string(operation)]
	if !found {
		return []byte(`Could not find function "` + string(operation) + `"`), false
	}
	answer = f(payload)
	g.want = max(g.want, len(answer))
	if cap(answer) > cap(g.buf) { // an answer of its own (Functions): the host copies it before the next call
		g.buf = answer[:cap(answer)]
	}
	return answer, true
}

// operationRoom is where an operation's name of n bytes is read: the guest's array when it fits.
func (g *guest) operationRoom(n int) []byte {
	if n <= len(g.operation) {
		return g.operation[:n]
	}
	return make([]byte, n)
}

// roomFor is the size of a buffer that replaces a smaller one to hold n bytes: the power of two at or
// above n, so that the buffer is replaced at most once per doubling of the requests.
func roomFor(n int) int {
	size := 1
	for size < n {
		size <<= 1
	}
	return size
}

// Functions are a module's operations by name; each answers its payload and never fails. An answer may be
// written over the payload, up to its capacity; any other answer must be a buffer the operation no longer
// references, as the next payload may be read into it.
type Functions = map[string]func(payload []byte) []byte

// theGuest answers the host's calls.
var theGuest guest

// Register sets the module's operations. main calls it once, at the end of start-up: it leaves the
// heap's free space starting on a page of its own (alignHeap).
func Register(functions Functions) {
	theGuest.functions = functions
	alignHeap()
}
