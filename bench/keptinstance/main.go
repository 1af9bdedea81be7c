// Command keptinstance measures the policy in one instance kept for many evaluations, as older
// policy-server releases and `kwctl bench` run a policy (policy-server today starts a fresh instance for
// every request: `make bench`). Every evaluation reuses the guest's linear memory, which only grows, so
// what the guest keeps or fragments between calls adds up: the command prints the memory after every
// -every evaluations and each call that grew it, the slowest call, and compares the final memory with the most one evaluation needs
// in a fresh instance. It also checks that every answer is the one a fresh instance gives for the same
// payload. It is a benchmark, not a test: `make bench-kept`.
//
//	go run ./bench/keptinstance -policy policy.wasm -n 10000
//
// The requests are every fixture of testdata/requests, each padded to 4 KB, 100 KB, 200 KB and 1 MB
// (Pods in their first container's env, other objects in their labels), with the example settings
// of testdata/settings for the kinds they declare; beside them a Pod whose annotations hold kubectl's
// escaped last-applied-configuration copy of itself, and a RayCluster padded with worker groups (one
// stamp each, so its answer is larger than its request). The evaluations draw from them at random
// (a fixed seed), all sizes mixed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/bench/wasmbench"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// sizes are the payload sizes every fixture is padded to.
var sizes = []int{4 << 10, 100 << 10, 200 << 10, 1 << 20}

// goal: after the evaluations, the kept instance's memory is at most this many times what the most
// demanding single evaluation needs in a fresh instance.
const goal = 2.0

type request struct {
	name    string
	payload []byte
	want    []byte // the answer of a fresh instance
	fresh   uint32 // a fresh instance's memory after evaluating it
}

func main() {
	policy := flag.String("policy", "policy.wasm", "the policy module")
	requests := flag.String("requests", "testdata/requests", "the fixtures directory")
	settings := flag.String("settings", "testdata/settings", "the example settings directory (customWorkloads)")
	n := flag.Int("n", 10000, "evaluations in the kept instance")
	every := flag.Int("every", 1000, "print the memory after this many evaluations")
	seed := flag.Uint64("seed", 1, "the seed of the random order of requests")
	flag.Parse()
	if err := run(*policy, *requests, *settings, *n, max(*every, 1), *seed); err != nil {
		fmt.Fprintln(os.Stderr, "keptinstance:", err)
		os.Exit(1)
	}
}

