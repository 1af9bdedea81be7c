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
	request    request
	evaluation evaluation
	records    rawjson.Records
}

// LogTo makes ev log to logger (for an Evaluator declared as a variable).
func (ev *Evaluator) LogTo(logger *Logger) { ev.log = logger }

// Reserve gives the evaluator room for the records of a request of up to size bytes; main calls it at
// start-up (docs/runtime.md "Pages").
func (ev *Evaluator) Reserve(size int) {
	ev.records.Reserve(size)
	e := &ev.evaluation
	for _, w := range []*walk.Walker{&e.now.targets, &e.now.guards, &e.was.targets, &e.was.guards} {
		w.Reserve(2, 4) // a built-in kind's targets, or a small declared kind's maps, and their wildcards' values
	}
	e.edits.reserve(2, 2, 4)
}

// forget drops the request and the evaluation once the answer is written: they are views of a payload
// the caller may replace, which they would keep alive.
func (ev *Evaluator) forget() {
	ev.request = request{}
	ev.evaluation.forget()
}
