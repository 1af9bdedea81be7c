package kwctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/wapchost"
)

// Evaluator calls a waPC operation; *wapchost.Host is one (a fresh instance per call, as
// policy-server), *wapchost.Instance another, and tests may fake it.
type Evaluator interface {
	Call(ctx context.Context, operation string, payload []byte) ([]byte, error)
}

// deleteMutationMessage is policy-evaluator's refusal of a mutated_object for a request without
// an object, which is what a DELETE carries.
const deleteMutationMessage = "Incoming object is null, which happens only with DELETE operations, " +
	"but the policy is attempting a mutation. This is not allowed"

// validationResponse is the guest's answer to `validate`, as the Rust SDK's ValidationResponse
// (the Go SDK's struct lacks warnings and audit_annotations).
type validationResponse struct {
	Accepted         *bool             `json:"accepted"`
	Message          *string           `json:"message"`
	Code             *uint16           `json:"code"`
	MutatedObject    json.RawMessage   `json:"mutated_object"`
	AuditAnnotations map[string]string `json:"audit_annotations"`
	Warnings         []string          `json:"warnings"`
}

// Run does what `kwctl run` does for one policy: read the request, have the policy validate the
// settings (a *SettingsError if it refuses them), then evaluate.
func Run(ctx context.Context, ev Evaluator, input []byte, settings json.RawMessage) (*Response, error) {
	req, err := ParseRequest(input)
	if err != nil {
		return nil, err
	}
	if err := ValidateSettings(ctx, ev, settings); err != nil {
		return nil, err
	}
	return Validate(ctx, ev, req, settings), nil
}

// Validate calls `validate` with {"request": <the request as given>, "settings": settings} and
// builds the response. It has no error: like policy-server, a guest that fails, traps or answers
// nonsense is a rejection with code 500.
func Validate(ctx context.Context, ev Evaluator, req *Request, settings json.RawMessage) *Response {
	payload := make([]byte, 0, len(req.Raw)+len(settings)+25)
	payload = append(append(append(payload, `{"request":`...), req.Raw...), `,"settings":`...)
	payload = append(append(payload, settings...), '}')
	out, err := ev.Call(ctx, "validate", payload)
	if err != nil {
		return internalError(req.UID, guestFailure(err))
	}
	var vr validationResponse
	if err := json.Unmarshal(out, &vr); err != nil || vr.Accepted == nil {
		if err == nil {
			err = errors.New("missing field `accepted`")
		}
		return internalError(req.UID, fmt.Sprintf("cannot decode the policy's validation response %q: %v", out, err))
	}

	resp := &Response{UID: req.UID, Allowed: *vr.Accepted, Warnings: vr.Warnings, AuditAnnotations: vr.AuditAnnotations}
	if len(vr.MutatedObject) > 0 && string(vr.MutatedObject) != "null" {
		if req.Object == nil {
			msg := deleteMutationMessage
			return &Response{UID: req.UID, Status: &Status{Message: &msg}}
		}
		if resp.Patch, err = jsonPatch(req.Object, vr.MutatedObject); err != nil {
			return internalError(req.UID, "cannot compute the JSON Patch: "+err.Error())
		}
		if resp.Patch != nil {
			resp.PatchType = "JSONPatch"
		}
	}
	// policy-evaluator copies message and code whenever the guest set either, accepted or not.
	if vr.Message != nil || vr.Code != nil {
		resp.Status = &Status{Message: vr.Message, Code: vr.Code}
	}
	return resp
}

func internalError(uid, detail string) *Response {
	msg, code := "internal server error: "+detail, uint16(500)
	return &Response{UID: uid, Status: &Status{Message: &msg, Code: &code}}
}

// guestFailure words a failed call as policy-server does: its waPC host reports a guest error and
// a trap alike as "Guest call failure: <detail>".
func guestFailure(err error) string {
	var ge *wapchost.GuestError
	var te *wapchost.TrapError
	switch {
	case errors.As(err, &ge):
		return "Guest call failure: " + ge.Message
	case errors.As(err, &te):
		return "Guest call failure: " + te.Err.Error()
	}
	return err.Error()
}
