package malformed

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
	recorded "github.com/seed-a6d343df/yunikorn-user-info-policy/test/corpus"
)

// TestSettings_DeepAndLongPatternsGetAnAnswerNeverATrap runs deep and long patterns through policy.wasm's
// validate_settings (and validate), where Go's recursive regexp parser and compiler meet TinyGo's small
// stack: a valid 110-deep pattern used to trap validate_settings, which stops policy-server from starting.
// Patterns over the limits (1,024 bytes, groups nested 32 deep) must be refused with a message; patterns
// at the limits must compile in the guest.
func TestSettings_DeepAndLongPatternsGetAnAnswerNeverATrap(t *testing.T) {
	var stdio bytes.Buffer
	host, err := wapchost.Load(t.Context(), guesttest.Policy(t), wapchost.Options{Stdio: &stdio, Record: recorded.Recorder()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(t.Context()) })

	nest := func(n int, opening, closing string) string {
		return "^" + strings.Repeat(opening, n) + "a" + strings.Repeat(closing, n) + "$"
	}
	for _, tc := range []struct {
		name, pattern, want string // want "" means valid
	}{
		{"32 deep", nest(32, "(", ")"), ""},
		{"32 deep, non-capturing, repeated", nest(32, "(?:", ")+"), ""},
		{"32 deep, alternations", nest(32, "(?:b|", ")"), ""},
		{"33 deep", nest(33, "(", ")"), "systemUsers[0]: the pattern nests groups 33 deep, over the limit of 32"},
		{"110 deep", nest(110, "(", ")"), "nests groups 110 deep"},
		{"110 deep, non-capturing", nest(110, "(?:", ")"), "nests groups 110 deep"},
		{"300 deep, within 1,024 bytes", nest(300, "(", ")"), "nests groups 300 deep"},
		{"10,000 deep", nest(10000, "(", ")"), "bytes long, over the limit of 1,024 bytes"},
		{"brackets inside classes", nest(300, "[(]", ""), ""},
		{"escaped parentheses", nest(300, `\(`, ""), ""},
		{"1,024 bytes", "^" + strings.Repeat("a", 1022) + "$", ""},
		{"1,025 bytes", "^" + strings.Repeat("a", 1023) + "$", "systemUsers[0]: the pattern is 1025 bytes long, over the limit of 1,024 bytes"},
		{"1 MB", strings.Repeat("a", 1<<20), "the pattern is 1048576 bytes long"},
		{"large repetitions within 1,024 bytes", strings.Repeat("(?:a{1000})", 90), ""},
		{"matches the empty string", nest(32, "(?:", ")?") + "|", "matches the empty string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings, err := json.Marshal(map[string]any{"systemUsers": []string{tc.pattern}})
			if err != nil {
				t.Fatal(err)
			}
			stdio.Reset()
			began := time.Now()
			out, err := host.Call(t.Context(), "validate_settings", settings)
			if err != nil {
				t.Fatalf("validate_settings failed (a trap stops policy-server): %v\nguest output: %s", err, short(stdio.String()))
			}
			var resp struct {
				Valid   *bool  `json:"valid"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(out, &resp); err != nil || resp.Valid == nil {
				t.Fatalf("not a settings answer: %v: %s", err, short(string(out)))
			}
			t.Logf("%d bytes: valid %v in %v: %s", len(tc.pattern), *resp.Valid, time.Since(began).Round(time.Millisecond), short(resp.Message))
			if tc.want == "" && !*resp.Valid || tc.want != "" && (*resp.Valid || !strings.Contains(resp.Message, tc.want)) {
				t.Fatalf("got valid %v, message %q; want %q", *resp.Valid, resp.Message, tc.want)
			}

			// validate with the same settings (kwctl and policy-server refuse them first, other hosts may
			// not): an answer, a 400 for invalid settings, never a trap.
			payload := []byte(`{"request":{"operation":"CREATE","kind":{"group":"","kind":"Pod"},` +
				`"userInfo":{"username":"system:serviceaccount:kube-system:x"},"object":{"metadata":{"annotations":` +
				`{"yunikorn.apache.org/user.info":"{\"user\":\"alice\"}"}}}},"settings":` + string(settings) + `}`)
			out, err = host.Call(t.Context(), "validate", payload)
			if err != nil {
				t.Fatalf("validate failed: %v\nguest output: %s", err, short(stdio.String()))
			}
			var answer struct {
				Accepted *bool `json:"accepted"`
				Code     int   `json:"code"`
			}
			if err := json.Unmarshal(out, &answer); err != nil || answer.Accepted == nil {
				t.Fatalf("not a validate answer: %v: %s", err, short(string(out)))
			}
			if tc.want != "" && !strings.Contains(tc.want, "matches the empty string") && (*answer.Accepted || answer.Code != 400) {
				t.Fatalf("validate with settings over the limits: %s", short(string(out)))
			}
		})
	}
}
