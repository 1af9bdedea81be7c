//go:build tools

// Package tools names the commands go.mod and go.sum must cover: the scheduler, which build-yunikorn.sh builds,
// and the admission controller, for scenarios that run YuniKorn's own webhook beside the policy.
package tools

import (
	_ "github.com/apache/yunikorn-k8shim/pkg/cmd/admissioncontroller"
	_ "github.com/apache/yunikorn-k8shim/pkg/cmd/shim"
)
