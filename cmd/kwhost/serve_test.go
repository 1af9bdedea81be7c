package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// The webhook's behaviour is tested in internal/host/webhook; these check the command around it.

func TestServe_RefusesInvalidSettingsAtStartUpLikePolicyServer(t *testing.T) {
	got := runKwhost("", "serve", "--policy", annotated(t, scripted(t)), "--settings-json", `{"invalid":"queue is required"}`,
		"--cert-file", "unused.crt", "--key-file", "unused.key")
	if want := (result{1, "", "Provided settings are not valid: queue is required\n"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestServe_BadInvocationsExit2(t *testing.T) {
	policy := annotated(t, scripted(t))
	wantExit2(t, []badInvocation{
		{"no policy", []string{"serve", "--cert-file", "a", "--key-file", "b"}, "kwhost serve: --policy is required\n\nusage:"},
		{"no certificate", []string{"serve", "--policy", policy}, "kwhost serve: --cert-file and --key-file are required"},
		{"positional module", []string{"serve", "--cert-file", "a", "--key-file", "b", policy}, "kwhost serve: unexpected argument"},
		{"both settings", []string{"serve", "--policy", policy, "--cert-file", "a", "--key-file", "b", "--settings-json", "{}", "-s", "x"}, "kwhost serve: --settings-json and --settings-path are mutually exclusive"},
		{"unreadable certificate", []string{"serve", "--policy", policy, "--cert-file", "/nonexistent.crt", "--key-file", "/nonexistent.key"}, "kwhost serve: cannot load the serving certificate: open /nonexistent.crt"},
		{"not a module", []string{"serve", "--policy", deployment, "--cert-file", "a", "--key-file", "b"}, "kwhost serve: cannot load policy " + deployment},
	})
}

// servingHost is a running `kwhost serve` on a free port.
type servingHost struct {
	url    string
	client *http.Client
	cancel context.CancelFunc
	exit   chan int
	stderr *wapchost.LockedBuffer
}

// startServe runs serve with args (plus TLS and a free port) until the test stops it.
func startServe(t *testing.T, args ...string) *servingHost {
	t.Helper()
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	c, err := parseServeFlags(append([]string{"--cert-file", certFile, "--key-file", keyFile, "--listen", "127.0.0.1:0"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &servingHost{cancel: cancel, exit: make(chan int, 1), stderr: wapchost.NewLockedBuffer(),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	t.Cleanup(cancel)
	addr := make(chan string, 1)
	go func() { h.exit <- serve(ctx, c, h.stderr, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		h.url = "https://" + a + "/validate"
	case code := <-h.exit:
		t.Fatalf("serve exited %d: %s", code, h.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	return h
}

// review posts the deployment fixture as an AdmissionReview and returns the response member.
func (h *servingHost) review(t *testing.T) string {
	t.Helper()
	request, err := os.ReadFile(deployment)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + string(request) + `}`
	resp, err := h.client.Post(h.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var answer map[string]json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(answer["response"])
}

// post sends body as the API server sends a review, and returns the HTTP status and body.
func (h *servingHost) post(t *testing.T, body string) (int, string) {
	t.Helper()
	resp, err := h.client.Post(h.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(out)
}

// annotated writes a copy of module with the metadata `kwctl annotate` adds as far as policy-server
// reads it to load a module (a protocol version), as the last custom section, and returns its path.
func annotated(t *testing.T, module string) string {
	t.Helper()
	return withMetadata(t, module, `{"protocolVersion":"v1","rules":[],"mutating":true,"executionMode":"kubewarden-wapc"}`)
}

// withMetadata writes a copy of module with metadata as its io.kubewarden.metadata section.
func withMetadata(t *testing.T, module, metadata string) string {
	t.Helper()
	wasm, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	uleb := func(b []byte, n int) []byte {
		for ; n >= 0x80; n >>= 7 {
			b = append(b, byte(n)|0x80)
		}
		return append(b, byte(n))
	}
	body := append(uleb(nil, len(kwctl.MetadataSection)), kwctl.MetadataSection...)
	body = append(body, metadata...)
	wasm = append(uleb(append(wasm, 0), len(body)), body...)
	path := filepath.Join(t.TempDir(), "annotated-"+filepath.Base(module))
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// stop cancels serve and returns its exit code and stderr.
func (h *servingHost) stop(t *testing.T) (int, string) {
	t.Helper()
	h.cancel()
	select {
	case code := <-h.exit:
		return code, h.stderr.String()
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	return 0, ""
}

func TestServe_AnswersOverTLSUntilCancelledAndRecordsEachRequest(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	h := startServe(t, "--policy", annotated(t, scripted(t)), "--record", record,
		"--settings-json", `{"response":{"accepted":false,"message":"no","code":403}}`)
	want := `{` + deployUID + `,"allowed":false,"status":{"message":"no","code":403},"auditAnnotations":null,"warnings":null}`
	if got := h.review(t); got != want {
		t.Errorf("response %s\nwant     %s", got, want)
	}
	code, log := h.stop(t)
	if code != kwctl.ExitOK {
		t.Errorf("exit %d after cancel: %s", code, log)
	}
	for _, want := range []string{"(a test host, not a production server)", `CREATE apps/v1 Deployment team-a/web by "alice"`, "REJECTED code 403", "kwhost serve: stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	rec, err := os.ReadFile(record)
	if err != nil || !strings.Contains(string(rec), `"userInfo":{"username":"alice","groups":["devops","system:authenticated"]}`) {
		t.Errorf("record %s (%v)", rec, err)
	}
}

func TestServe_ALogEntryPolicyServerRefusesIsAnErrorLine(t *testing.T) {
	h := startServe(t, "--policy", annotated(t, fidelityGuest(t)), "--settings-json", `{"mode":"warn"}`)
	if got := h.review(t); !strings.Contains(got, `"allowed":true`) {
		t.Errorf("response %s", got)
	}
	_, log := h.stop(t)
	if !strings.Contains(log, `ERROR Cannot log event: policy-server would refuse this policy log entry: unknown level "warn"`) {
		t.Errorf("stderr lacks the error line:\n%s", log)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kwhost-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestLevelFilter_DropsThePolicysLinesBelowTheLevel(t *testing.T) {
	var out strings.Builder
	f := &levelFilter{w: &out, min: levels["info"]}
	for _, line := range []string{
		`{"level":"debug","message":"stamped the requester (rule 3)"}` + "\n",
		`{"level":"info","message":"kept"}` + "\n",
		`{"level":"warning","message":"refused"}` + "\n",
		"not JSON\n",
	} {
		if n, err := f.Write([]byte(line)); n != len(line) || err != nil {
			t.Errorf("Write(%q) = %d, %v", line, n, err)
		}
	}
	if want := `{"level":"info","message":"kept"}` + "\n" + `{"level":"warning","message":"refused"}` + "\n" + "not JSON\n"; out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
}
