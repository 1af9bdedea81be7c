// Command yunikorn-user-info-policy is the Kubewarden policy module. This file only wires the waPC
// exports and logging; every decision lives in package policy.
package main

import (
	_ "github.com/kubewarden/policy-sdk-go/protocol" // registers protocol_version ("v1") in its init
	wapc "github.com/wapc/wapc-guest-tinygo"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

func main() {
	logger := policy.NewLogger(hostLog{})
	// policy never returns a Go error: policy-server would turn it into a denial with code 500 that tells
	// the user nothing (docs/rules.md "Bad input").
	wapc.RegisterFunctions(wapc.Functions{
		"validate": func(payload []byte) ([]byte, error) {
			return policy.ValidateOver(payload, logger), nil
		},
		"validate_settings": func(payload []byte) ([]byte, error) {
			return policy.ValidateSettings(payload), nil
		},
	})
}

// hostLog sends each line onelog writes (one JSON object and its newline per Write) to the host, as
// the SDK's KubewardenLogWriter does, without its buffer: that writer copies every line into a
// bytes.Buffer and out again, and the writer itself, made at start-up, lives in a page of the
// pre-initialised memory that every logged request then writes (a page fault of its own on wasmtime;
// docs/runtime.md "Pages").
type hostLog struct{}

func (hostLog) Write(line []byte) (int, error) {
	_, _ = wapc.HostCall("kubewarden", "tracing", "log", line) // as the SDK's writer: a lost line is not an error
	return len(line), nil
}
