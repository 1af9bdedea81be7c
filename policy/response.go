package policy

import (
	"github.com/mailru/easyjson/buffer"
	"github.com/mailru/easyjson/jwriter"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// decision is the outcome of one evaluation, before encoding.
type decision struct {
	accepted bool
	code     uint16
	message  string
	mutated  rawjson.Edit // the mutated object; the zero edit when nothing changed
	warnings []string
}

func accept() decision { return decision{accepted: true} }

// reject refuses the request with code 400 and a message that says what was wrong and what to do.
func reject(message string) decision {
	return decision{code: 400, message: message}
}

// badInput is a reject for a request the policy cannot read; docs/rules.md "Bad input" asks for 400, never 500.
func badInput(message string) decision { return reject(message) }

// encodeOver answers with the decision written over buf, the payload it was read from, when the answer
// fits in buf's capacity (Edit.WriteOver), otherwise in a buffer of its own (docs/runtime.md "Pages").
func (d decision) encodeOver(buf []byte) []byte {
	frame, at := d.frame()
	if at < 0 {
		return frame
	}
	n := len(frame) + d.mutated.Len()
	if n <= cap(buf) {
		buf = buf[:max(n, len(buf))] // the payload's text and the answer: WriteOver orders its moves within them
		end := d.mutated.WriteOver(buf, at)
		copy(buf, frame[:at]) // after the object: its text may have been there
		copy(buf[end:], frame[at:])
		return buf[:n]
	}
	out := append(make([]byte, 0, n), frame[:at]...)
	out = d.mutated.AppendTo(out)
	return append(out, frame[at:]...)
}

// frame writes Kubewarden's ValidationResponse as the SDK does, with warnings, but for the mutated object,
// and returns where the object goes (-1 when nothing changed).
func (d decision) frame() ([]byte, int) {
	size := 2*len(d.message) + 64
	for _, warning := range d.warnings {
		size += 2*len(warning) + 4
	}
	w := jwriter.Writer{Buffer: buffer.Buffer{Buf: make([]byte, 0, size)}}
	w.RawString(`{"accepted":`)
	w.Bool(d.accepted)
	if d.message != "" {
		w.RawString(`,"message":`)
		w.String(d.message)
	}
	if d.code != 0 {
		w.RawString(`,"code":`)
		w.Uint16(d.code)
	}
	at := -1
	if d.mutated.Changed() {
		w.RawString(`,"mutated_object":`)
		at = w.Size()
	}
	if len(d.warnings) != 0 {
		w.RawString(`,"warnings":`)
		writeStrings(&w, d.warnings)
	}
	w.RawByte('}')
	return w.Buffer.BuildBytes(), at
}

// writeStrings writes a JSON array of strings.
func writeStrings(w *jwriter.Writer, list []string) {
	w.RawByte('[')
	for i, s := range list {
		if i > 0 {
			w.RawByte(',')
		}
		w.String(s)
	}
	w.RawByte(']')
}

// settingsResponse is Kubewarden's SettingsValidationResponse.
type settingsResponse struct {
	Valid   bool
	Message string
}

func (s settingsResponse) encode() []byte {
	w := jwriter.Writer{}
	w.RawString(`{"valid":`)
	w.Bool(s.Valid)
	if s.Message != "" {
		w.RawString(`,"message":`)
		w.String(s.Message)
	}
	w.RawByte('}')
	return w.Buffer.BuildBytes()
}
