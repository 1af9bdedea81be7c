// Command yunikorn-user-info-policy is the Kubewarden policy module. This file only wires the waPC
// exports (package wapcguest) and logging; every decision lives in package policy.
package main

import (
	"github.com/kubewarden/policy-sdk-go/constants"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/wapcguest"
)

// storage is what the policy keeps from one evaluation to the next, in an instance kept for many
// (policy.Storage).
var storage policy.Storage

// reserved is the size of request the storage is made for at start-up (policy.Storage.Reserve): a
// Pod or a workload as an API server sends them is a few kilobytes.
const reserved = 4096

func main() {
	logger := policy.NewLogger(hostLog{})
	// policy never fails a call: policy-server would turn a guest error into a denial with code 500 that
	// tells the user nothing (docs/rules.md "Bad input").
	wapcguest.Register(wapcguest.Functions{
		"validate": func(payload []byte) []byte {
			return policy.ValidateOver(payload, logger, &storage)
		},
		"validate_settings": policy.ValidateSettings,
		// The SDK's protocol package registers the same answer in its init, through the waPC package.
		"protocol_version": func([]byte) []byte { return []byte(`"` + constants.ProtocolVersion + `"`) },
	})
	// After Register, which leaves the heap's free space on a page of its own: the storage's reserved
	// records start that page, and a request's buffer and its other allocations follow them.
	storage.Reserve(reserved)
}

// hostLog sends each line the logger writes (one JSON object and its newline per Write) to the host, as
// the SDK's KubewardenLogWriter does, without its buffer: that writer copies every line into a
// bytes.Buffer and out again, and the writer itself, made at start-up, lives in a page of the
// pre-initialised memory that every logged request then writes (a page fault of its own on wasmtime;
// docs/runtime.md "Pages").
type hostLog struct{}

func (hostLog) Write(line []byte) (int, error) {
	wapcguest.HostLog(line) // as the SDK's writer: a lost line is not an error
	return len(line), nil
}
