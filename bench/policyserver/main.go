// Command policyserver measures what users pay for the policy: the latency of Kubewarden's real
// policy-server answering AdmissionReviews over HTTP with the policy, beside the same server with a
// do-nothing module and with the mutating floor (a module that writes one annotation), in alternating
// rounds; with one client and with eight; and each server's start-up and peak memory. It prints a table,
// and with -svg draws the latency by request size from the same figures.
//
//	go run ./bench/policyserver -policy-server PATH -kwctl PATH [-n 100] [-runs 3] [-svg FILE]
//
// The modules are annotated with kwctl first (policy-server loads no other module); every figure is the
// median of -runs runs, each with servers started afresh. make bench-policy-server runs it.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/bench/wasmbench"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/policyserver"
)

type options struct {
	policyServer, kwctl, policy, floor, mutFloor, metadata, requests, svg, flags, other, only, replot string
	n, runs, port                                                                                     int
	clients                                                                                           []int
}

func main() {
	var o options
	flag.StringVar(&o.policyServer, "policy-server", "", "Kubewarden's policy-server binary")
	flag.StringVar(&o.kwctl, "kwctl", "", "Kubewarden's kwctl binary (annotates the modules)")
	flag.StringVar(&o.policy, "policy", "policy.wasm", "the policy module")
	flag.StringVar(&o.metadata, "metadata", "metadata.yml", "the policy's metadata")
	flag.StringVar(&o.floor, "floor", "build/floor.wasm", "the do-nothing module")
	flag.StringVar(&o.mutFloor, "mutfloor", "build/mutfloor.wasm", "the mutating floor module")
	flag.StringVar(&o.requests, "requests", "testdata/requests", "the fixtures directory")
	flag.StringVar(&o.svg, "svg", "", "write the latency-by-size plot here, and the figures beside it (.json)")
	flag.StringVar(&o.replot, "replot", "", "print the table and draw -svg from the figures a run saved (.json), without running")
	flag.StringVar(&o.flags, "flags", "", "more policy-server flags (--sigstore-trust-config FILE to start offline)")
	flag.StringVar(&o.only, "only", "", "run only the requests whose name contains this")
	flag.StringVar(&o.other, "other", "", "another build of the policy, measured in the same rounds (a change for speed against main)")
	flag.IntVar(&o.n, "n", 100, "requests per scenario, module and run (more for small requests: see requestsFor)")
	flag.IntVar(&o.runs, "runs", 3, "runs; each figure is their median")
	flag.IntVar(&o.port, "port", 23000, "first loopback port (each server takes two)")
	clientCounts := flag.String("clients", "1,8", "the numbers of clients sending at once, each measured in turn")
	flag.Parse()
	for _, f := range strings.Split(*clientCounts, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			fmt.Fprintf(os.Stderr, "policyserver: -clients %q: want numbers of at least 1, separated by commas\n", *clientCounts)
			os.Exit(2)
		}
		o.clients = append(o.clients, c)
	}
	if o.replot != "" {
		if err := replot(o); err != nil {
			fmt.Fprintln(os.Stderr, "policyserver:", err)
			os.Exit(1)
		}
		return
	}
	if o.policyServer == "" || o.kwctl == "" {
		fmt.Fprintln(os.Stderr, "usage: policyserver -policy-server PATH -kwctl PATH [-n 100] [-runs 3] [-svg FILE]")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "policyserver:", err)
		os.Exit(1)
	}
}

// module is one module under one policy-server.
type module struct {
	name, path string
}

