// Command ociwasm pushes a policy module to an OCI registry the way `kwctl push` does, and pulls it back
// the way policy-server and `kwctl pull` do, for the release rehearsal (test/release/rehearsal.sh). It
// speaks the OCI distribution API over plain HTTP to a registry on the loopback interface only: it is a
// test tool, not a general client (no authentication, no TLS, no chunked uploads).
//
// What kwctl push writes (crates/policy-fetcher, registry push): a config blob `{}` of media type
// application/vnd.wasm.config.v1+json and one layer, the module, of media type
// application/vnd.wasm.content.layer.v1+wasm, in an OCI image manifest whose annotations are the module's
// metadata annotations (kwctl reads them from the annotated module; here from metadata.yml): those whose
// value is one line, trimmed, plus org.opencontainers.image.source from io.kubewarden.policy.source
// (crates/kwctl src/push.rs, build_oci_annotations, at 1.36.0-beta.1). Compared with what kwctl 1.36.0-beta.1
// pushed to the same registry: the same manifest, but for io.kubewarden.kwctl, which kwctl annotate adds to
// the module's metadata and metadata.yml does not hold.
//
//	ociwasm push -metadata metadata.yml MODULE HOST:PORT/REPO:TAG   prints HOST:PORT/REPO@sha256:...
//	ociwasm pull -o FILE HOST:PORT/REPO(:TAG|@DIGEST)              writes the module, checks every digest
//	ociwasm manifest HOST:PORT/REPO(:TAG|@DIGEST)                  prints the manifest
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	manifestMediaType = "application/vnd.oci.image.manifest.v1+json"
	configMediaType   = "application/vnd.wasm.config.v1+json"
	layerMediaType    = "application/vnd.wasm.content.layer.v1+wasm"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType,omitempty"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// reference is HOST:PORT/REPO with a tag or a digest.
type reference struct {
	host, repo, tag, digest string
}

func parseReference(s string) (reference, error) {
	s = strings.TrimPrefix(s, "registry://")
	host, rest, ok := strings.Cut(s, "/")
	if !ok || rest == "" {
		return reference{}, fmt.Errorf("reference %q: want HOST:PORT/REPO:TAG or HOST:PORT/REPO@DIGEST", s)
	}
	// Loopback only: the rehearsal never talks to a registry on the network.
	h, _, err := net.SplitHostPort(host)
	if err != nil || (h != "127.0.0.1" && h != "localhost" && h != "::1") {
		return reference{}, fmt.Errorf("reference %q: the registry must be on the loopback interface (127.0.0.1:PORT)", s)
	}
	r := reference{host: host}
	if repo, digest, ok := strings.Cut(rest, "@"); ok {
		r.repo, r.digest = repo, digest
	} else if i := strings.LastIndex(rest, ":"); i > 0 {
		r.repo, r.tag = rest[:i], rest[i+1:]
	} else {
		return reference{}, fmt.Errorf("reference %q has no tag and no digest", s)
	}
	return r, nil
}

func (r reference) ref() string {
	if r.digest != "" {
		return r.digest
	}
	return r.tag
}

var client = &http.Client{Timeout: 30 * time.Second}

func (r reference) url(path string) string { return "http://" + r.host + "/v2/" + r.repo + path }

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// do sends req and returns the answer's headers and body when its status is one of want.
func do(req *http.Request, want ...int) (http.Header, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, err
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return resp.Header, body, nil
		}
	}
	return nil, nil, fmt.Errorf("%s %s: %s: %s", req.Method, req.URL, resp.Status, bytes.TrimSpace(body))
}

