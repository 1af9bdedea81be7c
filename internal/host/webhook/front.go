package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
)

// FrontOptions configures a Front.
type FrontOptions struct {
	// Upstream is the policy server's plain-HTTP base URL (http://127.0.0.1:3000): a request's path and
	// query are appended to it.
	Upstream string
	// Ready, when set, is the URL whose answer /readyz and /healthz pass on (policy-server's readiness probe).
	Ready string
	// Log and Record are as in Options.
	Log, Record io.Writer
}

// Front passes every request, byte for byte, to a policy server over loopback and its answer back,
// recording both as Handler does: the suites then read the same record whichever server decides.
type Front struct {
	opts   FrontOptions
	client *http.Client
	h      Handler // its logger and record
}

// NewFront returns a Front for opts.
func NewFront(opts FrontOptions) *Front {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &Front{opts: opts, client: &http.Client{Timeout: 35 * time.Second},
		h: Handler{opts: Options{Log: opts.Log, Record: opts.Record}}}
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	target := f.opts.Upstream + r.URL.RequestURI()
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		if f.opts.Ready == "" {
			fmt.Fprintln(w, "ok")
			return
		}
		target = f.opts.Ready
	}
	// Above policy-server's own limit, so that it is policy-server that refuses a large body.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4*DefaultMaxBodyBytes))
	if err != nil {
		http.Error(w, "cannot read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	up, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	up.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	resp, err := f.client.Do(up)
	if err != nil {
		f.h.logf("%s %s %s -> no answer from the policy server: %v", start.UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path, err)
		http.Error(w, "no answer from the policy server: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		http.Error(w, "cannot read the policy server's answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
	took := time.Since(start)
	if r.Method != http.MethodPost {
		return
	}
	if resp.StatusCode != http.StatusOK {
		f.h.logf("%s %s %s -> HTTP %d from the policy server: %s", start.UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path,
			resp.StatusCode, strings.TrimSpace(string(answer)))
		return
	}
	f.note(start, body, answer, took)
}

// note logs and records one answered review; a review or answer it cannot read is logged as such.
func (f *Front) note(start time.Time, body, answer []byte, took time.Duration) {
	var rv struct {
		Request json.RawMessage `json:"request"`
	}
	var ans struct {
		Response *kwctl.Response `json:"response"`
	}
	var req struct {
		UID       string `json:"uid"`
		Operation string `json:"operation"`
	}
	var info requestInfo
	if json.Unmarshal(body, &rv) != nil || json.Unmarshal(rv.Request, &req) != nil || json.Unmarshal(rv.Request, &info) != nil ||
		json.Unmarshal(answer, &ans) != nil || ans.Response == nil {
		f.h.logf("%s the review or the policy server's answer is not an AdmissionReview: %.200s", start.UTC().Format(time.RFC3339Nano), answer)
		return
	}
	kr := &kwctl.Request{UID: req.UID, Operation: req.Operation}
	f.h.logf("%s", logLine(start, kr, &info, ans.Response, took))
	if f.opts.Record != nil {
		f.h.record(start, kr, &info, ans.Response, took)
	}
}