// scenario is one request, sent to the policy id that holds its settings.
type scenario struct {
	name   string
	size   int // the AdmissionReview's bytes
	review []byte
	id     string // "pods" (settings {}), "argo" (the Argo example's) or "guard" (settings {}, no mutations)
	plot   bool   // a Pod: a point of the latency-by-size plot
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "bench-policyserver")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	modules, err := annotate(o, dir)
	if err != nil {
		return err
	}
	scenarios, err := makeScenarios(o.requests)
	if err != nil {
		return err
	}
	scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool { return !strings.Contains(sc.name, o.only) })
	argo, err := os.ReadFile(filepath.Join(o.requests, "..", "settings", "argo-workflows.json"))
	if err != nil {
		return err
	}
	m := newMeasures(modules)
	for r := range o.runs {
		if err := measureRun(o, dir, r, modules, scenarios, argo, m); err != nil {
			return err
		}
	}
	saved := saved{Runs: o.runs, N: max(o.n/5, 1) * 5, Measures: m}
	for _, mod := range modules {
		saved.Modules = append(saved.Modules, mod.name)
	}
	for _, sc := range scenarios {
		saved.Scenarios = append(saved.Scenarios, savedScenario{sc.name, sc.size, sc.plot})
	}
	return output(o, &saved, true)
}

// saved is what a run measured, kept beside the plot so that the table and the plot can be made again.
type saved struct {
	Runs, N   int
	Modules   []string
	Scenarios []savedScenario
	Measures  *measures
}

type savedScenario struct {
	Name string
	Size int
	Plot bool
}

// output prints the table and, with -svg, draws the plot (and, after a run, saves the figures beside it).
func output(o options, s *saved, save bool) error {
	var modules []module
	for _, name := range s.Modules {
		modules = append(modules, module{name: name})
	}
	var scenarios []scenario
	for _, sc := range s.Scenarios {
		scenarios = append(scenarios, scenario{name: sc.Name, size: sc.Size, plot: sc.Plot})
	}
	o.runs, o.n = s.Runs, s.N
	report(os.Stdout, o, modules, scenarios, s.Measures)
	if o.svg == "" {
		return nil
	}
	if save {
		data, err := json.MarshalIndent(s, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(strings.TrimSuffix(o.svg, ".svg")+".json", append(data, '\n'), 0o644); err != nil { //nolint:gosec // docs, read by all
			return err
		}
	}
	return os.WriteFile(o.svg, plot(modules, scenarios, s.Measures.figures), 0o644) //nolint:gosec // a figure of the docs, read by all
}

func replot(o options) error {
	data, err := os.ReadFile(o.replot)
	if err != nil {
		return err
	}
	s := saved{Measures: &measures{}}
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", o.replot, err)
	}
	return output(o, &s, false)
}

// measures holds, per module, one p50 per run for each scenario and client count (figures[module][scenario/c]),
// and one start-up and peak RSS per run.
type measures struct {
	figures map[string]map[string][]time.Duration
	startup map[string][]time.Duration
	rss     map[string][]int
}

// MarshalJSON and UnmarshalJSON keep the figures in the saved file.
func (m *measures) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Figures map[string]map[string][]time.Duration
		Startup map[string][]time.Duration
		RSS     map[string][]int
	}{m.figures, m.startup, m.rss})
}

func (m *measures) UnmarshalJSON(data []byte) error {
	var v struct {
		Figures map[string]map[string][]time.Duration
		Startup map[string][]time.Duration
		RSS     map[string][]int
	}
	err := json.Unmarshal(data, &v)
	m.figures, m.startup, m.rss = v.Figures, v.Startup, v.RSS
	return err
}

func newMeasures(modules []module) *measures {
	m := &measures{figures: map[string]map[string][]time.Duration{}, startup: map[string][]time.Duration{}, rss: map[string][]int{}}
	for _, mod := range modules {
		m.figures[mod.name] = map[string][]time.Duration{}
	}
	return m
}

