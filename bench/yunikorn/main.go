// Command yunikorn-native measures Apache YuniKorn's own admission handler, natively, on the bytes of the
// benchmark's scenarios, so that `make bench` and `make bench-wasmtime` can put the policy next to it in the
// same run (bench/wasmbench runs it with -native). The handler is yunikorn-k8shim v1.4.0's
// pkg/admission: AdmissionController.Serve, the function its admission controller registers for /mutate,
// called with a POST whose body is the AdmissionReview bytes; the timed part is Serve alone (reading the
// body, decoding the review and the object, the user-info logic, the patch, encoding the response review),
// not the TLS and HTTP parsing in front of it, nor building the request. The controller is built once, as a
// running admission controller is: every setting at its default (no config maps) and empty namespace and
// priority-class caches (no informers, no cluster). It is a module of its own because k8shim brings
// Kubernetes' own modules, which nothing else needs: `make bench` builds it to build/yunikorn-native.
//
//	yunikorn-native -n N -max-time D -o RESULTS SCENARIO.json...
//
// measures every file (one AdmissionReview each, named after its scenario) and writes one JSON object per
// scenario to RESULTS. YuniKorn logs as it does when deployed (INFO, console encoding, to
// stdout): the caller decides where stdout goes (wasmbench sends it to /dev/null).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/yunikorn-k8shim/pkg/admission"
	"github.com/apache/yunikorn-k8shim/pkg/admission/conf"
	"github.com/apache/yunikorn-k8shim/pkg/log"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
)

// userInfoAnnotation is the annotation the handler stamps (k8shim's pkg/admission/common.UserInfoAnnotation).
const userInfoAnnotation = "yunikorn.apache.org/user.info"

