package policy

import (
	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// Evaluator decides validate payloads one after another, keeping the records an evaluation makes (the
// index's, the walks', the edits') for the next (docs/runtime.md "Storage kept between evaluations"). It may
// be reused, but not from concurrent goroutines; an answer may point into it until the next call.
type Evaluator struct {
	log *Logger
	// request and evaluation live here rather than in a frame (docs/runtime.md "Storage kept between evaluations").
	request           request
	evaluation        evaluation
	records           rawjson.Records
	object, oldObject objectStorage // the walks of request.object and request.oldObject
	edits             editStorage
	walkApart         bool // an UPDATE's objects walked one after the other, never together (tests compare)
}

// NewEvaluator returns an Evaluator that logs to logger.
func NewEvaluator(logger *Logger) *Evaluator { return &Evaluator{log: logger} }

// LogTo makes ev log to logger (for an Evaluator declared as a variable).
func (ev *Evaluator) LogTo(logger *Logger) { ev.log = logger }

// Reserve gives the evaluator room for the records of a request of up to size bytes; main calls it at
// start-up (docs/runtime.md "Pages").
func (ev *Evaluator) Reserve(size int) {
	ev.records.Reserve(size)
	for _, w := range []*walkStorage{&ev.object.targets, &ev.object.guards, &ev.oldObject.targets, &ev.oldObject.guards} {
		w.refs.reserve(2)   // a built-in kind's targets, or a small declared kind's maps
		w.values.reserve(4) // the values of their paths' wildcards
	}
	ev.edits.writes.reserve(2)
	ev.edits.groups.reserve(2)
	ev.edits.spans.reserve(4)
}

// forget drops the request and the evaluation once the answer is written: they are views of a payload
// the caller may replace, which they would keep alive.
func (ev *Evaluator) forget() {
	ev.request, ev.evaluation = request{}, evaluation{}
}

// objectStorage is the storage of one object's walks.
type objectStorage struct {
	targets, guards walkStorage
}

// walkStorage is the storage of a walker's records.
type walkStorage struct {
	refs   reused[walk.Ref]
	values reused[int32]
	names  reused[string]
}

// editStorage is the storage of a change's edits.
type editStorage struct {
	writes reused[keyWrite]
	groups reused[group]
	spans  reused[rawjson.Span]
}

// reused is storage for a slice an evaluation fills, kept for the next: take hands it out emptied, keep
// takes back the slice as filled (maybe grown elsewhere).
type reused[T any] struct {
	kept []T
}

// take returns the storage emptied with room for n elements, or a new slice when it has less. The last
// evaluation's elements are zeroed first: they may point at its garbage, which they would keep alive.
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