// measureRun starts a server per module and sends every scenario to each in alternating rounds.
func measureRun(o options, dir string, r int, modules []module, scenarios []scenario, argo []byte, m *measures) error {
	servers := make([]*server, len(modules))
	defer stopAll(servers)
	for i, mod := range modules {
		s, err := start(o, dir, mod, o.port+2*i, argo)
		if err != nil {
			return err
		}
		servers[i] = s
		m.startup[mod.name] = append(m.startup[mod.name], s.Startup)
	}
	for _, sc := range scenarios {
		for _, c := range o.clients {
			// Alternating rounds: each module in turn, five times.
			lat := map[string][]time.Duration{}
			for range 5 {
				for i, s := range servers {
					d, err := s.send(sc, c, max(requestsFor(sc, o.n)/5, c))
					if err != nil {
						return fmt.Errorf("run %d, %s, %s, c=%d: %w", r+1, modules[i].name, sc.name, c, err)
					}
					lat[modules[i].name] = append(lat[modules[i].name], d...)
				}
			}
			for name, d := range lat {
				key := sc.name + "/" + strconv.Itoa(c)
				m.figures[name][key] = append(m.figures[name][key], p50(d))
			}
		}
	}
	for i, s := range servers {
		m.rss[modules[i].name] = append(m.rss[modules[i].name], s.peakRSS())
	}
	return nil
}

// requestsFor is how many requests a run sends of sc: n, and for a request under 100 KB as many more as
// send about the bytes of n requests of 100 KB, at most 20n, so that small requests, whose p50 the
// machine's noise moves most, are measured on more than a few milliseconds.
func requestsFor(sc scenario, n int) int {
	return n * min(smallRequestsFactor, max(1, 100<<10/sc.size))
}

const smallRequestsFactor = 20

// annotate writes each module as kwctl annotate does: the policy with its metadata, the floors with a
// metadata of their own.
func annotate(o options, dir string) ([]module, error) {
	floorMeta := filepath.Join(dir, "floor-metadata.yml")
	if err := os.WriteFile(floorMeta, []byte(floorMetadata), 0o600); err != nil {
		return nil, err
	}
	all := []struct{ name, path, metadata string }{
		{"policy", o.policy, o.metadata}, {"do-nothing", o.floor, floorMeta}, {"mutating floor", o.mutFloor, floorMeta},
	}
	if o.other != "" {
		all = append(all, struct{ name, path, metadata string }{"other", o.other, o.metadata})
	}
	var out []module
	for _, m := range all {
		dst := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "-")+".wasm")
		cmd := exec.Command(o.kwctl, "annotate", "-m", m.metadata, "-o", dst, m.path) //nolint:gosec // the kwctl the benchmark was given (-kwctl)
		if text, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kwctl annotate %s: %w: %s", m.path, err, text)
		} else if len(bytes.TrimSpace(text)) > 0 {
			fmt.Fprintf(os.Stderr, "kwctl annotate %s said: %s\n", m.path, text)
		}
		out = append(out, module{m.name, dst})
	}
	return out, nil
}

const floorMetadata = `rules:
- apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods"]
  operations: ["CREATE", "UPDATE"]
mutating: true
contextAwareResources: []
executionMode: kubewarden-wapc
backgroundAudit: false
annotations:
  io.kubewarden.policy.title: floor
  io.kubewarden.policy.version: 0.0.0
  io.kubewarden.policy.description: a benchmark floor
  io.kubewarden.policy.author: bench
  io.kubewarden.policy.url: https://example.invalid
  io.kubewarden.policy.source: https://example.invalid
  io.kubewarden.policy.license: Apache-2.0
`

