package wasmbench

import (
	"context"
	"io"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// Wazero is the project's own host (internal/host/wapchost) as a benchmark engine.
type Wazero struct {
	// Interruptible compiles the modules as `kwhost serve` does for its --policy-timeout (wazero's
	// close-on-context-done: a check at every function entry and loop), to measure what that costs.
	Interruptible bool
}

// Name implements Engine.
func (w Wazero) Name() string {
	if w.Interruptible {
		return "wazero compiler, interruptible as in kwhost serve (the project's host)"
	}
	return "wazero compiler (the project's host)"
}

// Load implements Engine.
func (w Wazero) Load(ctx context.Context, wasm []byte) (Module, error) {
	h, err := wapchost.Load(ctx, wasm, wapchost.Options{Log: io.Discard, Stdio: io.Discard, Interruptible: w.Interruptible})
	if err != nil {
		return nil, err
	}
	return wazeroModule{h}, nil
}

type wazeroModule struct{ *wapchost.Host }

func (m wazeroModule) NewInstance(ctx context.Context) (Instance, error) {
	return m.Host.NewInstance(ctx)
}
