package kwctl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// TestPolicy_SameDecisionInBothPayloadForms runs every request fixture through policy.wasm as written
// and as policy-server hands it over (keys sorted, nulls and unknown members dropped): every rule must
// decide the same, and the user must see the same patch, message and warnings.
func TestPolicy_SameDecisionInBothPayloadForms(t *testing.T) {
	host, err := wapchost.Load(context.Background(), guesttest.Policy(t), wapchost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	fixtures, err := filepath.Glob(filepath.Join(guesttest.RepoRoot(), "testdata", "requests", "*.json"))
	if err != nil || len(fixtures) < 20 {
		t.Fatalf("fixtures: %v (%d)", err, len(fixtures))
	}
	settings := []string{
		`{}`,
		`{"onUntrustedAnnotation":"reject"}`,
		`{"bypassAuth":true,"externalUsers":["^airflow$"],"externalGroups":["^spark-submitters$"]}`,
		`{"bypassControllers":false}`,
	}
	for _, fixture := range fixtures {
		input, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range settings {
			var answers [2]string
			for i, form := range []Payload{PayloadRaw, PayloadPolicyServer} {
				resp, err := Run(context.Background(), host, input, json.RawMessage(s), form)
				if err != nil {
					t.Fatalf("%s %s %s: %v", filepath.Base(fixture), s, form, err)
				}
				answers[i] = string(resp.JSON())
			}
			if diff := cmp.Diff(answers[0], answers[1]); diff != "" {
				t.Errorf("%s with %s: raw vs policy-server form (-raw +policy-server):\n%s", filepath.Base(fixture), s, diff)
			}
		}
	}
}
