package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
)

const (
	// DefaultMaxBodyBytes bounds an AdmissionReview as policy-server does (2 MB): a larger review
	// is refused with HTTP 413 before any policy runs.
	DefaultMaxBodyBytes = 2 << 20
	// DefaultEvalTimeout is policy-server's --policy-timeout default. The API server's own webhook
	// timeout (10 s by default, at most 30 s) is honoured too when it is shorter: it sends it as
	// ?timeout=.
	DefaultEvalTimeout = 2 * time.Second
)

// Options configures a Handler. The zero value is usable: settings {}, logs discarded.
type Options struct {
	// Settings is the policy's settings object; nil means {}.
	Settings json.RawMessage
	// Log receives one line per request: who asked for what, and the decision.
	Log io.Writer
	// Record, when set, receives one JSON object per line for every evaluated request, with the
	// userInfo exactly as the API server sent it: the cluster suite reads it to show which identity
	// the controllers use.
	Record io.Writer
	// MaxBodyBytes bounds the request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// EvalTimeout bounds one evaluation (default DefaultEvalTimeout). It only stops a runaway guest
	// when the host was loaded with wapchost.Options.Interruptible.
	EvalTimeout time.Duration
	// MaxInFlight bounds the evaluations running at once (default 4 × GOMAXPROCS); further requests
	// wait for a slot until their deadline, then get 503.
	MaxInFlight int
	// Payload is the form the policy receives the request in (default kwctl.PayloadPolicyServer).
	Payload kwctl.Payload
	// NoMutations serves the policy as policy-server serves one not allowed to mutate (`mutating: false`):
	// an answer with a patch becomes a rejection naming PolicyID (kwctl.RefuseMutation).
	NoMutations bool
	// PolicyID is the policy's name in policy-server's messages (default "yunikorn-user-info").
	PolicyID string
}

// Handler answers AdmissionReviews with the policy's decision. It is safe for concurrent use.
type Handler struct {
	ev       kwctl.Evaluator
	settings json.RawMessage
	opts     Options
	slots    chan struct{}
	logMu    sync.Mutex
}

// New validates the settings with the policy, as policy-server does at start-up, and returns a
// *kwctl.SettingsError ("Provided settings are not valid: ...") when the policy refuses them.
func New(ctx context.Context, ev kwctl.Evaluator, opts Options) (*Handler, error) {
	if len(opts.Settings) == 0 {
		opts.Settings = json.RawMessage("{}")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.EvalTimeout <= 0 {
		opts.EvalTimeout = DefaultEvalTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4 * runtime.GOMAXPROCS(0)
	}
	if opts.Payload == "" {
		opts.Payload = kwctl.PayloadPolicyServer
	}
	if opts.PolicyID == "" {
		opts.PolicyID = "yunikorn-user-info"
	}
	settings, err := kwctl.SettingsFor(opts.Settings, opts.Payload)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	opts.Settings = settings
	if err := kwctl.ValidateSettings(ctx, ev, opts.Settings); err != nil {
		return nil, err
	}
	return &Handler{ev: ev, settings: opts.Settings, opts: opts, slots: make(chan struct{}, opts.MaxInFlight)}, nil
}

// review is the part of an AdmissionReview the handler checks before the policy sees the request.
type review struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    json.RawMessage `json:"request"`
}

// requestInfo is what the log line and the record show about a request.
type requestInfo struct {
	Kind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"kind"`
	SubResource string          `json:"subResource"`
	Namespace   string          `json:"namespace"`
	Name        string          `json:"name"`
	DryRun      bool            `json:"dryRun"`
	UserInfo    json.RawMessage `json:"userInfo"`
	Object      struct {
		Metadata struct {
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	} `json:"object"`
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		fmt.Fprintln(w, "ok")
		return
	}
	start := time.Now()
	fail := func(code int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		h.logf("%s %s %s -> HTTP %d: %s", start.UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path, code, msg)
		http.Error(w, msg, code)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "an AdmissionReview must be POSTed")
		return
	}
	// What policy-server refuses before any policy runs, it answers as its web framework does (axum's
	// Json extractor): the status, and {"message": ..., "status": ...}.
	refuse := func(code int, msg string) {
		h.logf("%s %s %s -> HTTP %d: %s", start.UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path, code, msg)
		out, err := json.Marshal(struct {
			Message string `json:"message"`
			Status  int    `json:"status"`
		}{msg, code})
		if err != nil { // not reached: a string and an int always encode
			out = []byte(`{"message":"internal error","status":500}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(out)
	}
	if !jsonContentType(r.Header.Get("Content-Type")) {
		refuse(http.StatusUnsupportedMediaType, "Expected request with `Content-Type: application/json`")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(http.StatusRequestEntityTooLarge, "Failed to buffer the request body: length limit exceeded")
			return
		}
		fail(http.StatusBadRequest, "cannot read the body: %v", err)
		return
	}
	typed, err := kwctl.ReadReview(body)
	if reqErr := (*kwctl.RequestError)(nil); errors.As(err, &reqErr) {
		refuse(reqErr.PolicyServerAnswer())
		return
	}
	// policy-server reads its typed review whatever apiVersion and kind say; the stand-in also wants
	// v1, since v1beta1 would want a v1beta1 answer and the webhook configuration asks for v1 only.
	var rv review
	if err := json.Unmarshal(body, &rv); err != nil {
		fail(http.StatusBadRequest, "the body is not an AdmissionReview: %v", err)
		return
	}
	if rv.APIVersion != "admission.k8s.io/v1" || rv.Kind != "AdmissionReview" {
		fail(http.StatusBadRequest, "want an admission.k8s.io/v1 AdmissionReview, got apiVersion %q kind %q", rv.APIVersion, rv.Kind)
		return
	}
	input := typed
	if h.opts.Payload == kwctl.PayloadRaw {
		input = rv.Request
	}
	req, err := kwctl.RequestOf(input)
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	var info requestInfo
	_ = json.Unmarshal(rv.Request, &info) // ReadReview has checked it is an object; the rest is for the log

	ctx, cancel := context.WithTimeout(r.Context(), h.timeout(r))
	defer cancel()
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		fail(http.StatusServiceUnavailable, "no evaluation slot free before the deadline (%d in flight)", cap(h.slots))
		return
	}
	resp, err := kwctl.Validate(ctx, h.ev, req, h.settings)
	<-h.slots
	took := time.Since(start)
	if err != nil {
		// The module did not start: policy-server has no AdmissionReview to send either, and the
		// webhook's failurePolicy decides.
		fail(http.StatusInternalServerError, "the policy could not be started: %v", err)
		return
	}
	if h.opts.NoMutations {
		resp = kwctl.RefuseMutation(resp, h.opts.PolicyID)
	}

	out := make([]byte, 0, 256+len(resp.Patch)*2)
	out = append(out, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":`...)
	out = append(append(out, resp.JSON()...), "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)

	h.logf("%s", logLine(start, req, &info, resp, took))
	if h.opts.Record != nil {
		h.record(start, req, &info, resp, took)
	}
}

// jsonContentType is axum's test of a JSON body: application/json, or an application/*+json type.
func jsonContentType(header string) bool {
	mt, _, err := mime.ParseMediaType(header)
	return err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")))
}

// timeout is the shorter of the configured bound and the API server's own (?timeout=10s).
func (h *Handler) timeout(r *http.Request) time.Duration {
	d := h.opts.EvalTimeout
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 && t < d {
		d = t
	}
	return d
}

func (h *Handler) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	h.logMu.Lock()
	defer h.logMu.Unlock()
	_, _ = io.WriteString(h.opts.Log, line+"\n")
}

