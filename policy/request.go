package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Operations the policy acts on; every other operation is accepted unchanged.
const (
	opCreate = "CREATE"
	opUpdate = "UPDATE"
)

// request holds the parts of the validate payload the decision reads, as views of its raw JSON text.
type request struct {
	operation gjson.Result
	group     string
	kind      string
	username  gjson.Result
	groups    gjson.Result
	userInfo  gjson.Result
	object    gjson.Result
	oldObject gjson.Result
	namespace gjson.Result // the request's namespace: a pod's own generated application (rule 14)
	settings  gjson.Result
	index     *rawjson.Index // of the payload: every Result here is a view of it
	present   bool           // the payload has a "request" member
	// The first member the decision reads that occurs twice (docs/rules.md "Bad input"): one of the
	// payload's own, request.operation, or any other ("request.kind.kind").
	payloadDuplicate, operationDuplicate, duplicate string
	seen                                            int // the request's members met so far (seenOperation, ...)
}

// readRequest reads the payload x indexes into r, with iterators, not closures (which allocate in the
// guest).
func readRequest(x *rawjson.Index, r *request) {
	*r = request{index: x}
	it, ok := x.Members(gjson.Parse(x.Doc()))
	if !ok {
		return // not an object: no "request"
	}
	var seenRequest, seenSettings bool
	for it, key, value, more := it.Next(); more; it, key, value, more = it.Next() {
		switch key.Str {
		case "request":
			if seenRequest {
				r.payloadDuplicate = "request"
				return
			}
			seenRequest = true
			r.present = value.IsObject()
			if r.present {
				r.readAdmissionRequest(value)
			}
		case "settings":
			if seenSettings {
				r.payloadDuplicate = "settings"
				return
			}
			seenSettings = true
			r.settings = value
		}
	}
}

// Members of the AdmissionRequest the decision reads, as bits of a set for finding duplicates.
const (
	seenOperation = 1 << iota
	seenKind
	seenSubResource
	seenUserInfo
	seenObject
	seenOldObject
	seenNamespace
)

func (r *request) readAdmissionRequest(req gjson.Result) {
	it, ok := r.index.Members(req)
	if !ok {
		return // req is a view of the payload, and an object: not reached
	}
	for it, key, value, more := it.Next(); more; it, key, value, more = it.Next() {
		switch key.Str {
		case "operation":
			if r.first(seenOperation, "operation") {
				r.operation = value
			}
		case "kind":
			if r.first(seenKind, "kind") && value.IsObject() {
				r.group, r.kind = r.readKind(value)
			}
		case "subResource":
			r.first(seenSubResource, "subResource")
		case "userInfo":
			if r.first(seenUserInfo, "userInfo") {
				r.userInfo = value
				if value.IsObject() {
					r.username, r.groups = r.readUserInfo(value)
				}
			}
		case "object":
			if r.first(seenObject, "object") {
				r.object = value
			}
		case "oldObject":
			if r.first(seenOldObject, "oldObject") {
				r.oldObject = value
			}
		case "namespace":
			if r.first(seenNamespace, "namespace") {
				r.namespace = value
			}
		}
	}
}

// first reports whether member name (its bit in seen) is met for the first time, else records it as a
// duplicate.
func (r *request) first(bit int, name string) bool {
	if r.seen&bit == 0 {
		r.seen |= bit
		return true
	}
	if bit == seenOperation {
		r.operationDuplicate = "request." + name
	} else if r.duplicate == "" {
		r.duplicate = "request." + name
	}
	return false
}

func (r *request) readKind(kind gjson.Result) (group, name string) {
	g, k := r.readTwo(kind, "request.kind", "group", "kind")
	return g.String(), k.String()
}

func (r *request) readUserInfo(userInfo gjson.Result) (username, groups gjson.Result) {
	return r.readTwo(userInfo, "request.userInfo", "username", "groups")
}

// readTwo reads the members a and b of obj at path, recording a duplicate.
func (r *request) readTwo(obj gjson.Result, path, a, b string) (gjson.Result, gjson.Result) {
	va, aDup := r.index.Child(obj, a)
	vb, bDup := r.index.Child(obj, b)
	switch {
	case r.duplicate != "":
	case aDup:
		r.duplicate = path + "." + a
	case bDup:
		r.duplicate = path + "." + b
	}
	return va, vb
}

// requester is the authenticated user of the request.
type requester struct {
	username string
	// groups is request.userInfo.groups as the payload holds it, read where needed rather than copied
	// into a []string (docs/runtime.md "Memory and TinyGo's collector").
	groups gjson.Result
	// plain: the array's text is encoding/json's for its strings (rawjson.PlainStrings): copied as it is.
	plain bool
	count int // the number of groups
}

// eachGroup calls fn with each group until fn returns false; a group is valid only during the call.
func (u *requester) eachGroup(fn func(group string) bool) {
	if u.groups.IsArray() {
		u.groups.ForEach(func(_, g gjson.Result) bool { return fn(g.Str) })
	}
}

// groupSlice copies the groups out of the payload, for an array that is not plain.
func (u *requester) groupSlice() []string {
	var groups []string
	u.eachGroup(func(g string) bool {
		groups = append(groups, strings.Clone(g))
		return true
	})
	return groups
}

// joinGroups is the groups separated by commas, as upstream YuniKorn prints them.
func (u *requester) joinGroups() string {
	if u.plain {
		raw := u.groups.Raw
		return strings.ReplaceAll(raw[1:len(raw)-1], `"`, "") // every quote delimits a group
	}
	return strings.Join(u.groupSlice(), ",")
}

// logGroupsSize is about how much of the requester's groups a log line carries.
const logGroupsSize = 1024

// logGroups is joinGroups cut to about logGroupsSize bytes, with the number left out ("a,b ... and 998
// more"; docs/runtime.md "Logs"). The stamp and rejection messages carry every group.
func (u *requester) logGroups() string {
	var b strings.Builder
	shown, complete := 0, true
	u.eachGroup(func(g string) bool {
		if b.Len()+1+len(g) > logGroupsSize {
			complete = false
			return false
		}
		if shown > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g)
		shown++
		return true
	})
	if complete {
		return b.String()
	}
	b.WriteString(" ... and " + strconv.Itoa(u.count-shown) + " more")
	return b.String()
}

// logName is the username cut, as the groups are, to about 1 KiB for log lines; stamps carry it whole.
func (u *requester) logName() string {
	if len(u.username) <= logGroupsSize {
		return u.username
	}
	cut := logGroupsSize
	for cut > 0 && !utf8.RuneStart(u.username[cut]) {
		cut--
	}
	return u.username[:cut] + " ... (" + strconv.Itoa(len(u.username)) + " bytes)"
}

// readRequester checks the userInfo the decision needs: a non-empty username and a list of string groups.
func readRequester(r *request) (requester, string) {
	if !r.userInfo.IsObject() {
		return requester{}, "request.userInfo is missing: the policy needs the authenticated user of the request"
	}
	if r.username.Type != gjson.String || r.username.Str == "" {
		return requester{}, "request.userInfo.username is missing or empty: the policy needs the authenticated user of the request"
	}
	u := requester{username: r.username.Str}
	switch {
	case !r.groups.Exists() || r.groups.Type == gjson.Null:
	case r.groups.IsArray():
		ok, plain, count := rawjson.PlainStrings(r.groups.Raw)
		if !ok {
			return requester{}, "request.userInfo.groups must be a list of strings"
		}
		u.groups, u.plain, u.count = r.groups, plain, count
	default:
		return requester{}, "request.userInfo.groups must be a list of strings"
	}
	return u, ""
}
