package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The manifest carries what kwctl push writes: single-line annotations, trimmed, and the policy's source
// as org.opencontainers.image.source.
func TestOCIAnnotationsAreKwctls(t *testing.T) {
	got := ociAnnotations(map[string]string{
		"io.kubewarden.policy.title":  " yunikorn-user-info ",
		"io.kubewarden.policy.source": "https://github.com/o/r",
		"io.kubewarden.policy.usage":  "line one\nline two\n",
	})
	want := map[string]string{
		"io.kubewarden.policy.title":      "yunikorn-user-info",
		"io.kubewarden.policy.source":     "https://github.com/o/r",
		"org.opencontainers.image.source": "https://github.com/o/r",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// The tool talks to a registry on the loopback interface only.
func TestReferencesAreLoopbackOnly(t *testing.T) {
	for _, ref := range []string{"ghcr.io/o/p:v1", "10.0.0.1:5000/p:v1", "127.0.0.1/p:v1", "127.0.0.1:15300/p", "127.0.0.1:15300"} {
		if _, err := parseReference(ref); err == nil {
			t.Errorf("parseReference(%q) accepted it", ref)
		}
	}
	r, err := parseReference("registry://127.0.0.1:15300/policies/y@sha256:00")
	if err != nil || r.repo != "policies/y" || r.digest != "sha256:00" || r.tag != "" {
		t.Errorf("parseReference by digest = %+v, %v", r, err)
	}
	r, err = parseReference("127.0.0.1:15300/policies/y:v0.1.0")
	if err != nil || r.repo != "policies/y" || r.tag != "v0.1.0" {
		t.Errorf("parseReference by tag = %+v, %v", r, err)
	}
}
