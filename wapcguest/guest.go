// Package wapcguest is the modules' waPC guest: the exports and imports of the waPC protocol, the functions a
// module registers, and the one buffer every call's request is read into. policy.wasm and the benchmark's
// floor and typed modules are built on it alike, so that the floor pays what the policy pays for the
// protocol and nothing else.
package wapcguest

// guest is the waPC guest: the functions main registers, and the one buffer every call's request is read
// into and its answer written over. The buffer lives as long as the instance and is replaced only by a
// larger one (an answer that did not fit becomes the buffer), so that a kept instance allocates no buffer
// for requests and answers no larger than ones it has seen (docs/runtime.md "The waPC buffer").
type guest struct {
	functions Functions
	// operation holds the operation's name when it fits, as every name of these modules does
	// ("validate", "validate_settings", "protocol_version"): no allocation for it.
	operation [32]byte
	buf       []byte // the payload, as read by the last call
	// want is the size of the next buffer: the largest payload or answer seen, so that an answer larger
	// than its request (a stamp for each of many targets) is written over the buffer the next time.
	want int
}

// call runs the operation of a __guest_call: request fills the operation and payload slices it is
// given; the answer, or an error message with ok false, goes back to the host.
func (g *guest) call(operationSize, payloadSize int, request func(operation, payload []byte)) (answer []byte, ok bool) {
	operation := g.operationRoom(operationSize)
	g.want = max(g.want, payloadSize)
	if cap(g.buf) < g.want {
		size := g.want // a fresh instance's buffer: room to spare would be pages written for nothing
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
// above n, so that a kept instance replaces its buffer at most once for every doubling of its requests.
func roomFor(n int) int {
	size := 1
	for size < n {
		size <<= 1
	}
	return size
}

// Functions are a module's operations by name: each answers its payload (and never fails: a guest error
// becomes a denial with code 500 that tells the user nothing). An operation may write its answer over its
// payload, up to the payload's capacity; an answer anywhere else must be a buffer the operation keeps no
// reference to, as the guest may read the next call's payload into it.
type Functions = map[string]func(payload []byte) []byte

// theGuest answers the host's calls.
var theGuest guest

// Register sets the module's operations; main calls it once, at the end of start-up: it leaves the
// heap's free space on a page of its own (alignHeap), where what main allocates after it (the policy's
// reserved storage) and then each request's buffer go.
func Register(functions Functions) {
	theGuest.functions = functions
	alignHeap()
}