func makeScenarios(requests string) ([]scenario, error) {
	pod, err := os.ReadFile(filepath.Join(requests, "pod-create-alice.json"))
	if err != nil {
		return nil, err
	}
	var out []scenario
	for _, s := range []struct {
		name string
		size int
	}{{"pod-4k", 4 << 10}, {"pod-16k", 16 << 10}, {"pod-100k", 100 << 10}, {"pod-400k", 400 << 10}, {"pod-1m", 1 << 20}} {
		req, err := wasmbench.GrowPod(pod, s.size)
		if err != nil {
			return nil, err
		}
		out = append(out, scenario{name: s.name, review: review(req), id: "pods", plot: true})
	}
	out = append(out, scenario{name: "workflow-800", review: review(wasmbench.WorkflowRequest(800, wasmbench.OrdinaryTemplate, "CREATE", "bob", true)), id: "argo"})
	// The guard (examples/guard.yaml): the same Pods as stored once the policy stamped them, to the module
	// deployed without mutations; what the guard adds to every request the policy decides.
	for _, s := range []struct {
		name string
		size int
	}{{"guard-4k", 4 << 10}, {"guard-16k", 16 << 10}} {
		req, err := wasmbench.GrowPod(pod, s.size)
		if err == nil {
			req, err = stamped(req)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, scenario{name: s.name, review: review(req), id: "guard"})
	}
	for i := range out {
		out[i].size = len(out[i].review)
	}
	return out, nil
}

// stamped is the request with the object the policy answered: alice's stamp in the pod's annotations.
func stamped(req []byte) ([]byte, error) {
	var r map[string]any
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, err
	}
	metadata, ok := wasmbench.Path(r, "object", "metadata").(map[string]any)
	if !ok {
		return nil, errors.New("the pod fixture has no metadata")
	}
	metadata["annotations"] = map[string]any{"yunikorn.apache.org/user.info": `{"user":"alice","groups":["devops","system:authenticated"]}`}
	return json.Marshal(r)
}

func review(req []byte) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + string(req) + `}`)
}

// server is one policy-server process with one module under two policy ids.
type server struct {
	*policyserver.Server
	client *http.Client
}

