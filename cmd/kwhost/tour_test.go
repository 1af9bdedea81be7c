package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost/guesttest"
)

// make demo's tour: every scenario of testdata/tour.json gives the outcome it says it shows, and every
// request fixture is part of the tour.
func TestTour_EveryScenarioGivesWhatItShows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.wasm")
	if err := os.WriteFile(path, guesttest.Policy(t), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runKwhost("", "tour", path, "../../testdata/tour.json")
	if got.code != 0 || !strings.Contains(got.stdout, "#   scenario") || strings.Contains(got.stdout, "MISMATCH") {
		t.Fatalf("got exit %d\n%s\n%s", got.code, got.stdout, got.stderr)
	}
	steps, err := readTour("../../testdata/tour.json")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, _ := filepath.Glob("../../testdata/requests/*.json")
	for _, f := range fixtures {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		found := false
		for _, s := range steps {
			found = found || s.Request == name
		}
		if !found {
			t.Errorf("testdata/requests/%s.json is not in the tour (testdata/tour.json): add the scenario it shows", name)
		}
	}

	// A scenario that does not give what it expects fails the tour, and the table says which.
	dir := t.TempDir()
	for _, sub := range []string{"requests", "settings"} {
		if err := os.Symlink(filepath.Join(mustAbs(t, "../../testdata"), sub), filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	tour := filepath.Join(dir, "tour.json")
	if err := os.WriteFile(tour, []byte(`[{"request":"pod-create-bob-forged","expect":"stamp","shows":"wrong on purpose"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	got = runKwhost("", "tour", path, tour)
	if got.code == 0 || !strings.Contains(got.stdout, "stamp      replace     MISMATCH") {
		t.Fatalf("a mismatch must fail the tour: exit %d\n%s", got.code, got.stdout)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
