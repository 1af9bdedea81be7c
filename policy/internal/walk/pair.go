package walk

import (
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// pairWalk walks a declared kind's annotation paths over an UPDATE's new and old objects together, so that
// a target missing from both (an unchanged pair) is never recorded. Where only one object goes on, its own
// Walker goes on alone (docs/runtime.md "What a target costs").
type pairWalk struct {
	now, was *Walker
	// most is how many maps one path may name in the new object alone (new elements, stamped as on
	// CREATE) before the answer is certainly over 3 MiB; refused says the walk stopped there.
	most    int
	refused bool
}

// Paired walks paths over an UPDATE's new and old objects (from their roots) together, with now and was,
// the walkers of each; most, when not 0, is how many maps one path may name in the new object alone. ok is
// false when a walk met a problem: walking each object by itself then tells which. refused says the new
// object alone names more than most maps (docs/rules.md "Cost").
func Paired(now, was *Walker, root, oldRoot gjson.Result, paths []Path, most int) (ok, refused bool) {
	pw := pairWalk{now: now, was: was, most: most}
	ok = pw.walkAll(root, oldRoot, paths)
	return ok, pw.refused
}

// walkAll is Walker.WalkAll over both objects: riders go along with their leaders.
func (pw *pairWalk) walkAll(root, oldRoot gjson.Result, paths []Path) bool {
	riders := ridersOf(paths)
	for _, w := range [2]*Walker{pw.now, pw.was} {
		w.paths, w.riders = paths, riders
	}
	if pw.most > 0 {
		pw.now.named = make([]int, len(paths)) // counted per path, whatever rides along
	}
	for i := range paths {
		if rides(riders, i) {
			continue
		}
		p := &paths[i]
		for _, w := range [2]*Walker{pw.now, pw.was} {
			w.taken, w.path, w.depth, w.from = w.taken[:0], p, 0, len(w.Refs)
		}
		if !pw.step(root, oldRoot, p, 0) {
			return false
		}
	}
	return true
}

// step looks up segment i of p in cur and in old, objects at the same place of each document.
func (pw *pairWalk) step(cur, old gjson.Result, p *Path, i int) bool {
	name := p.Segments[i].Name
	v, dup := pw.now.childOf(cur, name)
	ov, oldDup := pw.was.childOf(old, name)
	if dup || oldDup {
		return false
	}
	pw.now.push()
	pw.was.push()
	ok := pw.stepIn(cur, v, old, ov, p, i)
	pw.now.pop()
	pw.was.pop()
	return ok
}

// stepIn goes on from v and ov, segment i of p found in cur and old.
func (pw *pairWalk) stepIn(cur, v, old, ov gjson.Result, p *Path, i int) bool {
	if i < p.Create {
		return pw.stepBefore(cur, v, old, ov, p, i)
	}
	missing, wasMissing := rawjson.IsMissing(v), rawjson.IsMissing(ov)
	if !missing && !v.IsObject() || !wasMissing && !ov.IsObject() {
		return false // bad input
	}
	switch {
	case missing && wasMissing:
		return true // an unchanged pair
	case missing:
		return pw.now.found(p, cur, len(p.Segments)-i, v, gjson.Result{}) == NoFault && pw.was.stepIn(old, ov, p, i) == NoFault
	case wasMissing:
		return pw.was.found(p, old, len(p.Segments)-i, ov, gjson.Result{}) == NoFault && pw.now.stepIn(cur, v, p, i) == NoFault
	case i == len(p.Segments)-1:
		return pw.now.found(p, v, 0, gjson.Result{}, v) == NoFault && pw.was.found(p, ov, 0, gjson.Result{}, ov) == NoFault
	}
	return pw.step(v, ov, p, i+1)
}

// stepBefore is Walker.stepBefore for both objects.
func (pw *pairWalk) stepBefore(cur, v, old, ov gjson.Result, p *Path, i int) bool {
	switch {
	case i == len(p.Segments)-1: // a map named only when it exists
		return pw.now.stepBefore(v, p, i, cur) == NoFault && pw.was.stepBefore(ov, p, i, old) == NoFault
	case p.Segments[i].Wild != "":
		return pw.each(v, ov, p, i, p.Segments[i].Wild)
	}
	return pw.stepFrom(v, ov, p, i+1)
}

// stepFrom goes on with segment i of p from v and ov, where only objects lead on.
func (pw *pairWalk) stepFrom(v, ov gjson.Result, p *Path, i int) bool {
	is, was := v.IsObject(), ov.IsObject()
	switch {
	case p.Required && (!is || !was):
		return false // the message is Walker.stepBefore's
	case is && was:
		return pw.step(v, ov, p, i)
	case is:
		pw.now.Most = pw.most
		return pw.settle(pw.now.step(v, p, i))
	case was:
		return pw.wasAlone(ov, p, i, "")
	}
	return true
}

// settle ends a walk of the new object alone: the bound refuses, any other problem gives up.
func (pw *pairWalk) settle(problem Fault) bool {
	pw.now.Most = 0
	pw.refused = problem == TooManyMaps
	return problem == NoFault
}

// wasAlone walks on in the old object where the new one names nothing: for its bad input only, since a
// target only the old object holds needs nothing. wild, when set, is what is left of segment i's wildcards.
func (pw *pairWalk) wasAlone(ov gjson.Result, p *Path, i int, wild string) bool {
	w := pw.was
	w.Existing = true
	var problem Fault
	if wild != "" {
		problem = w.eachNext(ov, p, i, wild)
	} else {
		problem = w.step(ov, p, i)
	}
	w.Existing = false
	return problem == NoFault
}

// each applies the wildcards wild of segment i of p to v and ov, pairing array elements by index and
// object members by name.
func (pw *pairWalk) each(v, ov gjson.Result, p *Path, i int, wild string) bool {
	array := wild[:wildcardLen] == everyElement
	is, was := array && v.IsArray() || !array && v.IsObject(), array && ov.IsArray() || !array && ov.IsObject()
	switch {
	case is && was:
	case is:
		pw.now.Most = pw.most
		return pw.settle(pw.now.each(v, p, i, wild))
	case was:
		pw.was.Existing = true
		problem := pw.was.each(ov, p, i, wild)
		pw.was.Existing = false
		return problem == NoFault
	default:
		return true
	}
	it, indexed := pw.now.Index.Members(v)
	oldIt, oldIndexed := pw.was.Index.Members(ov)
	if !indexed || !oldIndexed {
		return false
	}
	if array {
		return pw.eachElement(it, oldIt, p, i, wild)
	}
	return pw.eachMember(it, oldIt, p, i, wild)
}

// eachElement pairs the elements of two arrays by index.
func (pw *pairWalk) eachElement(it, oldIt rawjson.MemberIter, p *Path, i int, wild string) bool {
	n := int32(0)
	for ; ; n++ {
		var elem, oldElem gjson.Result
		var more, wasMore bool
		if it, _, elem, more = it.Next(); !more {
			break
		}
		oldIt, _, oldElem, wasMore = oldIt.Next()
		if !pw.next(elem, n, oldElem, n, wasMore, p, i, wild) {
			return false
		}
	}
	for ; ; n++ { // the old array's elements past the new one's
		var oldElem gjson.Result
		var more bool
		if oldIt, _, oldElem, more = oldIt.Next(); !more {
			return true
		}
		if isEmpty(oldElem) {
			continue // holds no map, and no bad input
		}
		pw.was.take(n)
		ok := pw.wasAlone(oldElem, p, i, wild)
		pw.was.giveBack()
		if !ok {
			return false
		}
	}
}

// next goes on from elem, which a wildcard of segment i reached in the new object taking the value at, and
// from oldElem (taking oldAt) when the old object holds the same place; otherwise the new one goes on alone.
func (pw *pairWalk) next(elem gjson.Result, at int32, oldElem gjson.Result, oldAt int32, paired bool, p *Path, i int, wild string) bool {
	pw.now.take(at)
	var ok bool
	if paired {
		pw.was.take(oldAt)
		ok = pw.eachNext(elem, oldElem, p, i, wild)
		pw.was.giveBack()
	} else {
		pw.now.Most = pw.most
		ok = pw.settle(pw.now.eachNext(elem, p, i, wild))
	}
	pw.now.giveBack()
	return ok
}

// eachMember pairs the members of two objects by name.
func (pw *pairWalk) eachMember(it, oldIt rawjson.MemberIter, p *Path, i int, wild string) bool {
	seen := map[string]bool{}
	olds := oldMembers{it: oldIt, paired: map[string]bool{}}
	for {
		var key, elem gjson.Result
		var more bool
		if it, key, elem, more = it.Next(); !more {
			break
		}
		if seen[key.Str] {
			return false
		}
		seen[key.Str] = true
		oldElem, paired, ok := olds.find(key.Str)
		if !ok {
			return false
		}
		var oldAt int32
		if paired {
			oldAt = pw.was.Places.member(key.Str)
		}
		if !pw.next(elem, pw.now.Places.member(key.Str), oldElem, oldAt, paired, p, i, wild) {
			return false
		}
	}
	left, ok := olds.rest()
	if !ok {
		return false
	}
	for name, oldElem := range left { // the old object's members the new one does not hold
		pw.was.take(pw.was.Places.member(name))
		ok := pw.wasAlone(oldElem, p, i, wild)
		pw.was.giveBack()
		if !ok {
			return false
		}
	}
	return true
}

// oldMembers gives the old object's members by name: in step while both objects give the same names in
// the same order (the API server keeps it), then through a map of the members left.
type oldMembers struct {
	it     rawjson.MemberIter
	left   map[string]gjson.Result // once the two orders part
	paired map[string]bool         // the names paired in step
}

// find returns the old member named name; ok is false when the old object gives a name twice.
func (o *oldMembers) find(name string) (elem gjson.Result, paired, ok bool) {
	if o.left == nil {
		var key gjson.Result
		if o.it, key, elem, paired = o.it.Next(); paired && key.Str == name {
			o.paired[name] = true
			return elem, true, true
		}
		if o.left = membersLeft(o.it, key, elem, paired, o.paired); o.left == nil {
			return elem, false, false
		}
	}
	if elem, paired = o.left[name]; paired {
		delete(o.left, name)
	}
	return elem, paired, true
}

// rest returns the old members no name asked for; ok is false when the old object gives a name twice.
func (o *oldMembers) rest() (map[string]gjson.Result, bool) {
	if o.left == nil {
		it, key, elem, more := o.it.Next()
		o.left = membersLeft(it, key, elem, more, o.paired)
	}
	return o.left, o.left != nil
}

// membersLeft is the old object's members from (key, elem) when there is one, then those it still gives;
// nil when a name is given twice (or was given before: paired).
func membersLeft(it rawjson.MemberIter, key, elem gjson.Result, has bool, paired map[string]bool) map[string]gjson.Result {
	left := map[string]gjson.Result{}
	for ; has; it, key, elem, has = it.Next() {
		if _, twice := left[key.Str]; twice || paired[key.Str] {
			return nil
		}
		left[key.Str] = elem
	}
	return left
}

// eachNext is Walker.eachNext for elem and oldElem, values a wildcard reached at the same place.
func (pw *pairWalk) eachNext(elem, oldElem gjson.Result, p *Path, i int, wild string) bool {
	if len(wild) > wildcardLen {
		return pw.each(elem, oldElem, p, i, wild[wildcardLen:])
	}
	if !pw.stepFrom(elem, oldElem, p, i+1) {
		return false
	}
	for _, r := range pw.now.riders {
		if r.at != i || &pw.now.paths[r.leader] != p {
			continue
		}
		q := &pw.now.paths[r.path]
		pw.now.path, pw.was.path = q, q
		ok := pw.stepFrom(elem, oldElem, q, i+1)
		pw.now.path, pw.was.path = p, p
		if !ok {
			return false
		}
	}
	return true
}
