package walk

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPaths_ParseTheSyntax(t *testing.T) {
	for _, tc := range []struct {
		text   string
		guard  bool
		want   []Segment
		create int
		plain  string
	}{
		{text: "spec.driver>annotations", want: []Segment{{"spec", ""}, {"driver", ""}, {"annotations", ""}}, create: 2, plain: "spec.driver.annotations"},
		{text: "spec.driver.annotations", want: []Segment{{"spec", ""}, {"driver", ""}, {"annotations", ""}}, create: 2, plain: "spec.driver.annotations"},
		{text: "spec>podTemplate.metadata.annotations", want: []Segment{{"spec", ""}, {"podTemplate", ""}, {"metadata", ""}, {"annotations", ""}}, create: 1, plain: "spec.podTemplate.metadata.annotations"},
		{text: "spec.workerGroupSpecs[*].template>metadata.annotations", want: []Segment{{"spec", ""}, {"workerGroupSpecs", "[*]"}, {"template", ""}, {"metadata", ""}, {"annotations", ""}}, create: 3},
		{text: "spec.pytorchReplicaSpecs{*}.template>metadata.annotations", want: []Segment{{"spec", ""}, {"pytorchReplicaSpecs", "{*}"}, {"template", ""}, {"metadata", ""}, {"annotations", ""}}, create: 3},
		{text: "spec.items[*]>annotations", want: []Segment{{"spec", ""}, {"items", "[*]"}, {"annotations", ""}}, create: 2},
		{text: "annotations", want: []Segment{{"annotations", ""}}, create: 0, plain: "annotations"},
		{text: "spec.sparkConf", guard: true, want: []Segment{{"spec", ""}, {"sparkConf", ""}}, create: 2, plain: "spec.sparkConf"},
		{text: "spec.groups[*].conf_map-2", guard: true, want: []Segment{{"spec", ""}, {"groups", "[*]"}, {"conf_map-2", ""}}, create: 3},
	} {
		p, problem := Parse(tc.text, tc.guard, false)
		if problem != "" {
			t.Errorf("%s: %s", tc.text, problem)
			continue
		}
		if diff := cmp.Diff(tc.want, p.Segments, cmp.AllowUnexported(Segment{})); diff != "" || p.Create != tc.create || p.Plain != tc.plain {
			t.Errorf("%s: create %d plain %q (want %d %q) segments:\n%s", tc.text, p.Create, p.Plain, tc.create, tc.plain, diff)
		}
	}
}

func TestPaths_SyntaxErrorsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		text  string
		guard bool
		want  string
	}{
		{"", false, "the path is empty"},
		{"spec..driver", false, "segment 2 is empty"},
		{".spec", false, "segment 1 is empty"},
		{">metadata.annotations", false, "segment 1 is empty"},
		{"spec.driver>", false, "ends with a separator"},
		{"spec.driver.", false, "ends with a separator"},
		{"spec>driver>annotations", false, `more than one ">"`},
		{"spec>items[*].annotations", false, `a wildcard may not follow ">"`},
		{"spec>groups{*}.annotations", false, `a wildcard may not follow ">"`},
		{"spec.items[*]", false, "the last segment must be a plain name"},
		{"spec.items{*}", true, "the last segment must be a plain name"},
		{"spec.items[0].annotations", false, `unexpected '['`},
		{"spec.items[*]annotations", false, `unexpected 'a'`},
		{"spec.a b", false, `unexpected ' '`},
		{"spec.$x", false, `segment 2 starts with '$'`},
		{"spec.sparkConf>x", true, `a guard path names existing maps only`},
		{strings.Repeat("a.", 40) + "annotations", false, "more than 32 segments"},
	} {
		_, problem := Parse(tc.text, tc.guard, false)
		if !strings.Contains(problem, tc.want) {
			t.Errorf("%q: problem %q, want it to contain %q", tc.text, problem, tc.want)
		}
	}
}
