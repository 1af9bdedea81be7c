// Package corpus holds the recorded corpus of guest calls (calls.jsonl.gz) and the test that replays it
// through policy.wasm: every validate and validate_settings call the e2e suites, the demo and the tour
// made, with the answer and the log entries the policy gave. A change that means to keep behaviour (a
// refactoring, a faster engine) must give the same bytes for every entry; a change of behaviour
// re-records the corpus (`make corpus`), and what changed in it is part of its review.
package corpus

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// EnvRecord names the file kwhost appends every guest call to, when set.
const EnvRecord = "KWHOST_RECORD_CALLS"

// Entry is one recorded call. Payloads and answers are kept as text, not raw JSON: some are malformed on
// purpose.
type Entry struct {
	Operation string  `json:"operation"`
	Payload   Bytes   `json:"payload"`
	Response  Bytes   `json:"response,omitempty"`
	Error     string  `json:"error,omitempty"`
	Logs      []Bytes `json:"logs,omitempty"`
}

// Bytes is a JSON string when the bytes are UTF-8, {"base64": ...} otherwise: a plain string would turn
// invalid UTF-8 into U+FFFD and the replay would send other bytes.
type Bytes []byte

type base64Bytes struct {
	Base64 []byte `json:"base64"`
}

// MarshalJSON implements json.Marshaler.
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	return json.Marshal(base64Bytes{b})
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '{' {
		var v base64Bytes
		err := json.Unmarshal(data, &v)
		*b = v.Base64
		return err
	}
	var s string
	err := json.Unmarshal(data, &s)
	*b = Bytes(s)
	return err
}

// NewEntry records c.
func NewEntry(c wapchost.Call) Entry {
	e := Entry{Operation: c.Operation, Payload: c.Payload, Response: c.Response}
	if c.Err != nil {
		e.Error = c.Err.Error()
	}
	for _, l := range c.Logs {
		e.Logs = append(e.Logs, l)
	}
	return e
}

// Recorder returns the Options.Record function that appends each call to the file named by
// KWHOST_RECORD_CALLS, one JSON line per call written with one write (O_APPEND: processes running in
// parallel do not interleave), or nil when the variable is unset.
func Recorder() func(wapchost.Call) {
	path := os.Getenv(EnvRecord)
	if path == "" {
		return nil
	}
	var mu sync.Mutex
	return func(c wapchost.Call) {
		line, err := json.Marshal(NewEntry(c))
		if err != nil {
			panic(err) // strings and slices of strings always marshal
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			panic("cannot record guest calls: " + err.Error())
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			panic("cannot record guest calls: " + err.Error())
		}
	}
}

// Key identifies a call: its operation and payload.
func Key(e Entry) [32]byte {
	h := sha256.New()
	h.Write([]byte(e.Operation))
	h.Write([]byte{0})
	h.Write(e.Payload)
	return [32]byte(h.Sum(nil))
}
