package shipcheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The table of docs/performance.md "Through policy-server" is the run saved beside its plot
// (docs/policy-server-latency.json, written by make bench-policy-server): every row's ratios are that run's.
func TestDocs_PolicyServerTableIsTheSavedRun(t *testing.T) {
	var saved struct {
		Scenarios []struct {
			Name string
			Size int
		}
		Measures struct{ Figures map[string]map[string][]int64 }
	}
	if err := json.Unmarshal(readRepoFile(t, "docs/policy-server-latency.json"), &saved); err != nil {
		t.Fatalf("docs/policy-server-latency.json: %v", err)
	}
	bySize := map[string]string{}
	for _, sc := range saved.Scenarios {
		bySize[strconv.Itoa(sc.Size)] = sc.Name
	}
	median := func(module, key string) float64 {
		v := slices.Clone(saved.Measures.Figures[module][key])
		if len(v) == 0 {
			t.Fatalf("the saved run has no %s figures for %s", module, key)
		}
		slices.Sort(v)
		return float64(v[len(v)/2])
	}
	rows := 0
	for line := range strings.SplitSeq(section(t, "docs/performance.md", "Through policy-server"), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 8 || bySize[cells[1]] == "" {
			continue
		}
		rows++
		key := bySize[cells[1]] + "/" + cells[2]
		p := median("policy", key)
		for i, floor := range map[int]string{6: "do-nothing", 7: "mutating floor"} {
			if want := fmt.Sprintf("%.2f", p/median(floor, key)); cells[i] != want {
				t.Errorf("docs/performance.md: %s, %s clients: x %s is %s, the saved run %s", cells[0], cells[2], floor, cells[i], want)
			}
		}
	}
	if want := 2 * len(saved.Scenarios); rows != want {
		t.Errorf("docs/performance.md \"Through policy-server\" has %d rows of the saved run's sizes, want %d (one per request and client count)", rows, want)
	}
}

// docs/runtime.md "Pages" gives test/footprint's limits as the test sets them.
func TestDocs_PagesGivesTheFootprintLimits(t *testing.T) {
	var limits []string
	for _, m := range regexp.MustCompile(`\{"[a-z-]+", (\d+), (?:true|false)\}`).FindAllStringSubmatch(string(readRepoFile(t, "test/footprint/footprint_test.go")), -1) {
		limits = append(limits, m[1])
	}
	if len(limits) != 3 {
		t.Fatalf("test/footprint/footprint_test.go: found the limits %v, want three (a Pod stamp, a Deployment stamp, a status update)", limits)
	}
	if want := "the limits are " + limits[0] + ", " + limits[1] + " and " + limits[2]; !strings.Contains(strings.Join(strings.Fields(section(t, "docs/runtime.md", "Pages")), " "), want) {
		t.Errorf("docs/runtime.md \"Pages\" does not say %q, as test/footprint sets them", want)
	}
}
