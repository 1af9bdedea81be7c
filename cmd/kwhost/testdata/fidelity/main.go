// Command fidelity is a test guest for kwhost: a waPC policy whose settings say how to misbehave, so
// that the tests see the host answer each failure the way policy-server does. Built by the tests with
// TinyGo; never part of the policy.
package main

import (
	"strings"

	wapc "github.com/wapc/wapc-guest-tinygo"
)

var spins int

func main() {
	wapc.RegisterFunctions(wapc.Functions{
		"validate_settings": func([]byte) ([]byte, error) { return []byte(`{"valid":true}`), nil },
		"validate": func(payload []byte) ([]byte, error) {
			p := string(payload)
			switch {
			case strings.Contains(p, `"mode":"warn"`): // onelog's default text for WARN
				if _, err := wapc.HostCall("kubewarden", "tracing", "log", []byte(`{"level":"warn","message":"refused"}`)); err != nil {
					return nil, err
				}
			case strings.Contains(p, `"mode":"warning"`):
				if _, err := wapc.HostCall("kubewarden", "tracing", "log", []byte(`{"level":"warning","message":"refused"}`)); err != nil {
					return nil, err
				}
			case strings.Contains(p, `"mode":"panic"`):
				panic("kaboom")
			case strings.Contains(p, `"mode":"spin"`):
				for spins >= 0 {
					spins++
				}
			case strings.Contains(p, `"mode":"echo"`): // the payload as received, in the message
				return []byte(`{"accepted":false,"code":400,"message":` + quote(p) + `}`), nil
			case strings.Contains(p, `"mode":"answer-case"`): // serde matches member names exactly
				return []byte(`{"accepted":true,"Accepted":false}`), nil
			case strings.Contains(p, `"mode":"answer-twice"`): // serde refuses a member given twice
				return []byte(`{"accepted":false,"accepted":true}`), nil
			}
			return []byte(`{"accepted":true}`), nil
		},
	})
}

// quote makes a JSON string of s (a request file holds no control characters but new lines).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
