package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The plot in the docs is the one the saved figures beside it draw: neither was edited by hand.
func TestReplot_TheDocsPlotIsDrawnFromTheSavedFigures(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plot.svg")
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	err := replot(options{replot: "../../docs/policy-server-latency.json", svg: svg})
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/policy-server-latency.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/policy-server-latency.svg is not what docs/policy-server-latency.json draws: run the benchmark, or -replot")
	}
}
