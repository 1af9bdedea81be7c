package kwctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/serdejson"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// SettingsError is the policy refusing its settings. kwctl stops there with this exact text, and
// policy-server refuses to start.
type SettingsError struct {
	Message string
}

func (e *SettingsError) Error() string {
	return "Provided settings are not valid: " + e.Message
}

// SettingsFromJSON parses --settings-json. Settings are always an object: null and an empty
// input mean none, i.e. {}, as in kwctl. The object is compacted, as kwctl re-serialises it, but
// its keys and numbers stay as written.
func SettingsFromJSON(data []byte) (json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || string(data) == "null":
		return json.RawMessage("{}"), nil
	case !json.Valid(data):
		var v any
		return nil, json.Unmarshal(data, &v) // for the decoder's description of the fault
	case data[0] != '{':
		return nil, errNotObject
	}
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// SettingsFromFile parses a --settings-path file, which kwctl reads as YAML (JSON included).
func SettingsFromFile(data []byte) (json.RawMessage, error) {
	if json.Valid(data) {
		return SettingsFromJSON(data)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	switch v.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case map[string]any:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("settings cannot be expressed as JSON: %w", err)
		}
		return b, nil
	default:
		return nil, errNotObject
	}
}

var errNotObject = errors.New("settings must be an object (or null for none)")

// ValidateSettings calls the guest's validate_settings and returns a *SettingsError when the
// policy refuses them. As in policy-evaluator, a guest that fails or answers something its typed
// SettingsValidationResponse cannot read counts as refusing its settings; a module that cannot
// start is a *wapchost.StartError.
func ValidateSettings(ctx context.Context, ev Evaluator, settings json.RawMessage) error {
	out, err := ev.Call(ctx, "validate_settings", settings)
	var startErr *wapchost.StartError
	switch {
	case errors.As(err, &startErr):
		return err
	case err != nil:
		return &SettingsError{Message: "Error invoking settings validation callback: " + guestFailure(err)}
	}
	valid, msg, err := decodeSettingsResponse(out)
	if err != nil {
		return &SettingsError{Message: fmt.Sprintf("error: cannot decode the settings validation response %q: %v", out, err)}
	}
	if !valid {
		return &SettingsError{Message: msg}
	}
	return nil
}

// decodeSettingsResponse reads SettingsValidationResponse as serde does: `valid` required and
// boolean, `message` an optional string, exact member names, no member twice.
func decodeSettingsResponse(out []byte) (valid bool, message string, err error) {
	v, err := serdejson.Parse(out)
	if err != nil {
		return false, "", err
	}
	if v.Kind != serdejson.Object {
		return false, "", fmt.Errorf("invalid type: %s, expected struct SettingsValidationResponse", v.Kind)
	}
	if dup := v.Duplicate("valid", "message"); dup != "" {
		return false, "", fmt.Errorf("duplicate field `%s`", dup)
	}
	vv, ok := v.Get("valid")
	switch {
	case !ok:
		return false, "", errors.New("missing field `valid`")
	case vv.Kind != serdejson.Bool:
		return false, "", fmt.Errorf("valid: invalid type: %s, expected a boolean", vv.Kind)
	}
	if m, ok := present(v, "message"); ok {
		if m.Kind != serdejson.String {
			return false, "", fmt.Errorf("message: invalid type: %s, expected a string", m.Kind)
		}
		message = m.Text
	}
	return vv.Bool, message, nil
}
