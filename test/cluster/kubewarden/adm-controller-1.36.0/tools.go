//go:build tools

// Package tools names the command go.mod and go.sum must cover: Kubewarden's controller, which
// build-kubewarden.sh builds into .tools/kubewarden/v1.36.0 for the cluster suite's Kubewarden stage
// (test/cluster/kubewarden.bats).
package tools

import (
	_ "github.com/kubewarden/adm-controller/cmd/controller"
)
