//go:build tools

// Package tools names the commands build-yunikorn.sh builds, so that go.mod and go.sum hold what they need.
package tools

import (
	_ "github.com/apache/yunikorn-k8shim/pkg/cmd/admissioncontroller"
	_ "github.com/apache/yunikorn-k8shim/pkg/cmd/shim"
)