// pushBlob uploads b in one request (POST then PUT ?digest=), unless the registry has it already.
func pushBlob(r reference, b []byte) (string, error) {
	d := digestOf(b)
	head, _ := http.NewRequest(http.MethodHead, r.url("/blobs/"+d), http.NoBody)
	if _, _, err := do(head, http.StatusOK); err == nil {
		return d, nil
	}
	post, _ := http.NewRequest(http.MethodPost, r.url("/blobs/uploads/"), http.NoBody)
	header, _, err := do(post, http.StatusAccepted)
	if err != nil {
		return "", err
	}
	loc := header.Get("Location")
	if loc == "" {
		return "", errors.New("the registry gave no upload location")
	}
	if strings.HasPrefix(loc, "/") {
		loc = "http://" + r.host + loc
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	put, _ := http.NewRequest(http.MethodPut, loc+sep+"digest="+d, bytes.NewReader(b))
	put.Header.Set("Content-Type", "application/octet-stream")
	if _, _, err := do(put, http.StatusCreated); err != nil {
		return "", err
	}
	return d, nil
}

func metadataAnnotations(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var md struct {
		Annotations map[string]string `yaml:"annotations"`
	}
	if err := yaml.Unmarshal(data, &md); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ociAnnotations(md.Annotations), nil
}

// ociAnnotations is what kwctl push puts on the manifest: the OCI annotations are single-line strings, so
// multi-line values are left out, and the policy's source becomes org.opencontainers.image.source.
func ociAnnotations(metadata map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range metadata {
		if len(strings.Split(strings.TrimRight(v, "\n"), "\n")) <= 1 {
			out[k] = strings.TrimSpace(v)
		}
	}
	if src, ok := out["io.kubewarden.policy.source"]; ok {
		if _, set := out["org.opencontainers.image.source"]; !set {
			out["org.opencontainers.image.source"] = src
		}
	}
	return out
}

func push(module, target, metadataPath string) error {
	r, err := parseReference(target)
	if err != nil {
		return err
	}
	if r.tag == "" {
		return errors.New("push needs a tag")
	}
	wasm, err := os.ReadFile(module)
	if err != nil {
		return err
	}
	annotations, err := metadataAnnotations(metadataPath)
	if err != nil {
		return err
	}
	config := []byte("{}")
	configDigest, err := pushBlob(r, config)
	if err != nil {
		return err
	}
	layerDigest, err := pushBlob(r, wasm)
	if err != nil {
		return err
	}
	// No mediaType member: kwctl's client (oci-client) leaves it out and names it in the Content-Type.
	m := manifest{
		SchemaVersion: 2,
		Config:        descriptor{MediaType: configMediaType, Digest: configDigest, Size: int64(len(config))},
		Layers:        []descriptor{{MediaType: layerMediaType, Digest: layerDigest, Size: int64(len(wasm))}},
		Annotations:   annotations,
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodPut, r.url("/manifests/"+r.tag), bytes.NewReader(body))
	req.Header.Set("Content-Type", manifestMediaType)
	header, _, err := do(req, http.StatusCreated)
	if err != nil {
		return err
	}
	d := digestOf(body)
	if got := header.Get("Docker-Content-Digest"); got != "" && got != d {
		return fmt.Errorf("the registry stored the manifest as %s, want %s", got, d)
	}
	// kwctl push -o json prints the same immutable reference.
	fmt.Printf("%s/%s@%s\n", r.host, r.repo, d)
	return nil
}

func getManifest(r reference) ([]byte, manifest, error) {
	req, _ := http.NewRequest(http.MethodGet, r.url("/manifests/"+r.ref()), http.NoBody)
	req.Header.Set("Accept", manifestMediaType)
	_, body, err := do(req, http.StatusOK)
	if err != nil {
		return nil, manifest{}, err
	}
	if r.digest != "" && digestOf(body) != r.digest {
		return nil, manifest{}, fmt.Errorf("manifest digest %s, asked for %s", digestOf(body), r.digest)
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, manifest{}, fmt.Errorf("manifest: %w", err)
	}
	return body, m, nil
}

func getBlob(r reference, d descriptor) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, r.url("/blobs/"+d.Digest), http.NoBody)
	_, body, err := do(req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if got := digestOf(body); got != d.Digest || int64(len(body)) != d.Size {
		return nil, fmt.Errorf("blob %s: the registry returned %d bytes with digest %s, want %d bytes: refusing it", d.Digest, len(body), got, d.Size)
	}
	return body, nil
}

// pull fetches the module as policy-server does: the manifest must be a wasm policy (the wasm config
// media type, exactly one wasm layer), and every blob must match its digest.
func pull(source, out string) error {
	r, err := parseReference(source)
	if err != nil {
		return err
	}
	_, m, err := getManifest(r)
	if err != nil {
		return err
	}
	if m.Config.MediaType != configMediaType {
		return fmt.Errorf("config media type %q, want %s", m.Config.MediaType, configMediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != layerMediaType {
		return fmt.Errorf("want exactly one %s layer, got %+v", layerMediaType, m.Layers)
	}
	if _, err := getBlob(r, m.Config); err != nil {
		return err
	}
	wasm, err := getBlob(r, m.Layers[0])
	if err != nil {
		return err
	}
	return os.WriteFile(out, wasm, 0o600)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ociwasm push|pull|manifest ...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	metadata := fs.String("metadata", "", "push: metadata.yml whose annotations go on the manifest")
	out := fs.String("o", "", "pull: where to write the module")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch {
	case os.Args[1] == "push" && fs.NArg() == 2:
		err = push(fs.Arg(0), fs.Arg(1), *metadata)
	case os.Args[1] == "pull" && fs.NArg() == 1 && *out != "":
		err = pull(fs.Arg(0), *out)
	case os.Args[1] == "manifest" && fs.NArg() == 1:
		var r reference
		if r, err = parseReference(fs.Arg(0)); err == nil {
			var body []byte
			if body, _, err = getManifest(r); err == nil {
				fmt.Printf("%s\n", body)
			}
		}
	default:
		err = errors.New("usage: ociwasm push [-metadata FILE] MODULE REF | pull -o FILE REF | manifest REF")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociwasm:", err)
		os.Exit(1)
	}
}
