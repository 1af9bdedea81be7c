package webhook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/webhook"
)

// The front hands the policy server the review as the API server sent it and the API server the
// policy server's answer as it came (status, type, bytes), and records the answered review.
func TestFront_PassesBothWaysAndRecords(t *testing.T) {
	const answer = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u1","allowed":false,` +
		`"status":{"message":"no","code":400},"auditAnnotations":null,"warnings":["w"]}}`
	var got []byte
	var gotPath string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.RequestURI()
		got, _ = io.ReadAll(r.Body)
		if strings.Contains(string(got), "no-user-info") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"message":"missing field userInfo","status":422}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(upstream.Close)
	var record bytes.Buffer
	front := httptest.NewTLSServer(webhook.NewFront(webhook.FrontOptions{Upstream: upstream.URL, Record: &record}))
	t.Cleanup(front.Close)

	sent := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","operation":"CREATE",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"team-a","userInfo":{"username":"bob"}}}`
	status, body := postTo(t, front, "/validate/p?timeout=10s", sent)
	if status != http.StatusOK || body != answer || string(got) != sent || gotPath != "/validate/p?timeout=10s" {
		t.Fatalf("status %d body %s; upstream got %s at %s", status, body, got, gotPath)
	}
	var line struct {
		UID, Operation, Kind, Namespace string
		Allowed                         bool
		Warnings                        []string
		UserInfo                        json.RawMessage
	}
	if err := json.Unmarshal(record.Bytes(), &line); err != nil {
		t.Fatalf("record %q: %v", record.String(), err)
	}
	if line.UID != "u1" || line.Operation != "CREATE" || line.Kind != "Pod" || line.Namespace != "team-a" || line.Allowed ||
		len(line.Warnings) != 1 || string(line.UserInfo) != `{"username":"bob"}` {
		t.Errorf("record %s", record.String())
	}

	record.Reset()
	status, body = postTo(t, front, "/validate/p", `{"request":{"uid":"no-user-info"}}`)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, "missing field userInfo") || record.Len() != 0 {
		t.Errorf("status %d body %s, record %q: want the policy server's 422 passed on, nothing recorded", status, body, record.String())
	}
}

func postTo(t *testing.T, ts *httptest.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
