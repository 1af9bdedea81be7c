package kwctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/serdejson"
)

// Request is an AdmissionRequest as the policy will receive it, with the few fields the host
// itself needs.
type Request struct {
	Raw       json.RawMessage // the AdmissionRequest in the form the policy receives (see Payload)
	UID       string
	Operation string
	Kind      string // kind.kind, e.g. "Pod"
	Username  string // userInfo.username
	// Object is request.object, nil when absent or null (DELETE): a mutation then has nothing
	// to patch.
	Object json.RawMessage
}

// ParseRequest accepts an AdmissionReview or a bare AdmissionRequest. Like kwctl, it insists on
// the fields its typed AdmissionRequest requires, so that a fixture that kwctl would refuse is
// refused here too. In the policy-server form (the default of every kwhost command) the request
// is what policy-server hands the policy; a *RequestError is what it refuses before any policy runs.
func ParseRequest(input []byte, form Payload) (*Request, error) {
	raw := json.RawMessage(bytes.TrimSpace(input))
	if form == PayloadPolicyServer {
		var err error
		if raw, err = policyServerInput(raw); err != nil {
			return nil, err
		}
	}
	var top struct {
		Kind    json.RawMessage `json:"kind"`
		Request json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("the request is not a JSON object: %w", err)
	}
	// kwctl looks at kind == "AdmissionReview"; a `request` object also gives a review away, since
	// an AdmissionRequest has no such member.
	if string(top.Kind) == `"AdmissionReview"` || isObject(top.Request) {
		if !isObject(top.Request) {
			return nil, errors.New("invalid AdmissionReview object: it has no request object")
		}
		raw = top.Request
	}

	return RequestOf(raw)
}

// RequestOf reads the host's fields from a bare AdmissionRequest, refusing one without the members
// kwctl's typed AdmissionRequest requires.
func RequestOf(raw json.RawMessage) (*Request, error) {
	var fields struct {
		UID  *string `json:"uid"`
		Kind *struct {
			Kind string `json:"kind"`
		} `json:"kind"`
		Resource  json.RawMessage `json:"resource"`
		Operation *string         `json:"operation"`
		UserInfo  *struct {
			Username string `json:"username"`
		} `json:"userInfo"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("cannot build AdmissionRequest object from given input: %w", err)
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"uid", fields.UID == nil}, {"kind", fields.Kind == nil}, {"resource", !isObject(fields.Resource)},
		{"operation", fields.Operation == nil}, {"userInfo", fields.UserInfo == nil},
	} {
		if f.missing {
			return nil, fmt.Errorf("cannot build AdmissionRequest object from given input: missing field `%s`", f.name)
		}
	}
	req := &Request{Raw: raw, UID: *fields.UID, Operation: *fields.Operation,
		Kind: fields.Kind.Kind, Username: fields.UserInfo.Username}
	if len(fields.Object) > 0 && string(fields.Object) != "null" {
		req.Object = fields.Object
	}
	return req, nil
}

func isObject(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{'
}

// ReadReview reads an HTTP body as policy-server's /validate reads it: serde_json from the body's root
// (so its nesting limit counts the review's own level) into its typed AdmissionReview, whose `kind` and
// `apiVersion` are optional strings and whose `request` is its typed AdmissionRequest. It returns the
// request in the form policy-server hands the policy; a *RequestError is what policy-server refuses
// before any policy runs, and its PolicyServerAnswer what it answers.
func ReadReview(body []byte) (json.RawMessage, error) {
	top, err := serdejson.Parse(body)
	if err != nil {
		return nil, &RequestError{NotJSON: true, Err: err}
	}
	if top.Kind != serdejson.Object {
		return nil, &RequestError{Err: typedErrorf("invalid type: %s, expected struct AdmissionReviewRequest", top.Kind)}
	}
	if dup := top.Duplicate("kind", "apiVersion", "request"); dup != "" {
		return nil, &RequestError{Err: typedErrorf("duplicate field `%s`", dup)}
	}
	for _, name := range []string{"kind", "apiVersion"} {
		if v, ok := top.Get(name); ok && v.Kind != serdejson.Null && v.Kind != serdejson.String {
			return nil, &RequestError{Err: at(name, typedErrorf("invalid type: %s, expected a string", v.Kind))}
		}
	}
	r, ok := top.Get("request")
	if !ok {
		return nil, &RequestError{Err: typedErrorf("missing field `request`")}
	}
	return reviewRequest(r)
}

// reviewRequest reads a review's request member as policy-server's typed AdmissionRequest and writes it
// in policy-server's form.
func reviewRequest(r serdejson.Value) ([]byte, error) {
	out, err := typedRequest(r)
	if err != nil {
		return nil, &RequestError{Err: at("request", err)}
	}
	return serdejson.Marshal(out), nil
}

// policyServerInput finds the AdmissionRequest in input (a review or a bare request) and returns
// it in policy-server's form. The whole input is read as serde_json reads it, so its nesting limit
// counts from the review's root, as it does for the body policy-server receives.
func policyServerInput(input []byte) ([]byte, error) {
	top, err := serdejson.Parse(input)
	if err != nil {
		return nil, &RequestError{NotJSON: true, Err: err}
	}
	if top.Kind != serdejson.Object {
		return nil, &RequestError{Err: typedErrorf("invalid type: %s, expected an AdmissionReview or an AdmissionRequest", top.Kind)}
	}
	kind, _ := top.Get("kind")
	if r, ok := top.Get("request"); (kind.Kind == serdejson.String && kind.Text == "AdmissionReview") || (ok && r.Kind == serdejson.Object) {
		if top.Duplicate("request") != "" {
			return nil, &RequestError{Err: typedErrorf("duplicate field `request`")}
		}
		if !ok || r.Kind != serdejson.Object {
			return nil, &RequestError{Err: errors.New("invalid AdmissionReview object: it has no request object")}
		}
		return reviewRequest(r)
	}
	out, err := typedRequest(top)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	return serdejson.Marshal(out), nil
}
