package kwctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Request is an AdmissionRequest as the policy will receive it, with the few fields the host
// itself needs.
type Request struct {
	Raw       json.RawMessage // the AdmissionRequest exactly as given
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
// refused here too.
func ParseRequest(input []byte) (*Request, error) {
	raw := json.RawMessage(bytes.TrimSpace(input))
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
