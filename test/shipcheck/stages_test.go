package shipcheck

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The table that ends `make test` (hack/stages.sh) says which stages ran, which were skipped and which left
// scenarios out, with the reasons the stages reported through hack/stage-note.sh: a stage that skipped
// itself with a banner (an unshare refused, a module the proxy would not serve) must not read "ok".
func TestStages_TableShowsSkippedStages(t *testing.T) {
	dir := t.TempDir()
	note := repoPath("hack/stage-note.sh")
	writeFile(t, dir, "Makefile", strings.Join([]string{
		"ran:", "\t@echo ran",
		"skipped:", "\t@" + note + " skipped 'the operator scenarios did NOT run: unshare --net --mount is refused here'",
		"partly:", "\t@" + note + " part 'YuniKorn v1.4.0 was NOT tested.'",
		"",
	}, "\n"))
	out, err := runScript(t, dir, []string{"MAKE=make"}, "hack/stages.sh", "ran", "skipped", "partly")
	if err != nil {
		t.Fatalf("stages.sh: %v\n%s", err, out)
	}
	for _, want := range []string{
		`(?m)^ran\s+\d+\s+ok$`,
		`(?m)^skipped\s+\d+\s+SKIPPED$`,
		`(?m)^partly\s+\d+\s+ok, in part$`,
		`(?m)^2 of 3 stages ran \(1 in part\), 1 skipped$`,
		`(?m)^  skipped skipped: the operator scenarios did NOT run: unshare --net --mount is refused here$`,
		`(?m)^  partly left out: YuniKorn v1\.4\.0 was NOT tested\.$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the table does not match %s:\n%s", want, out)
		}
	}
	// Run on its own (no STAGE_NOTES), a stage's note goes nowhere: its banner is what the user reads.
	if out, err := runScript(t, dir, nil, "hack/stage-note.sh", "skipped", "x"); err != nil {
		t.Errorf("stage-note.sh without STAGE_NOTES: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("stage-note.sh without STAGE_NOTES wrote files: %v", entries)
	}
}

// Every banner that skips a stage or part of it reports it to the table: the scripts that print one call
// hack/stage-note.sh.
func TestStages_EveryBannerIsNoted(t *testing.T) {
	for _, name := range []string{"test/cluster/run.sh", "test/cluster/run-operators.sh", "test/cluster/yunikorn.sh", "test/release/tools.sh"} {
		text := string(readRepoFile(t, name))
		if !strings.Contains(text, "SKIPPED") {
			t.Errorf("%s prints no SKIPPED banner: the list is out of date", name)
		}
		if !strings.Contains(text, "hack/stage-note.sh") {
			t.Errorf("%s prints a SKIPPED banner without hack/stage-note.sh: make test's table would say ok", name)
		}
	}
}
