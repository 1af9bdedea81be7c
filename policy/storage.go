package policy

import "github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"

// Storage holds the records of one evaluation (the index's, the walks', the edits') and keeps them for
// the next, so that an instance kept for many evaluations reuses them instead of leaving garbage
// (docs/runtime.md "Storage kept between evaluations"). One evaluation at a time: an answer may point into
// the storage until the next one starts.
type Storage struct {
	// request and evaluation are the evaluation's own records, here rather than in the evaluation's
	// frame: both are shared with calls that are not inlined, so the guest made each a heap allocation
	// (with the request's copy as returned, three: 1.1 KB zeroed and copied per request).
	request           request
	evaluation        evaluation
	records           rawjson.Records
	object, oldObject objectStorage // the walks of request.object and request.oldObject
	edits             editStorage
}

// Reserve gives the storage room for the records of a request of up to size bytes. main calls it at
// start-up, which in a pre-initialised module runs once, when the module is built: a fresh instance
// (one request, as policy-server runs it) then makes a small request's records in storage it already
// has, instead of in a dozen allocations, each zeroed, of TinyGo's allocator (a Pod stamp made 44). A
// larger request grows the storage as before.
func (s *Storage) Reserve(size int) {
	s.records.Reserve(size)
	for _, w := range []*walkStorage{&s.object.targets, &s.object.guards, &s.oldObject.targets, &s.oldObject.guards} {
		w.refs.reserve(2)  // a built-in kind's targets, or a small declared kind's maps
		w.keys.reserve(64) // their concrete paths ("spec.template.metadata.annotations")
	}
	s.edits.writes.reserve(2)
	s.edits.groups.reserve(2)
	s.edits.spans.reserve(4)
}

// forget drops the request and the evaluation once the answer is written: they are views of the payload
// and hold its settings, which the caller may replace before the next evaluation (a larger request needs
// a larger buffer), and which they would keep alive through it.
func (s *Storage) forget() {
	s.request, s.evaluation = request{}, evaluation{}
}

// objectStorage is the storage of one object's walks: its targets' and its guard maps'.
type objectStorage struct {
	targets, guards walkStorage
}

// walkStorage is the storage of a walker's records: the maps found and their concrete paths.
type walkStorage struct {
	refs reused[targetRef]
	keys reused[byte]
}

// editStorage is the storage of a change's edits: the changes, their groups and their spans.
type editStorage struct {
	writes reused[keyWrite]
	groups reused[group]
	spans  reused[rawjson.Span]
}

// reused is storage for a slice an evaluation fills, kept for the next evaluation: take hands it out
// emptied, and keep takes back the slice as filled (grown, maybe, into storage of its own).
type reused[T any] struct {
	kept []T
}

// take returns the storage emptied, with room for n elements, or an empty slice of its own with that
// room when the storage has less (a fresh instance's storage has none: it allocates as it would without
// it). The elements the last evaluation kept are zeroed first: they may point at its garbage (a view of
// a request buffer since replaced, its settings), which they would keep alive.
func (r *reused[T]) take(n int) []T {
	clear(r.kept)
	if cap(r.kept) < n {
		return make([]T, 0, n)
	}
	return r.kept[:0]
}

// reserve gives the storage room for n elements.
func (r *reused[T]) reserve(n int) {
	if cap(r.kept) < n {
		r.kept = make([]T, 0, n)
	}
}

// keep stores s, a slice take returned, as filled, for the next take.
func (r *reused[T]) keep(s []T) { r.kept = s }