func run(policyPath, requestsDir, settingsDir string, n, every int, seed uint64) error {
	ctx := context.Background()
	wasm, err := os.ReadFile(policyPath)
	if err != nil {
		return err
	}
	reqs, err := buildRequests(requestsDir, settingsDir)
	if err != nil {
		return err
	}
	host, err := wapchost.Load(ctx, wasm, wapchost.Options{})
	if err != nil {
		return err
	}
	defer host.Close(ctx)

	largest, err := freshReference(ctx, host, reqs)
	if err != nil {
		return err
	}
	fmt.Printf("keptinstance: %s (%.1f KB), %d requests (%d fixtures and 2 constructed objects, each at %s), %d evaluations in one instance\n",
		policyPath, float64(len(wasm))/1024, len(reqs), len(reqs)/len(sizes)-2, sizeList(), n)
	fmt.Printf("fresh instance: the most one evaluation needs is %s (%s, %s payload, %s answer)\n\n",
		mib(largest.fresh), largest.name, kb(len(largest.payload)), kb(len(largest.want)))

	inst, err := host.NewInstance(ctx)
	if err != nil {
		return err
	}
	defer inst.Close(ctx)
	fmt.Printf("%11s %12s %10s %10s   %s\n", "evaluations", "memory", "p50", "slowest", "slowest request")
	rng := rand.New(rand.NewPCG(seed, seed)) //nolint:gosec // a reproducible order, not a secret
	var (
		slowest     time.Duration
		slowestName string
		block       []time.Duration
		blockMax    time.Duration
		blockName   string
		mismatches  int
		total       time.Duration
		memory      = inst.MemorySize()
	)
	for i := 1; i <= n; i++ {
		r := &reqs[rng.IntN(len(reqs))]
		start := time.Now()
		got, err := inst.Call(ctx, "validate", r.payload)
		took := time.Since(start)
		total += took
		if err != nil {
			return fmt.Errorf("evaluation %d (%s), memory %s: %w", i, r.name, mib(inst.MemorySize()), err)
		}
		if !bytes.Equal(got, r.want) {
			mismatches++
			if mismatches <= 3 {
				fmt.Printf("evaluation %d (%s): the answer differs from a fresh instance's\n", i, r.name)
			}
		}
		if now := inst.MemorySize(); now != memory {
			fmt.Printf("%11d %12s   grown by %s (%s payload, %s answer)\n", i, mib(now), r.name, kb(len(r.payload)), kb(len(got)))
			memory = now
		}
		block = append(block, took)
		if took > blockMax {
			blockMax, blockName = took, r.name
		}
		if took > slowest {
			slowest, slowestName = took, r.name
		}
		if i%every == 0 || i == n {
			slices.Sort(block)
			fmt.Printf("%11d %12s %10s %10s   %s\n", i, mib(inst.MemorySize()), ms(block[len(block)/2]), ms(blockMax), blockName)
			block, blockMax = block[:0], 0
		}
	}
	final := inst.MemorySize()
	ratio := float64(final) / float64(largest.fresh)
	fmt.Printf("\nslowest call: %s (%s); all %d calls: %s\n", ms(slowest), slowestName, n, ms(total))
	fmt.Printf("memory after %d evaluations: %s = %.2fx the most one evaluation needs in a fresh instance (%s)\n",
		n, mib(final), ratio, mib(largest.fresh))
	verdict := "ok  "
	if ratio > goal {
		verdict = "MISS"
	}
	fmt.Printf("%s kept-instance memory <= %.0fx a fresh instance's largest evaluation\n", verdict, goal)
	if mismatches > 0 {
		return fmt.Errorf("%d of %d answers differ from a fresh instance's", mismatches, n)
	}
	fmt.Printf("ok   every answer is the one a fresh instance gives\n")
	return nil
}

// freshReference evaluates every request in a fresh instance: the answer the kept instance must give,
// and the memory it needs on its own. It returns the request that needs the most.
func freshReference(ctx context.Context, host *wapchost.Host, reqs []request) (*request, error) {
	var largest *request
	for i := range reqs {
		r := &reqs[i]
		inst, err := host.NewInstance(ctx)
		if err != nil {
			return nil, err
		}
		r.want, err = inst.Call(ctx, "validate", r.payload)
		r.fresh = inst.MemorySize()
		_ = inst.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s in a fresh instance: %w", r.name, err)
		}
		if largest == nil || r.fresh > largest.fresh {
			largest = r
		}
	}
	return largest, nil
}

// buildRequests pads every fixture to each of sizes, with the settings its kind needs.
func buildRequests(requestsDir, settingsDir string) ([]request, error) {
	declared, err := declaredSettings(settingsDir)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(requestsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no fixtures in %s", requestsDir)
	}
	var out []request
	var pod, rayCluster map[string]any
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var req map[string]any
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		kind, _ := wasmbench.Path(req, "kind", "kind").(string)
		settings := declared[kind]
		if settings == "" {
			settings = `{}`
		}
		switch name {
		case "pod-create-alice":
			pod = req
		case "raycluster-create-alice":
			rayCluster = req
		}
		for _, size := range sizes {
			payload, err := pad(req, settings, size, padObject)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, request{name: fmt.Sprintf("%s@%s", name, kb(size)), payload: payload})
		}
	}
	if pod == nil || rayCluster == nil {
		return nil, errors.New("the fixtures pod-create-alice and raycluster-create-alice are needed")
	}
	for _, size := range sizes {
		payload, err := pad(pod, `{}`, size, padLastApplied)
		if err != nil {
			return nil, err
		}
		out = append(out, request{name: "pod-last-applied@" + kb(size), payload: payload})
		payload, err = pad(rayCluster, declared["RayCluster"], size, padWorkerGroups)
		if err != nil {
			return nil, err
		}
		out = append(out, request{name: "raycluster-workers@" + kb(size), payload: payload})
	}
	return out, nil
}

