package wasmbench

import (
	"context"
	"io"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost"
)

// Wazero is the project's own host (internal/wapchost) as a benchmark engine.
type Wazero struct{}

// Name implements Engine.
func (Wazero) Name() string { return "wazero compiler (the project's host)" }

// Load implements Engine.
func (Wazero) Load(ctx context.Context, wasm []byte) (Module, error) {
	h, err := wapchost.Load(ctx, wasm, wapchost.Options{Log: io.Discard, Stdio: io.Discard})
	if err != nil {
		return nil, err
	}
	return wazeroModule{h}, nil
}

type wazeroModule struct{ *wapchost.Host }

func (m wazeroModule) NewInstance(ctx context.Context) (Instance, error) {
	return m.Host.NewInstance(ctx)
}
