package walk

import (
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

const annotationKey = "yunikorn.apache.org/user.info"

// A path walked along with another counts its own maps against the bound of one path (docs/rules.md
// "Cost"): three elements naming a map by each of two paths are within a bound of three, four are not.
func TestWalk_ARiderCountsItsOwnMaps(t *testing.T) {
	p, _ := Parse("spec.items[*]>a.annotations", false, false)
	q, _ := Parse("spec.items[*]>b.annotations", false, false)
	paths := []Path{p, q}
	if riders := ridersOf(paths); len(riders) != 1 || riders[0] != (rider{leader: 0, path: 1, at: 1}) {
		t.Fatalf("riders %+v, want the second path riding the first from spec.items[*]", riders)
	}
	for n, want := range map[int]Fault{3: NoFault, 4: TooManyMaps} {
		doc := `{"spec":{"items":[{}` + strings.Repeat(`,{}`, n-1) + `]}}`
		w := Walker{Index: rawjson.Parse(doc), Field: "request.object", Entry: annotationKey, Most: 3}
		if got := w.WalkAll(rawjson.Root(doc), paths); got.Fault != want {
			t.Errorf("%d elements: %+v, want fault %d", n, got, want)
		}
		if want == NoFault && len(w.Refs) != 2*n {
			t.Errorf("%d elements: %d maps, want %d", n, len(w.Refs), 2*n)
		}
		// a path walked on its own has the same bound
		alone := Walker{Index: rawjson.Parse(doc), Field: "request.object", Entry: annotationKey, Most: 3}
		if got := alone.WalkAll(rawjson.Root(doc), paths[:1]); got.Fault != want {
			t.Errorf("%d elements, one path: %+v, want fault %d", n, got, want)
		}
	}
}

// A value outside the document the walker's index holds is a fault of its own, never walked as if it named
// nothing.
func TestWalk_AValueOutsideTheIndexIsAFault(t *testing.T) {
	p, _ := Parse("spec.items[*].annotations", false, false)
	doc := `{"spec":{"items":[{"annotations":{}}]}}`
	w := Walker{Index: rawjson.Parse(`{}`), Field: "request.object", Entry: annotationKey}
	if got := w.WalkAll(rawjson.Root(doc), []Path{p}); got.Fault != NotIndexed {
		t.Fatalf("walked over a document the index does not hold: %+v, want fault NotIndexed", got)
	}
}