// declaredSettings maps each kind that an example's customWorkloads declares to that example's settings.
func declaredSettings(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var s struct {
			CustomWorkloads []struct {
				Kind string `json:"kind"`
			} `json:"customWorkloads"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			return nil, err
		}
		for _, w := range s.CustomWorkloads {
			out[w.Kind] = compact.String()
		}
	}
	return out, nil
}

// padder adds about n more bytes to the request; false when it has nothing to pad.
type padder func(req map[string]any, round, n int) bool

// pad grows a copy of req with grow until its validate payload is at least size bytes.
func pad(fixture map[string]any, settings string, size int, grow padder) ([]byte, error) {
	req, err := deepCopy(fixture)
	if err != nil {
		return nil, err
	}
	for round := 0; ; round++ {
		r, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		payload := []byte(`{"request":` + string(r) + `,"settings":` + settings + `}`)
		if len(payload) >= size || !grow(req, round, size-len(payload)) {
			return payload, nil
		}
	}
}

// padObject pads a Pod's first container's env, any other object's labels (the object of a DELETE:
// its old object).
func padObject(req map[string]any, round, n int) bool {
	obj, _ := req["object"].(map[string]any)
	if obj == nil {
		if obj, _ = req["oldObject"].(map[string]any); obj == nil {
			return false
		}
	}
	if containers, _ := wasmbench.Path(obj, "spec", "containers").([]any); len(containers) > 0 {
		if c, ok := containers[0].(map[string]any); ok {
			wasmbench.PadEnv(c, round, n)
			return true
		}
	}
	metadata, _ := obj["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		obj["metadata"] = metadata
	}
	labels, _ := metadata["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		metadata["labels"] = labels
	}
	for j := range max(n/50, 1) {
		labels[fmt.Sprintf("example.com/setting-%06d", round*100000+j)] = "some-configuration-value"
	}
	return true
}

// padLastApplied pads the Pod's env to about half of what is missing, then gives it kubectl's
// last-applied-configuration annotation: the object as applied, escaped into a string, which doubles it.
func padLastApplied(req map[string]any, round, n int) bool {
	obj, _ := req["object"].(map[string]any)
	metadata, _ := obj["metadata"].(map[string]any)
	if metadata == nil {
		return false
	}
	annotations, _ := metadata["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		metadata["annotations"] = annotations
	}
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	current, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	// The copy counts twice (the object and the annotation), its escaped quotes a little more.
	padObject(req, round, max((n-len(current))/2, 60))
	applied, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(applied)
	return true
}

// padWorkerGroups repeats the RayCluster's first worker group: every copy is a target that gets a stamp.
func padWorkerGroups(req map[string]any, round, n int) bool {
	spec, _ := wasmbench.Path(req, "object", "spec").(map[string]any)
	groups, _ := spec["workerGroupSpecs"].([]any)
	first, _ := firstOf(groups).(map[string]any)
	if first == nil {
		return false
	}
	one, err := json.Marshal(first)
	if err != nil {
		return false
	}
	for j := range max(n/len(one), 1) {
		g, err := deepCopy(first)
		if err != nil {
			return false
		}
		g["groupName"] = fmt.Sprintf("workers-%06d", round*100000+j)
		groups = append(groups, g)
	}
	spec["workerGroupSpecs"] = groups
	return true
}

func firstOf(list []any) any {
	if len(list) == 0 {
		return nil
	}
	return list[0]
}

func deepCopy(v map[string]any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func sizeList() string {
	var s []string
	for _, size := range sizes {
		s = append(s, kb(size))
	}
	return strings.Join(s, ", ")
}

func kb(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%dMB", n>>20)
	}
	return fmt.Sprintf("%dKB", (n+512)/1024)
}

func mib(n uint32) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
