package policy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/francoispqt/onelog"
)

// TestLogger_WritesWhatOnelogWrote: an entry is byte for byte the one onelog (the logger the policy used
// before) wrote for the same message and fields, escapes included, and it goes out in one Write.
func TestLogger_WritesWhatOnelogWrote(t *testing.T) {
	texts := []string{
		"", "stamped the requester (rule 3)", `a "quoted" \ backslash`, "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "bob<&>\u2028\u2029", "é ü 日本", "\xff\xfe invalid UTF-8 \xc3", strings.Repeat(`x"`, 600),
	}
	onelog.LevelText(onelog.WARN, "warning") // as the policy's onelog logger was set up
	for _, msg := range texts {
		for _, value := range texts {
			var got, want bytes.Buffer
			writes := 0
			ours := NewLogger(writerFunc(func(p []byte) (int, error) { writes++; return got.Write(p) }))
			theirs := onelog.New(&want, onelog.ALL)
			ours.Debug(msg, func(e *Entry) { e.String("user", value); e.String("kind", "Pod") })
			theirs.DebugWithFields(msg, func(e onelog.Entry) { e.String("user", value); e.String("kind", "Pod") })
			ours.Warn(msg, func(e *Entry) { e.String(value, msg) })
			theirs.WarnWithFields(msg, func(e onelog.Entry) { e.String(value, msg) })
			ours.Warn(msg, nil)
			theirs.WarnWithFields(msg, func(onelog.Entry) {})
			if got.String() != want.String() {
				t.Fatalf("message %q, value %q:\n got %q\nwant %q", msg, value, got.String(), want.String())
			}
			if writes != 3 {
				t.Fatalf("%d writes for 3 entries", writes)
			}
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestLogs_ALongUsernameIsCutInLogsNotInStamps(t *testing.T) {
	name := strings.Repeat("u", 64<<10)
	req := fixture(t, "pod-create-bob-forged")
	req["userInfo"] = map[string]any{"username": name}
	resp, logs := evaluateReq(t, req, "")
	if !resp.Accepted || !strings.Contains(string(resp.MutatedObject), name) {
		t.Fatalf("the stamp carries the whole name: %.300s", resp.MutatedObject)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if len(line) > 3<<10 {
			t.Fatalf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	if !strings.Contains(logs, "... (65536 bytes)") {
		t.Fatalf("the log says how long the name was: %.300s", logs)
	}
}
