package wapchost

import (
	"context"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero/api"
)

// Instance is one started instance of the module. Unlike Host.Call, successive calls share the
// guest's memory and globals, as they would in a host that pooled instances. Calls on one Instance
// are serialised. After a call that trapped, the guest's state is undefined: close the instance.
type Instance struct {
	host      *Host
	mod       api.Module
	guestCall api.Function
	mu        sync.Mutex

	// The exchange of one waPC call, read and written by the imports in imports.go.
	operation   string
	payload     []byte
	response    []byte
	guestError  []byte
	guestFailed bool
	hostResp    []byte
	hostErr     []byte
	logs        [][]byte // the call's log entries, kept only for Options.Record
}

// GuestError is a failure the guest reported through __guest_error: a waPC function that returned
// a Go error, or an operation the guest does not know.
type GuestError struct {
	Operation string
	Message   string
}

func (e *GuestError) Error() string {
	return fmt.Sprintf("guest call %q failed: %s", e.Operation, e.Message)
}

// TrapError is a call the guest did not finish: a trap (a Go panic, unreachable, an out-of-bounds
// access), an exit, or an interruption by ctx.
type TrapError struct {
	Operation string
	Err       error
}

func (e *TrapError) Error() string {
	return fmt.Sprintf("guest call %q trapped: %v", e.Operation, e.Err)
}

func (e *TrapError) Unwrap() error { return e.Err }

// Call invokes the waPC operation and returns the guest's response.
func (i *Instance) Call(ctx context.Context, operation string, payload []byte) ([]byte, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.operation, i.payload = operation, payload
	i.response, i.guestError, i.guestFailed, i.hostResp, i.hostErr, i.logs = nil, nil, false, nil, nil, nil
	defer func() { i.payload, i.logs = nil, nil }() // do not pin the caller's buffer

	response, err := i.call(ctx, operation, payload)
	if i.host.record != nil {
		i.host.record(Call{Operation: operation, Payload: payload, Response: response, Err: err, Logs: i.logs})
	}
	return response, err
}

func (i *Instance) call(ctx context.Context, operation string, payload []byte) ([]byte, error) {
	results, err := i.guestCall.Call(i.bind(ctx), uint64(len(operation)), uint64(len(payload)))
	if err != nil {
		return nil, &TrapError{Operation: operation, Err: err}
	}
	if uint32(results[0]) != 1 {
		msg := string(i.guestError)
		if !i.guestFailed {
			msg = "no error message set for call failure"
		}
		return nil, &GuestError{Operation: operation, Message: msg}
	}
	return i.response, nil
}

// MemorySize is the guest's linear memory in bytes; it only grows, so a reused instance that keeps
// growing leaks.
func (i *Instance) MemorySize() uint32 {
	if mem := i.mod.Memory(); mem != nil {
		return mem.Size()
	}
	return 0
}

// Memory returns a copy of the guest's linear memory: what a test compares to see the pages an
// evaluation wrote.
func (i *Instance) Memory() []byte {
	mem := i.mod.Memory()
	if mem == nil {
		return nil
	}
	b, _ := mem.Read(0, mem.Size())
	return append([]byte(nil), b...)
}

// Close releases the instance.
func (i *Instance) Close(ctx context.Context) error {
	return i.mod.Close(ctx)
}

type instanceKey struct{}

// bind lets the imports, which wazero hands only ctx and the calling module, find this instance.
func (i *Instance) bind(ctx context.Context) context.Context {
	return context.WithValue(ctx, instanceKey{}, i)
}
