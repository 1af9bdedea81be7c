// Command loadgen is the cluster suite's load and fault tooling (test/cluster/load.bats and
// faults.bats). It is test tooling: it is not built into the policy or the host.
//
//	loadgen pods -api https://127.0.0.1:16443 -pki DIR -users alice,bob -namespace NS -n 500 -c 8 -prefix p
//	loadgen slowproxy -listen 127.0.0.1:19444 -target https://127.0.0.1:19443 -delay 2s -cert-file F -key-file F -ca-file F
//	loadgen histogram -before FILE -after FILE
//
// pods creates n bare Pods concurrently (c at a time), round-robin over the users, each with its own
// X.509 client certificate (DIR/USER.crt, DIR/USER.key, DIR/ca.crt), named PREFIX-USER-I and labelled
// e2e-owner=USER so that the audit knows whose stamp each pod must carry. It prints one JSON object:
// how many were created, how many failed (and why), and the creation rate. kubectl would cost a process
// per pod, which on two cores measures kubectl rather than the API server and the webhook.
//
// histogram reads two scrapes of a Prometheus histogram's _bucket lines (the API server's
// apiserver_admission_webhook_admission_duration_seconds for one webhook), subtracts the first from the
// second, sums over the other labels and prints the count and the p50 and p99 as Prometheus'
// histogram_quantile computes them (linear within a bucket), in milliseconds.
//
// slowproxy serves HTTPS with the webhook's certificate and forwards every request to the webhook
// after holding it for delay: a webhook slower than its timeoutSeconds, without changing the host.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen pods|slowproxy|histogram [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "pods":
		err = podsCommand(os.Args[2:])
	case "slowproxy":
		err = slowproxyCommand(os.Args[2:])
	case "histogram":
		err = histogramCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type podsResult struct {
	Namespace string         `json:"namespace"`
	Users     []string       `json:"users"`
	Created   int64          `json:"created"`
	Failed    int64          `json:"failed"`
	Seconds   float64        `json:"seconds"`
	PerSecond float64        `json:"perSecond"`
	Errors    map[string]int `json:"errors,omitempty"`
}

func podsCommand(args []string) error {
	fs := flag.NewFlagSet("pods", flag.ContinueOnError)
	api := fs.String("api", "", "the API server's URL")
	pki := fs.String("pki", "", "directory with ca.crt and USER.crt/USER.key")
	users := fs.String("users", "", "comma-separated users")
	namespace := fs.String("namespace", "", "namespace")
	n := fs.Int("n", 100, "pods to create")
	c := fs.Int("c", 8, "concurrent requests")
	prefix := fs.String("prefix", "load", "pod name prefix")
	image := fs.String("image", "registry.invalid/pause:1", "container image (never pulled)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *api == "" || *pki == "" || *users == "" || *namespace == "" || *n < 1 || *c < 1 {
		return errors.New("pods: -api, -pki, -users, -namespace, -n >= 1 and -c >= 1 are required")
	}
	names := strings.Split(*users, ",")
	clients := make([]*http.Client, len(names))
	for i, u := range names {
		client, err := newClient(*pki, u, *c)
		if err != nil {
			return err
		}
		clients[i] = client
	}

	podsURL := strings.TrimRight(*api, "/") + "/api/v1/namespaces/" + *namespace + "/pods"
	var created, failed atomic.Int64
	var mu sync.Mutex
	errs := map[string]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range *c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := i % len(names)
				body := podJSON(fmt.Sprintf("%s-%s-%d", *prefix, names[u], i), names[u], *image)
				if err := createPod(clients[u], podsURL, body); err != nil {
					failed.Add(1)
					mu.Lock()
					errs[err.Error()]++
					mu.Unlock()
					continue
				}
				created.Add(1)
			}
		}()
	}
	for i := range *n {
		next <- i
	}
	close(next)
	wg.Wait()
	secs := time.Since(start).Seconds()
	res := podsResult{Namespace: *namespace, Users: names, Created: created.Load(), Failed: failed.Load(),
		Seconds: round(secs), PerSecond: round(float64(created.Load()) / secs)}
	if len(errs) > 0 {
		res.Errors = errs
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func round(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func newClient(pki, user string, conns int) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, user+".crt"), filepath.Join(pki, user+".key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s/ca.crt: no certificate", pki)
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: conns,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}, nil
}

