// nscopier is the cluster suite's "copy the namespace's annotations onto its pods" mutating webhook, the kind of
// mutator a cluster often runs beside the policy: on every Pod CREATE it reads the pod's Namespace from the API
// server and copies the annotations and labels named by -annotations and -labels onto the pod, overwriting what
// the pod carries. Whoever may annotate a namespace then writes the pod's annotations, after any webhook that ran
// before it (test/cluster/guard.bats).
//
//	nscopier -listen 127.0.0.1:19445 -cert-file webhook.crt -key-file webhook.key -api https://127.0.0.1:16443 \
//	  -ca-file ca.crt -client-cert admin.crt -client-key admin.key \
//	  -annotations yunikorn.apache.org/user.info,yunikorn.apache.org/task-groups -labels applicationId
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

type options struct {
	listen, certFile, keyFile, api, caFile, clientCert, clientKey, annotations, labels string
}

func main() {
	var o options
	flag.StringVar(&o.listen, "listen", "127.0.0.1:19445", "where the API server calls the webhook")
	flag.StringVar(&o.certFile, "cert-file", "", "the webhook's serving certificate")
	flag.StringVar(&o.keyFile, "key-file", "", "its key")
	flag.StringVar(&o.api, "api", "", "the API server, https://HOST:PORT")
	flag.StringVar(&o.caFile, "ca-file", "", "the CA of the API server's certificate")
	flag.StringVar(&o.clientCert, "client-cert", "", "a client certificate that may read namespaces")
	flag.StringVar(&o.clientKey, "client-key", "", "its key")
	flag.StringVar(&o.annotations, "annotations", "", "the annotation keys to copy, comma-separated")
	flag.StringVar(&o.labels, "labels", "", "the label keys to copy, comma-separated")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "nscopier:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.certFile == "" || o.keyFile == "" || o.api == "" || o.caFile == "" || o.clientCert == "" || o.clientKey == "" {
		return errors.New("-cert-file, -key-file, -api, -ca-file, -client-cert and -client-key are required")
	}
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s holds no certificate", o.caFile)
	}
	client, err := tls.LoadX509KeyPair(o.clientCert, o.clientKey)
	if err != nil {
		return err
	}
	api := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12}}}
	c := copier{api: api, base: strings.TrimSuffix(o.api, "/"), annotations: split(o.annotations), labels: split(o.labels)}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/", &c)
	srv := &http.Server{Addr: o.listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("nscopier on https://%s: annotations %q, labels %q from the pod's namespace", o.listen, c.annotations, c.labels)
	return srv.ListenAndServeTLS(o.certFile, o.keyFile)
}

func split(list string) []string {
	var out []string
	for _, k := range strings.Split(list, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

type copier struct {
	api                 *http.Client
	base                string
	annotations, labels []string
}

type metadata struct {
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
}

type review struct {
	Request struct {
		UID       string `json:"uid"`
		Namespace string `json:"namespace"`
		Operation string `json:"operation"`
		Object    struct {
			Metadata metadata `json:"metadata"`
		} `json:"object"`
	} `json:"request"`
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"` // a string, or an empty map[string]string
}

func (c *copier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rv review
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ops, err := c.patch(rv)
	if err != nil { // a copier that cannot read the namespace copies nothing
		log.Printf("%s %s: %v", rv.Request.Operation, rv.Request.Namespace, err)
	}
	resp := reviewResponse{UID: rv.Request.UID, Allowed: true}
	if len(ops) > 0 {
		if resp.Patch, err = json.Marshal(ops); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp.PatchType = "JSONPatch"
	}
	log.Printf("%s pod in %s: %d operations", rv.Request.Operation, rv.Request.Namespace, len(ops))
	out, err := json.Marshal(struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Response   reviewResponse `json:"response"`
	}{"admission.k8s.io/v1", "AdmissionReview", resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// reviewResponse is the AdmissionReview's response: allowed, with the copy as a JSON Patch when there is one.
type reviewResponse struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     []byte `json:"patch,omitempty"`
}

// patch copies the namespace's chosen annotations and labels onto the pod, as JSON Patch operations.
func (c *copier) patch(rv review) ([]patchOp, error) {
	if rv.Request.Operation != "CREATE" || rv.Request.Namespace == "" {
		return nil, nil
	}
	resp, err := c.api.Get(c.base + "/api/v1/namespaces/" + url.PathEscape(rv.Request.Namespace))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET namespace: HTTP %d", resp.StatusCode)
	}
	var ns struct {
		Metadata metadata `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ns); err != nil {
		return nil, err
	}
	var ops []patchOp
	copyKeys := func(field string, keys []string, from, onto map[string]string) {
		added := onto != nil
		for _, k := range keys {
			v, ok := from[k]
			if !ok {
				continue
			}
			if !added {
				ops = append(ops, patchOp{Op: "add", Path: "/metadata/" + field, Value: map[string]string{}})
				added = true
			}
			ops = append(ops, patchOp{Op: "add", Path: "/metadata/" + field + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k), Value: v})
		}
	}
	copyKeys("annotations", c.annotations, ns.Metadata.Annotations, rv.Request.Object.Metadata.Annotations)
	copyKeys("labels", c.labels, ns.Metadata.Labels, rv.Request.Object.Metadata.Labels)
	return ops, nil
}
