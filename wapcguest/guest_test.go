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
	if cap(g.buf) < 2000 {
		t.Errorf("after a payload of 2,000 bytes the buffer holds %d", cap(g.buf))
	}
}

// The first buffer is exactly as large as the first payload (a fresh instance writes no page for room
// it will not use); a buffer that replaces it has room to spare, a power of two, so that requests a
// little larger each time replace it once.
func TestGuestCall_OnlyAReplacedBufferHasRoomToSpare(t *testing.T) {
	g := guest{functions: map[string]func([]byte) []byte{"echo": echo}}
	for _, c := range []struct{ payload, capacity int }{{1000, 1000}, {1500, 2048}, {1900, 2048}, {2048, 2048}, {2049, 4096}} {
		payload := string(bytes.Repeat([]byte("x"), c.payload))
		if answer, ok := g.call(4, len(payload), request("echo", payload)); !ok || string(answer) != payload {
			t.Fatalf("echo %d bytes: %v", c.payload, ok)
		}
		if cap(g.buf) != c.capacity {
			t.Errorf("after a payload of %d bytes the buffer holds %d, want %d", c.payload, cap(g.buf), c.capacity)
		}
	}
}

// triple answers its payload three times: over the payload when its capacity allows (as Evaluator.Validate
// does), otherwise in a buffer of its own.
func triple(payload []byte) []byte {
	if cap(payload) >= 3*len(payload) {
		return append(append(payload, payload...), payload...)
	}
	return bytes.Repeat(payload, 3)
}

// An answer larger than its request, in a buffer of its own, becomes the buffer: the next answer as large
// is written over it, and no buffer is made for it.
func TestGuestCall_AnAnswerLargerThanItsRequestIsWrittenOverTheBufferTheNextTime(t *testing.T) {
	g := guest{functions: map[string]func([]byte) []byte{"triple": triple}}
	var first *byte
	for i, want := range []string{"abcabcabc", "abcabcabc", "xyxyxy"} {
		payload := want[:len(want)/3]
		var read *byte // where the payload was read
		answer, ok := g.call(6, len(payload), func(operation, p []byte) {
			request("triple", payload)(operation, p)
			read = addr(p)
		})
		if !ok || string(answer) != want {
			t.Fatalf("call %d: %q, %v; want %q", i, answer, ok, want)
		}
		if i == 0 {
			first = addr(answer)
		}
		if addr(g.buf) != first {
			t.Errorf("call %d: the buffer is not the first answer's", i)
		}
		if over := addr(answer) == read; over != (i > 0) {
			t.Errorf("call %d: answer written over the request's buffer = %v, want %v", i, over, i > 0)
		}
	}
}

// An operation's name longer than the guest's array for it is read all the same.
func TestGuestCall_ALongOperationName(t *testing.T) {
	name := string(bytes.Repeat([]byte("o"), 40))
	g := guest{functions: map[string]func([]byte) []byte{name: echo}}
	if answer, ok := g.call(len(name), 2, request(name, "{}")); !ok || string(answer) != "{}" {
		t.Errorf("got %q, %v", answer, ok)
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