func start(o options, dir string, m module, port int, argo []byte) (*server, error) {
	policies, err := json.Marshal(map[string]any{
		"pods":  map[string]any{"module": "file://" + m.path, "allowedToMutate": true, "settings": map[string]any{}},
		"argo":  map[string]any{"module": "file://" + m.path, "allowedToMutate": true, "settings": json.RawMessage(argo)},
		"guard": map[string]any{"module": "file://" + m.path, "allowedToMutate": false, "settings": map[string]any{}},
	})
	if err != nil {
		return nil, err
	}
	s, err := policyserver.Start(policyserver.Options{Binary: o.policyServer, Policies: policies, Dir: dir, Port: port,
		Flags: strings.Fields(o.flags), Ready: 60 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("policy-server with %s: %w", m.name, err)
	}
	return &server{Server: s, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}, nil
}

// send posts sc n times from c clients at once and returns each request's latency.
func (s *server) send(sc scenario, c, n int) ([]time.Duration, error) {
	var mu sync.Mutex
	var out []time.Duration
	var first error
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for range next {
				began := time.Now()
				err := s.post(sc)
				took := time.Since(began)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				out = append(out, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out, first
}

// post sends sc once and wants it allowed (the floors too, as the guard: the mutating floor's stamp is
// alice's, already there, so policy-server finds no patch).
func (s *server) post(sc scenario) error {
	resp, err := s.client.Post(s.URL+sc.id, "application/json", bytes.NewReader(sc.review))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"allowed":true`)) {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, body)
	}
	return nil
}

// peakRSS is the process's peak resident memory in KB (VmHWM), 0 when unknown.
func (s *server) peakRSS() int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID()))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}

func stopAll(servers []*server) {
	for _, s := range servers {
		if s != nil {
			s.Stop()
		}
	}
}

func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func median[T int | time.Duration](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func report(w io.Writer, o options, modules []module, scenarios []scenario, m *measures) {
	figures, startup, rss := m.figures, m.startup, m.rss
	fmt.Fprintf(w, "policy-server over HTTP on loopback, p50 per request, median of %d runs (%d requests per scenario, module and run, up to %d times as many for requests under 100 KB, in alternating rounds)\n\n", o.runs, max(o.n/5, 1)*5, smallRequestsFactor)
	fmt.Fprintln(w, "| request | bytes | clients | policy | do-nothing | mutating floor | x do-nothing | x floor |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, sc := range scenarios {
		for _, c := range o.clients {
			key := sc.name + "/" + strconv.Itoa(c)
			p, f, mf := median(figures["policy"][key]), median(figures["do-nothing"][key]), median(figures["mutating floor"][key])
			fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %.2f | %.2f |\n", sc.name, sc.size, c, ms(p), ms(f), ms(mf), ratio(p, f), ratio(p, mf))
		}
	}
	if _, ok := figures["other"]; ok {
		fmt.Fprintln(w, "\n| request | clients | policy | other | other x policy |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
		for _, sc := range scenarios {
			for _, c := range o.clients {
				key := sc.name + "/" + strconv.Itoa(c)
				p, other := median(figures["policy"][key]), median(figures["other"][key])
				fmt.Fprintf(w, "| %s | %d | %s | %s | %.3f |\n", sc.name, c, ms(p), ms(other), ratio(other, p))
			}
		}
	}
	fmt.Fprintln(w, "\n| module | start-up to ready | peak RSS |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	for _, m := range modules {
		fmt.Fprintf(w, "| %s | %s | %d MB |\n", m.name, ms(median(startup[m.name])), median(rss[m.name])/1024)
	}
}

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

var errNoPoints = errors.New("no Pod scenario to plot")

// plot draws p50 latency (one client) by request size, both axes logarithmic, one line per module.
func plot(modules []module, scenarios []scenario, figures map[string]map[string][]time.Duration) []byte {
	const width, height, left, bottom, top, right = 640.0, 400.0, 70.0, 50.0, 30.0, 150.0
	var pods []scenario
	for _, sc := range scenarios {
		if sc.plot {
			pods = append(pods, sc)
		}
	}
	if len(pods) == 0 {
		return []byte(errNoPoints.Error())
	}
	value := func(m string, sc scenario) float64 { return float64(median(figures[m][sc.name+"/1"]).Microseconds()) }
	minX, maxX := math.Log10(float64(pods[0].size)), math.Log10(float64(pods[len(pods)-1].size))
	minY, maxY := 1e18, 0.0
	for _, m := range modules {
		for _, sc := range pods {
			v := math.Log10(max(value(m.name, sc), 1))
			minY, maxY = min(minY, v), max(maxY, v)
		}
	}
	minY, maxY = float64(int(minY)), float64(int(maxY)+1)
	x := func(v float64) float64 { return left + (math.Log10(v)-minX)/(maxX-minX)*(width-left-right) }
	y := func(v float64) float64 {
		return height - bottom - (math.Log10(max(v, 1))-minY)/(maxY-minY)*(height-bottom-top)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18">policy-server, p50 latency by request size (one client, log-log)</text>`+"\n", left)
	for e := minY; e <= maxY; e++ {
		v := math.Pow10(int(e))
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, width-right, y(v), y(v), left-6, y(v)+4, axisLabel(v))
	}
	for _, sc := range pods {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(float64(sc.size)), height-bottom+18, kb(sc.size))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">AdmissionReview bytes (a Pod)</text>`+"\n", left+(width-left-right)/2, height-12)
	colours := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	for i, m := range modules {
		var points []string
		for _, sc := range pods {
			points = append(points, fmt.Sprintf("%.1f,%.1f", x(float64(sc.size)), y(value(m.name, sc))))
		}
		c := colours[i%len(colours)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(points, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", width-right+10, top+20+float64(i)*18, c, m.name)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func kb(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.0f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f KB", float64(n)/1024)
}

// axisLabel names a power of ten of microseconds: 100 µs, 1 ms, 10 ms...
func axisLabel(us float64) string {
	if us < 1000 {
		return fmt.Sprintf("%.0f µs", us)
	}
	return fmt.Sprintf("%.0f ms", us/1000)
}
