package wapchost

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/serdejson"
)

// LogLevels are the levels policy-evaluator accepts in a kubewarden/tracing/log entry, compared
// without regard to case. onelog's default text for its WARN level, "warn", is not among them:
// policy-server then logs an error ("Cannot log event") instead of the policy's line.
var LogLevels = []string{"trace", "debug", "info", "warning", "error"}

// CheckLogEntry reads a log entry as policy-evaluator does: one JSON object with a known "level",
// an optional string "message", and any other fields. It returns why policy-server would refuse it.
func CheckLogEntry(entry []byte) error {
	v, err := serdejson.Parse(entry)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if v.Kind != serdejson.Object {
		return fmt.Errorf("invalid type: %s, expected a log entry object", v.Kind)
	}
	if dup := v.Duplicate("level", "message"); dup != "" {
		return fmt.Errorf("duplicate field `%s`", dup)
	}
	level, ok := v.Get("level")
	switch {
	case !ok:
		return errors.New("missing field `level`")
	case level.Kind != serdejson.String:
		return fmt.Errorf("level: invalid type: %s, expected a string", level.Kind)
	case !knownLevel(level.Text):
		return fmt.Errorf("unknown level %q: policy-server knows %s", level.Text, strings.Join(LogLevels, ", "))
	}
	if msg, ok := v.Get("message"); ok && msg.Kind != serdejson.String && msg.Kind != serdejson.Null {
		return fmt.Errorf("message: invalid type: %s, expected a string", msg.Kind)
	}
	return nil
}

func knownLevel(level string) bool {
	for _, known := range LogLevels {
		if strings.EqualFold(level, known) {
			return true
		}
	}
	return false
}
