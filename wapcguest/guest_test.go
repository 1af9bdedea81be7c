package wapcguest

import (
	"bytes"
	"testing"
)

// request returns a guest.call request function that fills in op and payload, as the host does.
func request(op, payload string) func(operation, p []byte) {
	return func(operation, p []byte) {
		copy(operation, op)
		copy(p, payload)
	}
}

func echo(payload []byte) []byte { return payload }

func TestGuestCall_KeepsOneBufferForRequestsNoLargerThanTheLargestSeen(t *testing.T) {
	g := guest{functions: map[string]func([]byte) []byte{"echo": echo}}
	big := string(bytes.Repeat([]byte("x"), 1000))
	if answer, ok := g.call(4, len(big), request("echo", big)); !ok || string(answer) != big {
		t.Fatalf("first call: %q, %v", answer, ok)
	}
	first := addr(g.buf)
	for _, payload := range []string{"small", big[:500], big} {
		answer, ok := g.call(4, len(payload), request("echo", payload))
		if !ok || string(answer) != payload {
			t.Fatalf("echo %d bytes: %q, %v", len(payload), answer, ok)
		}
		if addr(g.buf) != first {
			t.Errorf("a request of %d bytes after one of %d got a new buffer", len(payload), len(big))
		}
	}
	if answer, ok := g.call(4, 2000, request("echo", big+big)); !ok || string(answer) != big+big {
		t.Fatalf("a larger request: %q, %v", answer, ok)
	}
	if cap(g.buf) < 2004 {
		t.Errorf("after a request of 2,004 bytes the buffer holds %d", cap(g.buf))
	}
}

// The first buffer is exactly as large as the first request (a fresh instance writes no page for room
// it will not use); a buffer that replaces it has room to spare, a power of two, so that requests a
// little larger each time replace it once.
func TestGuestCall_OnlyAReplacedBufferHasRoomToSpare(t *testing.T) {
	g := guest{functions: map[string]func([]byte) []byte{"echo": echo}}
	for _, c := range []struct{ payload, capacity int }{{1000, 1004}, {1500, 2048}, {1900, 2048}, {2044, 2048}, {2045, 4096}} {
		payload := string(bytes.Repeat([]byte("x"), c.payload))
		if answer, ok := g.call(4, len(payload), request("echo", payload)); !ok || string(answer) != payload {
			t.Fatalf("echo %d bytes: %v", c.payload, ok)
		}
		if cap(g.buf) != c.capacity {
			t.Errorf("after a request of %d bytes the buffer holds %d, want %d", c.payload+4, cap(g.buf), c.capacity)
		}
	}
}

// triple answers its payload three times: over the payload when its capacity allows (as ValidateOver
// does), otherwise in a buffer of its own.
func triple(payload []byte) []byte {
	if cap(payload) >= 3*len(payload) {
		return append(append(payload, payload...), payload...)
	}
	return bytes.Repeat(payload, 3)
}

func TestGuestCall_AnAnswerLargerThanItsRequestIsWrittenOverTheBufferTheNextTime(t *testing.T) {
	g := guest{functions: map[string]func([]byte) []byte{"triple": triple}}
	for i, want := range []string{"abcabcabc", "abcabcabc", "xyxyxy"} {
		payload := want[:len(want)/3]
		answer, ok := g.call(6, len(payload), request("triple", payload))
		if !ok || string(answer) != want {
			t.Fatalf("call %d: %q, %v; want %q", i, answer, ok, want)
		}
		if over := addr(answer) == addr(g.buf[6:]); over != (i > 0) {
			t.Errorf("call %d: answer written over the request's buffer = %v, want %v", i, over, i > 0)
		}
	}
}

func TestGuestCall_UnknownOperationIsAnErrorNamingIt(t *testing.T) {
	// The message github.com/wapc/wapc-guest-tinygo gives, which hosts show.
	g := guest{functions: map[string]func([]byte) []byte{}}
	answer, ok := g.call(4, 2, request("nope", "{}"))
	if ok || string(answer) != `Could not find function "nope"` {
		t.Errorf("got %q, %v", answer, ok)
	}
}

// addr is the address of the first byte of b's array (b has a capacity of at least one).
func addr(b []byte) *byte { return &b[:1][0] }
