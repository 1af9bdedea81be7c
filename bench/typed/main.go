// Command typed is the benchmark's comparison point: what a typical Go policy costs, decoding the request
// with encoding/json into the typed Kubernetes structs of github.com/kubewarden/k8s-objects (as
// Kubewarden's Go policy template does) and accepting it. The policy must stay far below this.
package main

import (
	"encoding/json"

	appsv1 "github.com/kubewarden/k8s-objects/api/apps/v1"
	batchv1 "github.com/kubewarden/k8s-objects/api/batch/v1"
	corev1 "github.com/kubewarden/k8s-objects/api/core/v1"
	wapc "github.com/wapc/wapc-guest-tinygo"
)

type payload struct {
	Request struct {
		Kind struct {
			Kind string `json:"kind"`
		} `json:"kind"`
		UserInfo struct {
			Username string   `json:"username"`
			Groups   []string `json:"groups"`
		} `json:"userInfo"`
		Object json.RawMessage `json:"object"`
	} `json:"request"`
}

func validate(data []byte) ([]byte, error) {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	var obj any
	switch p.Request.Kind.Kind {
	case "Pod":
		obj = &corev1.Pod{}
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "Job":
		obj = &batchv1.Job{}
	default:
		obj = &map[string]any{}
	}
	if len(p.Request.Object) > 0 {
		if err := json.Unmarshal(p.Request.Object, obj); err != nil {
			return nil, err
		}
	}
	return []byte(`{"accepted":true}`), nil
}

func main() {
	wapc.RegisterFunctions(wapc.Functions{
		"validate":          validate,
		"validate_settings": func([]byte) ([]byte, error) { return []byte(`{"valid":true}`), nil },
		"protocol_version":  func([]byte) ([]byte, error) { return []byte(`"v1"`), nil },
	})
}
