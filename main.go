// Command yunikorn-user-info-policy is the Kubewarden policy module. This file only wires the waPC
// exports and logging; every decision lives in package policy.
package main

import (
	sdk "github.com/kubewarden/policy-sdk-go"
	_ "github.com/kubewarden/policy-sdk-go/protocol" // registers protocol_version ("v1") in its init
	wapc "github.com/wapc/wapc-guest-tinygo"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy"
)

func main() {
	logger := policy.NewLogger(&sdk.KubewardenLogWriter{})
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
