package policy

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Operations the policy acts on; every other operation is accepted unchanged.
const (
	opCreate = "CREATE"
	opUpdate = "UPDATE"
)

// request holds the parts of the validate payload the decision reads, straight from the raw bytes: objects
// are kept as raw JSON text (never decoded into structs) so a mutation can splice them.
type request struct {
	operation gjson.Result
	group     string
	kind      string
	username  gjson.Result
	groups    gjson.Result
	userInfo  gjson.Result
	object    gjson.Result
	oldObject gjson.Result
	settings  gjson.Result
	present   bool // the payload has a "request" member
}

// readRequest walks the payload once at the top level and once inside "request". The payload must already
// be known to be valid JSON (gjson iteration stops silently on malformed input).
func readRequest(payload string) request {
	var r request
	gjson.Parse(payload).ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "request":
			r.present = value.IsObject()
			if r.present {
				r.readAdmissionRequest(value)
			}
		case "settings":
			r.settings = value
		}
		return true
	})
	return r
}

func (r *request) readAdmissionRequest(req gjson.Result) {
	req.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "operation":
			r.operation = value
		case "kind":
			if value.IsObject() {
				r.group = value.Get("group").String()
				r.kind = value.Get("kind").String()
			}
		case "userInfo":
			r.userInfo = value
			if value.IsObject() {
				r.username = value.Get("username")
				r.groups = value.Get("groups")
			}
		case "object":
			r.object = value
		case "oldObject":
			r.oldObject = value
		}
		return true
	})
}

// workload is what the policy knows about one of its kinds: where the pod template's metadata lives.
type workload struct {
	name     string   // for messages
	template []string // path from the object to the object that holds the pod's "metadata"
}

var (
	podKind      = workload{name: "Pod"}
	specTemplate = []string{"spec", "template"}
)

// kindOf maps the request's API group and kind to the object the policy handles. A Job of another API
// group is not ours (docs/rules.md "Words": kind).
func kindOf(group, kind string) (workload, bool) {
	switch group {
	case "":
		switch kind {
		case "Pod":
			return podKind, true
		case "ReplicationController":
			return workload{name: kind, template: specTemplate}, true
		}
	case "apps":
		switch kind {
		case "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet":
			return workload{name: kind, template: specTemplate}, true
		}
	case "batch":
		switch kind {
		case "Job":
			return workload{name: kind, template: specTemplate}, true
		case "CronJob":
			// Not `jobtemplate`, which YuniKorn once shipped (docs/runtime.md "Building with TinyGo").
			return workload{name: kind, template: []string{"spec", "jobTemplate", "spec", "template"}}, true
		}
	}
	return workload{}, false
}

func (w workload) isPod() bool { return w.template == nil }

// where names the target metadata for messages.
func (w workload) where() string {
	if w.isPod() {
		return "metadata"
	}
	return strings.Join(w.template, ".") + ".metadata"
}

// requester is the authenticated user of the request.
type requester struct {
	username string
	groups   []string
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
		var problem string
		r.groups.ForEach(func(_, g gjson.Result) bool {
			if g.Type != gjson.String {
				problem = "request.userInfo.groups must be a list of strings"
				return false
			}
			u.groups = append(u.groups, g.Str)
			return true
		})
		if problem != "" {
			return requester{}, problem
		}
	default:
		return requester{}, "request.userInfo.groups must be a list of strings"
	}
	return u, ""
}
