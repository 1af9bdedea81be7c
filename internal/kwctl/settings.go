package kwctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
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
// policy refuses them. As in policy-evaluator, a guest that fails or answers garbage counts as
// refusing its settings.
func ValidateSettings(ctx context.Context, ev Evaluator, settings json.RawMessage) error {
	out, err := ev.Call(ctx, "validate_settings", settings)
	if err != nil {
		return &SettingsError{Message: "Error invoking settings validation callback: " + guestFailure(err)}
	}
	var resp struct {
		Valid   *bool   `json:"valid"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.Valid == nil {
		if err == nil {
			err = errors.New("missing field `valid`")
		}
		return &SettingsError{Message: fmt.Sprintf("error: cannot decode the settings validation response %q: %v", out, err)}
	}
	if !*resp.Valid {
		msg := ""
		if resp.Message != nil {
			msg = *resp.Message
		}
		return &SettingsError{Message: msg}
	}
	return nil
}