// logLine is one request on one line:
//
//	2026-11-22T10:40:01.123Z CREATE apps/v1 Deployment demo/web by alice [devops system:authenticated] -> allowed, patched (1 op), 1 warning in 3.1ms uid=...
func logLine(start time.Time, req *kwctl.Request, info *requestInfo, resp *kwctl.Response, took time.Duration) string {
	var b strings.Builder
	gv := info.Kind.Version
	if info.Kind.Group != "" {
		gv = info.Kind.Group + "/" + gv
	}
	name := info.Name
	if name == "" && info.Object.Metadata.GenerateName != "" {
		name = info.Object.Metadata.GenerateName + "*"
	}
	if info.Namespace != "" {
		name = info.Namespace + "/" + name
	}
	kind := info.Kind.Kind
	if info.SubResource != "" {
		kind += "/" + info.SubResource
	}
	var user struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	}
	_ = json.Unmarshal(info.UserInfo, &user)
	fmt.Fprintf(&b, "%s %s %s %s %s by %q %q ->", start.UTC().Format(time.RFC3339Nano), req.Operation, gv, kind, name, user.Username, user.Groups)
	if info.DryRun {
		b.WriteString(" (dry run)")
	}
	if resp.Allowed {
		b.WriteString(" allowed")
	} else {
		b.WriteString(" REJECTED")
	}
	if ops, err := resp.PatchOps(); err == nil && len(ops) > 0 {
		fmt.Fprintf(&b, ", patched (%d op)", len(ops))
	}
	if resp.Status != nil {
		if resp.Status.Code != nil {
			fmt.Fprintf(&b, " code %d", *resp.Status.Code)
		}
		if resp.Status.Message != nil {
			fmt.Fprintf(&b, " %q", *resp.Status.Message)
		}
	}
	for _, w := range resp.Warnings {
		fmt.Fprintf(&b, " warning %q", w)
	}
	fmt.Fprintf(&b, " in %s uid=%s", took.Round(10*time.Microsecond), req.UID)
	return b.String()
}

// entry is one line of the record: the request as the API server described it, and the answer.
type entry struct {
	Time         string          `json:"time"`
	UID          string          `json:"uid"`
	Operation    string          `json:"operation"`
	Group        string          `json:"group"`
	Kind         string          `json:"kind"`
	SubResource  string          `json:"subResource,omitempty"`
	Namespace    string          `json:"namespace,omitempty"`
	Name         string          `json:"name,omitempty"`
	GenerateName string          `json:"generateName,omitempty"`
	DryRun       bool            `json:"dryRun"`
	UserInfo     json.RawMessage `json:"userInfo"`
	Allowed      bool            `json:"allowed"`
	Patch        []kwctl.PatchOp `json:"patch,omitempty"`
	Status       *kwctl.Status   `json:"status,omitempty"`
	Warnings     []string        `json:"warnings,omitempty"`
	Micros       int64           `json:"micros"`
}

func (h *Handler) record(start time.Time, req *kwctl.Request, info *requestInfo, resp *kwctl.Response, took time.Duration) {
	ops, _ := resp.PatchOps()
	e := entry{
		Time: start.UTC().Format(time.RFC3339Nano), UID: req.UID, Operation: req.Operation,
		Group: info.Kind.Group, Kind: info.Kind.Kind, SubResource: info.SubResource,
		Namespace: info.Namespace, Name: info.Name, GenerateName: info.Object.Metadata.GenerateName,
		DryRun: info.DryRun, UserInfo: info.UserInfo, Allowed: resp.Allowed, Patch: ops,
		Status: resp.Status, Warnings: resp.Warnings, Micros: took.Microseconds(),
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return
	}
	h.logMu.Lock()
	defer h.logMu.Unlock()
	_, _ = h.opts.Record.Write(buf.Bytes())
}