// result is one scenario's line in RESULTS; bench/wasmbench reads the same fields.
type result struct {
	Scenario string        `json:"scenario"`
	N        int           `json:"n"` // timed evaluations (fewer than -n past -max-time)
	Min      time.Duration `json:"min_ns"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	Checked  string        `json:"checked"` // what the response was verified to do
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("yunikorn-native", flag.ContinueOnError)
	n := fs.Int("n", 1000, "timed evaluations per scenario")
	maxTime := fs.Duration("max-time", 10*time.Second, "bound of one scenario's measurement (at least 5 evaluations are made)")
	out := fs.String("o", "", "the results file (one JSON object per scenario)")
	logLevel := fs.String("log-level", "INFO", "YuniKorn's log.level setting (INFO, its default, logs every review)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 || *out == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: yunikorn-native [-n N] [-max-time D] [-log-level L] -o RESULTS SCENARIO.json...")
		return 2
	}
	log.UpdateLoggingConfig(map[string]string{"log.level": *logLevel})
	if err := measureAll(fs.Args(), *out, *n, *maxTime); err != nil {
		fmt.Fprintln(os.Stderr, "yunikorn-native:", err)
		return 1
	}
	return 0
}

func measureAll(files []string, out string, n int, maxTime time.Duration) error {
	ac := newController()
	var results bytes.Buffer
	enc := json.NewEncoder(&results)
	for _, file := range files {
		review, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		r, err := measure(ac, review, n, maxTime)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.Scenario = name
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return os.WriteFile(out, results.Bytes(), 0o600)
}

// newController builds the admission controller as k8shim's cmd/admissioncontroller does, without a
// cluster: no bootstrap config maps (so every setting keeps its default: bypassAuth off, trusted
// controllers on, system users ^system:serviceaccount:kube-system:, kube-system bypassed, queue
// root.default) and caches that no informer fills (no namespace or priority class annotations).
func newController() *admission.AdmissionController {
	amConf := conf.NewAdmissionControllerConf([]*v1.ConfigMap{nil, nil})
	return admission.InitAdmissionController(amConf, admission.NewPriorityClassCache(nil), admission.NewNamespaceCache(nil))
}

// measure serves review n times after a warm-up of n/10 (fewer past maxTime). The first response is
// checked (check) and every later one must be the same bytes, both outside the timed part.
func measure(ac *admission.AdmissionController, review []byte, n int, maxTime time.Duration) (result, error) {
	runtime.GC() // the previous scenario's garbage is not this one's cost
	var r result
	var first []byte
	durations := make([]time.Duration, 0, n)
	began := time.Now()
	for i := -n / 10; i < n; i++ {
		if i >= 5 && time.Since(began) > maxTime {
			break // a huge object is measured on fewer evaluations
		}
		req := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(review))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		ac.Serve(rec, req)
		elapsed := time.Since(start)
		got := rec.Body.Bytes()
		switch {
		case first == nil:
			checked, err := check(review, got)
			if err != nil {
				return r, err
			}
			first, r.Checked = got, checked
		case !bytes.Equal(got, first):
			return r, fmt.Errorf("the response changed between evaluations: %.300s", got)
		}
		if i >= 0 {
			durations = append(durations, elapsed)
		}
	}
	slices.Sort(durations)
	r.N, r.Min, r.P50, r.P99 = len(durations), durations[0], durations[len(durations)/2], durations[len(durations)*99/100]
	return r, nil
}

// check verifies that the handler did the user-info work the request calls for, from the request alone:
// a CREATE whose object has no user.info annotation must be allowed with a JSON patch that adds it with
// the requester's name and groups; a CREATE whose object has one must be allowed and keep it; an UPDATE
// (the annotation unchanged) must be allowed without a patch. It describes what it verified.
func check(reviewBytes, responseBytes []byte) (string, error) {
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(reviewBytes, &in); err != nil || in.Request == nil {
		return "", fmt.Errorf("the scenario is not an AdmissionReview with a request: %w", err)
	}
	req := in.Request
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(responseBytes, &out); err != nil || out.Response == nil {
		return "", fmt.Errorf("the handler's answer is not an AdmissionReview with a response: %.300s", responseBytes)
	}
	resp := out.Response
	if !resp.Allowed || resp.UID != req.UID {
		return "", fmt.Errorf("the handler did not allow request %s: %.300s", req.UID, responseBytes)
	}
	stamped, err := patchedUserInfo(resp)
	if err != nil {
		return "", err
	}
	if req.Operation == admissionv1.Update {
		if len(resp.Patch) != 0 {
			return "", fmt.Errorf("an unchanged UPDATE was patched: %s", resp.Patch)
		}
		return "UPDATE allowed, no patch", nil
	}
	existing, err := existingUserInfo(req.Object.Raw)
	if err != nil {
		return "", err
	}
	if existing != "" {
		if stamped != "" && stamped != existing {
			return "", fmt.Errorf("the handler replaced the annotation %s with %s", existing, stamped)
		}
		return "CREATE allowed, annotation kept", nil
	}
	var got struct {
		User   string   `json:"user"`
		Groups []string `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stamped), &got); err != nil {
		return "", fmt.Errorf("no user.info annotation in the patch (%q): %.300s", stamped, resp.Patch)
	}
	if got.User != req.UserInfo.Username || !slices.Equal(got.Groups, req.UserInfo.Groups) {
		return "", fmt.Errorf("the patch stamps %s, not the requester %s", stamped, req.UserInfo.Username)
	}
	return fmt.Sprintf("CREATE allowed, patch adds user.info (%s, %d groups)", got.User, len(got.Groups)), nil
}

// patchedUserInfo is the user.info value that the response's JSON patch sets ("" when none does).
func patchedUserInfo(resp *admissionv1.AdmissionResponse) (string, error) {
	if len(resp.Patch) == 0 {
		return "", nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return "", errors.New("the response's patch is not a JSON patch")
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		return "", fmt.Errorf("the response's patch: %w", err)
	}
	for _, op := range ops {
		if op.Op != "add" || !strings.HasSuffix(op.Path, "/metadata/annotations") {
			continue
		}
		var annotations map[string]string
		if err := json.Unmarshal(op.Value, &annotations); err != nil {
			return "", fmt.Errorf("the patch's %s: %w", op.Path, err)
		}
		if v, ok := annotations[userInfoAnnotation]; ok {
			return v, nil
		}
	}
	return "", nil
}

// existingUserInfo is the user.info annotation the object already carries, on itself or on its pod
// template ("" when it has none).
func existingUserInfo(object []byte) (string, error) {
	type meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	var obj struct {
		Metadata meta `json:"metadata"`
		Spec     struct {
			Template struct {
				Metadata meta `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(object, &obj); err != nil {
		return "", fmt.Errorf("the request's object: %w", err)
	}
	if v := obj.Metadata.Annotations[userInfoAnnotation]; v != "" {
		return v, nil
	}
	return obj.Spec.Template.Metadata.Annotations[userInfoAnnotation], nil
}
