package kwctl

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// The same semantics through real wasm: the scripted guest answers according to its settings.
func TestScriptedGuest_ThroughWapchost(t *testing.T) {
	var logs bytes.Buffer
	host, err := wapchost.Load(context.Background(), guesttest.Guest(t, "internal/host/kwctl/testdata/scripted"),
		wapchost.Options{Log: &logs})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())

	for _, tc := range []struct {
		name, settings, want string
	}{
		{"allowed", `{}`,
			`{` + deployUID + `,"allowed":true,"auditAnnotations":null,"warnings":null}`},
		{"rejected", `{"response":{"accepted":false,"message":"denied","code":400,"warnings":["w"]}}`,
			`{` + deployUID + `,"allowed":false,"status":{"message":"denied","code":400},"auditAnnotations":null,"warnings":["w"]}`},
		{"guest error", `{"fail":"bad request object"}`,
			`{` + deployUID + `,"allowed":false,"status":{"message":"internal server error: Guest call failure: bad request object","code":500},"auditAnnotations":null,"warnings":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := Run(context.Background(), host, readFixture(t, "deployment-create.json"), json.RawMessage(tc.settings), PayloadRaw)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(resp.JSON()); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}

	t.Run("trap", func(t *testing.T) {
		resp, err := Run(context.Background(), host, readFixture(t, "deployment-create.json"), json.RawMessage(`{"panic":true}`), PayloadRaw)
		if err != nil {
			t.Fatal(err)
		}
		msg := *resp.Status.Message
		if resp.Allowed || *resp.Status.Code != 500 ||
			!strings.HasPrefix(msg, "internal server error: Guest call failure: ") || !strings.Contains(msg, "unreachable") {
			t.Errorf("trap gave %s", resp.JSON())
		}
	})

	t.Run("invalid settings", func(t *testing.T) {
		_, err := Run(context.Background(), host, readFixture(t, "deployment-create.json"), json.RawMessage(`{"invalid":"no such queue"}`), PayloadRaw)
		if err == nil || err.Error() != "Provided settings are not valid: no such queue" {
			t.Errorf("error = %v", err)
		}
	})

	t.Run("logs", func(t *testing.T) {
		logs.Reset()
		if _, err := Run(context.Background(), host, readFixture(t, "deployment-create.json"), json.RawMessage(`{"log":"hello"}`), PayloadRaw); err != nil {
			t.Fatal(err)
		}
		if want := `{"level":"info","message":"hello"}` + "\n"; logs.String() != want {
			t.Errorf("logs = %q, want %q", logs.String(), want)
		}
	})
}
