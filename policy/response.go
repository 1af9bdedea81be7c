package policy

import (
	"github.com/mailru/easyjson/buffer"
	"github.com/mailru/easyjson/jwriter"
)

// decision is the outcome of one evaluation, before encoding.
type decision struct {
	accepted bool
	code     uint16
	message  string
	mutated  edit // the mutated object; the zero edit when nothing changed
	warnings []string
}

func accept() decision { return decision{accepted: true} }

// reject refuses the request with code 400 and a message that says what was wrong and what to do.
func reject(message string) decision {
	return decision{code: 400, message: message}
}

// badInput is a reject for a request the policy cannot read; docs/rules.md "Bad input" asks for 400, never 500.
func badInput(message string) decision { return reject(message) }

// validationResponse is Kubewarden's ValidationResponse. The SDK's struct lacks warnings, hence our own.
//
//easyjson:json
type validationResponse struct {
	Accepted      bool           `json:"accepted"`
	Message       string         `json:"message,omitempty"`
	Code          uint16         `json:"code,omitempty"`
	MutatedObject responseObject `json:"mutated_object,omitempty"`
	Warnings      []string       `json:"warnings,omitempty"`
}

// responseObject stands in for the mutated object while easyjson writes the rest of the response: it
// writes nothing and records where the object goes, and encodeOver writes the object there itself, once.
type responseObject struct{ at *int }

// IsDefined makes omitempty leave out the member when nothing changed.
func (o responseObject) IsDefined() bool { return o.at != nil }

// MarshalEasyJSON records the object's place in the response.
func (o responseObject) MarshalEasyJSON(w *jwriter.Writer) { *o.at = w.Size() }

// encode answers with the decision in a buffer of its own.
func (d decision) encode() []byte { return d.encodeOver(nil) }

// encodeOver answers with the decision written over buf, the validate payload it was read from, when the
// answer fits in buf (edit.writeOver); otherwise in a buffer of its own, sized for the whole answer. A
// mutated object is as large as the request's, and in the guest a buffer for it costs more than the
// copy: the heap grows for a large one, after a collection that frees nothing and follows every view into
// the payload back to the payload's start, and its pages are new pages to touch.
func (d decision) encodeOver(buf []byte) []byte {
	at := -1
	resp := validationResponse{Accepted: d.accepted, Message: d.message, Code: d.code, Warnings: d.warnings}
	if d.mutated.changed() {
		resp.MutatedObject = responseObject{at: &at}
	}
	size := 2*len(d.message) + 64
	for _, warning := range d.warnings {
		size += 2*len(warning) + 4
	}
	w := jwriter.Writer{Buffer: buffer.Buffer{Buf: make([]byte, 0, size)}}
	resp.MarshalEasyJSON(&w)
	frame := w.Buffer.BuildBytes()
	if at < 0 {
		return frame
	}
	n := len(frame) + d.mutated.Len()
	if n <= len(buf) {
		end := d.mutated.writeOver(buf, at)
		copy(buf, frame[:at]) // after the object: its text may have been there
		copy(buf[end:], frame[at:])
		return buf[:n]
	}
	out := append(make([]byte, 0, n), frame[:at]...)
	out = d.mutated.appendTo(out)
	return append(out, frame[at:]...)
}

// settingsResponse is Kubewarden's SettingsValidationResponse.
//
//easyjson:json
type settingsResponse struct {
	Valid   bool   `json:"valid"`
	Message string `json:"message,omitempty"`
}

func (s settingsResponse) encode() []byte {
	w := jwriter.Writer{}
	s.MarshalEasyJSON(&w)
	return w.Buffer.BuildBytes()
}
