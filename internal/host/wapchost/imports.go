package wapchost

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/build/wasi"
)

// guestCallExport is the guest's entry point: __guest_call(operation_len, payload_len) -> i32, 1 on
// success. The guest then pulls the operation and payload with __guest_request.
const guestCallExport = "__guest_call"

var i32 = api.ValueTypeI32

// instantiateImports registers the two host modules every TinyGo waPC guest imports.
func (h *Host) instantiateImports(ctx context.Context) error {
	if err := wasi.Instantiate(ctx, h.runtime); err != nil {
		return err
	}

	wapc := h.runtime.NewHostModuleBuilder("wapc")
	export := func(name string, params, results []api.ValueType, fn func(*Instance, api.Module, []uint64)) {
		wapc.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				fn(instanceOf(ctx), mod, stack)
			}), params, results).
			Export(name)
	}
	export("__guest_request", []api.ValueType{i32, i32}, nil, func(in *Instance, mod api.Module, s []uint64) {
		write(mod, s[0], []byte(in.operation))
		write(mod, s[1], in.payload)
	})
	export("__guest_response", []api.ValueType{i32, i32}, nil, func(in *Instance, mod api.Module, s []uint64) {
		in.response = read(mod, s[0], s[1])
	})
	export("__guest_error", []api.ValueType{i32, i32}, nil, func(in *Instance, mod api.Module, s []uint64) {
		in.guestError, in.guestFailed = read(mod, s[0], s[1]), true
	})
	export("__host_call", []api.ValueType{i32, i32, i32, i32, i32, i32, i32, i32}, []api.ValueType{i32},
		func(in *Instance, mod api.Module, s []uint64) {
			binding, namespace := string(read(mod, s[0], s[1])), string(read(mod, s[2], s[3]))
			operation, payload := string(read(mod, s[4], s[5])), read(mod, s[6], s[7])
			resp, err := in.host.hostCall(binding, namespace, operation, payload)
			if err == nil && in.host.record != nil {
				in.logs = append(in.logs, payload) // read copied it
			}
			in.hostResp, in.hostErr, s[0] = resp, nil, 1
			if err != nil {
				in.hostResp, in.hostErr, s[0] = nil, []byte(err.Error()), 0
			}
		})
	export("__host_response_len", nil, []api.ValueType{i32}, func(in *Instance, _ api.Module, s []uint64) {
		s[0] = uint64(len(in.hostResp))
	})
	export("__host_response", []api.ValueType{i32}, nil, func(in *Instance, mod api.Module, s []uint64) {
		write(mod, s[0], in.hostResp)
	})
	export("__host_error_len", nil, []api.ValueType{i32}, func(in *Instance, _ api.Module, s []uint64) {
		s[0] = uint64(len(in.hostErr))
	})
	export("__host_error", []api.ValueType{i32}, nil, func(in *Instance, mod api.Module, s []uint64) {
		write(mod, s[0], in.hostErr)
	})
	export("__console_log", []api.ValueType{i32, i32}, nil, func(in *Instance, mod api.Module, s []uint64) {
		_, _ = in.host.stdio.Write(append(read(mod, s[0], s[1]), '\n'))
	})
	if _, err := wapc.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate waPC imports: %w", err)
	}
	return nil
}

// hostCall answers the guest's __host_call. Only logging is offered: the policy needs no
// context-aware capability, and an unknown call must fail loudly in the guest rather than return
// an empty answer it might mistake for data.
//
//nolint:unparam // the shape of a waPC host call: a capability that answers data returns it here
func (h *Host) hostCall(binding, namespace, operation string, payload []byte) ([]byte, error) {
	if binding == "kubewarden" && namespace == "tracing" && operation == "log" {
		if err := CheckLogEntry(payload); err != nil && h.logProblem != nil {
			h.logProblem(bytes.Clone(payload), err)
		}
		_, _ = h.log.Write(append(bytes.TrimRight(payload, "\n"), '\n')) // payload is our copy
		return nil, nil
	}
	return nil, fmt.Errorf("unknown host call %s/%s/%s", binding, namespace, operation)
}

func instanceOf(ctx context.Context) *Instance {
	in, _ := ctx.Value(instanceKey{}).(*Instance)
	if in == nil {
		panic(errors.New("waPC import called outside an Instance call"))
	}
	return in
}

// read copies guest memory: a view would change under us when the guest reuses or grows it.
// Out-of-range pointers panic, which wazero turns into a trap that the caller sees as an error.
func read(mod api.Module, ptr, size uint64) []byte {
	b, ok := mod.Memory().Read(uint32(ptr), uint32(size))
	if !ok {
		panic(fmt.Errorf("guest memory [%d, %d+%d) is out of range", ptr, ptr, size))
	}
	return bytes.Clone(b)
}

func write(mod api.Module, ptr uint64, b []byte) {
	if !mod.Memory().Write(uint32(ptr), b) {
		panic(fmt.Errorf("guest memory [%d, %d+%d) is out of range", ptr, ptr, len(b)))
	}
}
