package policy

import (
	"github.com/mailru/easyjson/buffer"
	"github.com/mailru/easyjson/jlexer"
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
	Accepted      bool     `json:"accepted"`
	Message       string   `json:"message,omitempty"`
	Code          uint16   `json:"code,omitempty"`
	MutatedObject edit     `json:"mutated_object,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

func (d decision) encode() []byte {
	resp := validationResponse{
		Accepted:      d.accepted,
		Message:       d.message,
		Code:          d.code,
		MutatedObject: d.mutated,
		Warnings:      d.warnings,
	}
	// One buffer sized for the whole answer: the mutated object is as large as the request's object, and
	// easyjson's default chunked buffer would copy it twice more (and let the GC run) on its way out.
	size := d.mutated.Len() + 2*len(d.message) + 64
	for _, warning := range d.warnings {
		size += 2*len(warning) + 4
	}
	w := jwriter.Writer{Buffer: buffer.Buffer{Buf: make([]byte, 0, size)}}
	resp.MarshalEasyJSON(&w)
	return w.Buffer.BuildBytes()
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

// MarshalEasyJSON writes the edited object as it is: valid JSON by construction.
func (e edit) MarshalEasyJSON(w *jwriter.Writer) { e.writeTo(w.RawString) }

// IsDefined makes omitempty leave out the zero edit.
func (e edit) IsDefined() bool { return e.changed() }

// UnmarshalEasyJSON reads an object as an unedited document (the response is only decoded in tests).
func (e *edit) UnmarshalEasyJSON(in *jlexer.Lexer) { *e = edit{doc: string(in.Raw())} }
