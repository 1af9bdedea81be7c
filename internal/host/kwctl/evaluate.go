package kwctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/serdejson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
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

// InterruptedMessage is policy-server's answer, with code 500, when an evaluation runs past its
// --policy-timeout.
const InterruptedMessage = "Policy execution interrupted because it exceeded the allowed execution time"

// validationResponse is the guest's answer to `validate`, as the Rust SDK's ValidationResponse
// (the Go SDK's struct lacks warnings and audit_annotations).
type validationResponse struct {
	Accepted         bool
	Message          *string
	Code             *uint16
	MutatedObject    json.RawMessage // nil when absent or null
	AuditAnnotations map[string]string
	Warnings         []string
}

// Run does what `kwctl run` does for one policy: read the request, have the policy validate the
// settings (a *SettingsError if it refuses them), then evaluate. A module that cannot start is a
// *wapchost.StartError.
func Run(ctx context.Context, ev Evaluator, input []byte, settings json.RawMessage, form Payload) (*Response, error) {
	req, err := ParseRequest(input, form)
	if err != nil {
		return nil, err
	}
	if settings, err = SettingsFor(settings, form); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := ValidateSettings(ctx, ev, settings); err != nil {
		return nil, err
	}
	return Validate(ctx, ev, req, settings)
}

// Validate calls `validate` with {"request": <the request in its payload form>, "settings":
// settings} and builds the response. Like policy-server, a guest that fails, traps or answers
// something its typed response cannot read is a rejection with code 500, and one that runs out of
// time is rejected with InterruptedMessage. The only error is an instance that could not start
// (*wapchost.StartError): policy-server then has no AdmissionReview to send.
func Validate(ctx context.Context, ev Evaluator, req *Request, settings json.RawMessage) (*Response, error) {
	payload := make([]byte, 0, len(req.Raw)+len(settings)+25)
	payload = append(append(append(payload, `{"request":`...), req.Raw...), `,"settings":`...)
	payload = append(append(payload, settings...), '}')
	out, err := ev.Call(ctx, "validate", payload)
	var startErr *wapchost.StartError
	switch {
	case errors.As(err, &startErr):
		return nil, err
	case err != nil && wapchost.Interrupted(err):
		msg, code := InterruptedMessage, uint16(500)
		return &Response{UID: req.UID, Status: &Status{Message: &msg, Code: &code}}, nil
	case err != nil:
		return internalError(req.UID, guestFailure(err)), nil
	}
	vr, err := decodeValidationResponse(out)
	if err != nil {
		return internalError(req.UID, fmt.Sprintf("cannot decode the policy's validation response %q: %v", out, err)), nil
	}

	resp := &Response{UID: req.UID, Allowed: vr.Accepted, Warnings: vr.Warnings, AuditAnnotations: vr.AuditAnnotations}
	if vr.MutatedObject != nil {
		if req.Object == nil {
			msg := deleteMutationMessage
			return &Response{UID: req.UID, Status: &Status{Message: &msg}}, nil
		}
		if resp.Patch, err = jsonPatch(req.Object, vr.MutatedObject); err != nil {
			// The guest's answer is at fault: a 500 answer, as policy-evaluator gives, not a host error.
			return internalError(req.UID, "cannot compute the JSON Patch: "+err.Error()), nil //nolint:nilerr // see above
		}
		if resp.Patch != nil {
			resp.PatchType = "JSONPatch"
		}
	}
	// policy-evaluator copies message and code whenever the guest set either, accepted or not.
	if vr.Message != nil || vr.Code != nil {
		resp.Status = &Status{Message: vr.Message, Code: vr.Code}
	}
	return resp, nil
}

// decodeValidationResponse reads the guest's answer as serde reads policy-evaluator's typed struct:
// member names match exactly (encoding/json would also take "Accepted"), a member given twice is an
// error (encoding/json keeps the last), `accepted` is required, `code` must be an integer that fits
// a u16, text must be valid UTF-8, and unknown members are ignored.
func decodeValidationResponse(out []byte) (*validationResponse, error) {
	v, err := serdejson.Parse(out)
	if err != nil {
		return nil, err
	}
	if v.Kind != serdejson.Object {
		return nil, fmt.Errorf("invalid type: %s, expected struct ValidationResponse", v.Kind)
	}
	if dup := v.Duplicate("accepted", "message", "code", "mutated_object", "audit_annotations", "warnings"); dup != "" {
		return nil, fmt.Errorf("duplicate field `%s`", dup)
	}
	vr := &validationResponse{}
	accepted, ok := v.Get("accepted")
	if !ok {
		return nil, errors.New("missing field `accepted`")
	}
	if accepted.Kind != serdejson.Bool {
		return nil, fmt.Errorf("accepted: invalid type: %s, expected a boolean", accepted.Kind)
	}
	vr.Accepted = accepted.Bool
	if m, ok := present(v, "message"); ok {
		if m.Kind != serdejson.String {
			return nil, fmt.Errorf("message: invalid type: %s, expected a string", m.Kind)
		}
		vr.Message = &m.Text
	}
	if c, ok := present(v, "code"); ok {
		code, err := u16(c)
		if err != nil {
			return nil, fmt.Errorf("code: %w", err)
		}
		vr.Code = &code
	}
	if m, ok := present(v, "mutated_object"); ok {
		vr.MutatedObject = serdejson.Marshal(m)
	}
	if a, ok := present(v, "audit_annotations"); ok {
		if a.Kind != serdejson.Object {
			return nil, fmt.Errorf("audit_annotations: invalid type: %s, expected a map", a.Kind)
		}
		vr.AuditAnnotations = map[string]string{}
		for _, m := range a.Members {
			if m.Value.Kind != serdejson.String {
				return nil, fmt.Errorf("audit_annotations: invalid type: %s, expected a string", m.Value.Kind)
			}
			vr.AuditAnnotations[m.Key] = m.Value.Text
		}
	}
	if w, ok := present(v, "warnings"); ok {
		if w.Kind != serdejson.Array {
			return nil, fmt.Errorf("warnings: invalid type: %s, expected a sequence", w.Kind)
		}
		vr.Warnings = []string{}
		for _, el := range w.Elems {
			if el.Kind != serdejson.String {
				return nil, fmt.Errorf("warnings: invalid type: %s, expected a string", el.Kind)
			}
			vr.Warnings = append(vr.Warnings, el.Text)
		}
	}
	return vr, nil
}

// present returns an Option member: absent and null are both None.
func present(v serdejson.Value, key string) (serdejson.Value, bool) {
	m, ok := v.Get(key)
	return m, ok && m.Kind != serdejson.Null
}

// u16 reads a number as serde reads a u16: an integer literal from 0 to 65535 (400.0 is a float).
func u16(v serdejson.Value) (uint16, error) {
	if v.Kind != serdejson.Number {
		return 0, fmt.Errorf("invalid type: %s, expected u16", v.Kind)
	}
	n, err := strconv.ParseUint(v.Text, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("invalid value: %s, expected u16", v.Text)
	}
	return uint16(n), nil
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
