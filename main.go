// Command yunikorn-user-info-policy is the Kubewarden policy module. This file only wires the waPC
// exports (package wapcguest) and logging; every decision lives in package policy.
package main

import (
	"github.com/kubewarden/policy-sdk-go/constants"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/wapcguest"
)

// evaluator is kept from one evaluation to the next.
var evaluator *policy.Evaluator

// reserved is the request size the storage is made for at start-up: a Pod or a workload is a few kilobytes.
const reserved = 4096

func main() {
	// policy never fails a call (docs/rules.md "Bad input").
	wapcguest.Register(wapcguest.Functions{
		"validate":          validate,
		"validate_settings": policy.ValidateSettings,
		// The answer the SDK's protocol package registers.
		"protocol_version": func([]byte) []byte { return []byte(`"` + constants.ProtocolVersion + `"`) },
	})
	// After Register: the evaluator and its reserved records start the heap page it leaves free, which
	// every request writes (docs/runtime.md "Pages").
	evaluator = new(policy.Evaluator)
	evaluator.LogTo(policy.NewLogger(hostLog{}))
	evaluator.Reserve(reserved)
}

// validate is the "validate" operation: the evaluator, once main has made it.
func validate(payload []byte) []byte { return evaluator.Validate(payload) }

// hostLog sends each line the logger writes to the host, as the SDK's KubewardenLogWriter does but
// without its buffer (docs/runtime.md "Pages").
type hostLog struct{}

func (hostLog) Write(line []byte) (int, error) {
	wapcguest.HostLog(line) // as the SDK's writer: a lost line is not an error
	return len(line), nil
}