func podJSON(name, owner, image string) []byte {
	// Names and images are the tool's own (no quotes or backslashes), so plain formatting is valid JSON.
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"e2e-owner":%q,"e2e-load":"bare"}},`+
		`"spec":{"containers":[{"name":"c","image":%q}]}}`, name, owner, image)
}

// createPod POSTs one pod; an error is the API server's message (the webhook's refusal, a timeout),
// shortened so that identical failures are counted together.
func createPod(client *http.Client, podsURL string, body []byte) error {
	resp, err := client.Post(podsURL, "application/json", bytes.NewReader(body))
	if err != nil {
		return errors.New(shorten(err.Error()))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusCreated {
		return nil
	}
	var status struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &status)
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, shorten(status.Message))
}

// shorten drops the pod's name and the request's address from a message.
func shorten(msg string) string {
	if i := strings.Index(msg, "failed calling webhook"); i >= 0 {
		msg = msg[i:]
	}
	if len(msg) > 160 {
		msg = msg[:160]
	}
	return msg
}

func slowproxyCommand(args []string) error {
	fs := flag.NewFlagSet("slowproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:19444", "address to listen on")
	target := fs.String("target", "https://127.0.0.1:19443", "the webhook's base URL")
	delay := fs.Duration("delay", 2*time.Second, "how long every request is held before it is forwarded")
	certFile := fs.String("cert-file", "", "serving certificate")
	keyFile := fs.String("key-file", "", "serving key")
	caFile := fs.String("ca-file", "", "CA of the webhook's certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	to, err := url.Parse(*target)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s: no certificate", *caFile)
	}
	rp := httputil.NewSingleHostReverseProxy(to)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(*delay):
			rp.ServeHTTP(w, r)
		case <-r.Context().Done(): // the API server gave up (timeoutSeconds)
		}
	})
	srv := &http.Server{Addr: *listen, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "slowproxy: https://%s -> %s, delay %s\n", *listen, to, *delay)
	return srv.ListenAndServeTLS(*certFile, *keyFile)
}

func histogramCommand(args []string) error {
	fs := flag.NewFlagSet("histogram", flag.ContinueOnError)
	before := fs.String("before", "", "the first scrape (may be empty)")
	after := fs.String("after", "", "the second scrape")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := readBuckets(*before)
	if err != nil {
		return err
	}
	a, err := readBuckets(*after)
	if err != nil {
		return err
	}
	for le := range a {
		a[le] -= b[le]
	}
	h := toHistogram(a)
	if h.count() == 0 {
		return errors.New("histogram: no observations between the two scrapes")
	}
	res := map[string]any{"count": h.count(), "p50ms": round(h.quantile(0.5) * 1000), "p99ms": round(h.quantile(0.99) * 1000),
		"buckets": h.String()}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}

// readBuckets sums a scrape's _bucket lines by their le label.
func readBuckets(path string) (map[float64]float64, error) {
	out := map[float64]float64{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		i := strings.Index(line, `le="`)
		j := strings.LastIndexByte(line, ' ')
		if i < 0 || j < 0 {
			continue
		}
		leText := line[i+4:]
		leText = leText[:strings.IndexByte(leText, '"')]
		le := math.Inf(1)
		if leText != "+Inf" {
			if le, err = strconv.ParseFloat(leText, 64); err != nil {
				return nil, fmt.Errorf("%s: %q: %w", path, line, err)
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[j+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		out[le] += v
	}
	return out, nil
}

// histogram is cumulative buckets sorted by upper bound.
type histogram []struct{ le, cum float64 }

func toHistogram(m map[float64]float64) histogram {
	h := histogram{}
	for le, c := range m {
		h = append(h, struct{ le, cum float64 }{le, c})
	}
	sort.Slice(h, func(i, j int) bool { return h[i].le < h[j].le })
	return h
}

func (h histogram) count() float64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].cum
}

// quantile is Prometheus' histogram_quantile: the bucket holding rank q*count, linearly interpolated
// from its lower bound (0 for the first); in the +Inf bucket, the highest finite bound.
func (h histogram) quantile(q float64) float64 {
	total := h.count()
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range h {
		if b.cum >= rank {
			if math.IsInf(b.le, 1) {
				if i == 0 {
					return math.NaN()
				}
				return h[i-1].le
			}
			if b.cum == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.cum-below)
		}
		lower, below = b.le, b.cum
	}
	return math.NaN()
}

func (h histogram) String() string {
	parts := make([]string, 0, len(h))
	prev := 0.0
	for _, b := range h {
		parts = append(parts, fmt.Sprintf("<=%g:%g", b.le, b.cum-prev))
		prev = b.cum
	}
	return strings.Join(parts, " ")
}
