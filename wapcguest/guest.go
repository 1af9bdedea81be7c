// Package wapcguest is the modules' waPC guest: the exports and imports of the waPC protocol, the functions a
// module registers, and the one buffer every call's request is read into. policy.wasm and the benchmark's
// floor and typed modules are built on it alike, so that the floor pays what the policy pays for the
// protocol and nothing else.
package wapcguest

// guest is the waPC guest: the functions main registers, and the one buffer every call's request is
// read into. github.com/wapc/wapc-guest-tinygo allocates the operation and the payload afresh for every
// call; in an instance kept for many evaluations (older policy-server releases, `kwctl bench`) each
// request of up to a megabyte is then garbage that the next collection must find, and TinyGo's collector,
// which takes any word of the globals or the stack that looks like a heap address for a pointer, keeps
// some of them alive: the heap doubles again and again
// (docs/performance.md "Memory in a kept instance").
//
// Here the buffer lives as long as the instance and is replaced only by a larger one: the payload is
// read into it, and policy.ValidateOver writes the answer over it, up to its capacity. A kept instance
// evaluating requests no larger than one it has seen, with answers no larger than one it has given,
// then allocates no buffer for them. A fresh instance (one request, as policy-server runs it) allocates
// one buffer for the payload, where the waPC package allocated two; the operation's name is read into
// an array of the guest's own.
//
// An answer that did not fit over the payload is a buffer of its own, larger than the buffer: it
// becomes the buffer, so that the next answer as large is written over it, and the buffer it replaces is
// the only garbage (sized anew for the answer, the next buffer left both).
//
// A replaced buffer is garbage of up to megabytes, and TinyGo's collector keeps almost every such block
// alive for good: it takes any word of the globals that looks like a heap address for a pointer, and
// their constant tables (unicode's ranges, two uint16 to a word) hold some 900 words that fall inside a
// heap of 12 MiB, about 75 to the megabyte. So a replacement, which happens only in a kept instance, gets
// room to spare (roomFor): requests between 0.5 and 1 MB, each a little larger than the last, then
// replace the buffer once, not every time.
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
