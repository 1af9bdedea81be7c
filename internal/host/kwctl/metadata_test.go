package kwctl

import (
	"errors"
	"strings"
	"testing"
)

// moduleWith is an empty module with one custom section per name and body given (name, body, ...).
func moduleWith(sections ...string) []byte {
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	for i := 0; i+1 < len(sections); i += 2 {
		body := append([]byte{byte(len(sections[i]))}, sections[i]+sections[i+1]...)
		wasm = append(append(wasm, 0, byte(len(body))), body...)
	}
	return wasm
}

func TestCheckLoadable_RefusesWhatPolicyServerRefusesToLoad(t *testing.T) {
	for name, tc := range map[string]struct {
		wasm []byte
		want string // "" loads
	}{
		"annotated":            {moduleWith("producers", "x", MetadataSection, `{"protocolVersion":"v1","mutating":true}`), ""},
		"wapc mode said":       {moduleWith(MetadataSection, `{"protocolVersion":"v1","executionMode":"kubewarden-wapc"}`), ""},
		"no metadata":          {moduleWith("name", "x"), ErrMissingProtocolVersion.Error()},
		"no protocol version":  {moduleWith(MetadataSection, `{"mutating":true}`), ErrMissingProtocolVersion.Error()},
		"first section counts": {moduleWith(MetadataSection, `{}`, MetadataSection, `{"protocolVersion":"v1"}`), ErrMissingProtocolVersion.Error()},
		"unknown protocol":     {moduleWith(MetadataSection, `{"protocolVersion":"Unknown"}`), "only V1 is supported"},
		"another mode":         {moduleWith(MetadataSection, `{"protocolVersion":"v1","executionMode":"opa"}`), `execution mode "opa"`},
		"metadata not JSON":    {moduleWith(MetadataSection, `{`), "cannot read the io.kubewarden.metadata section"},
		"not wasm":             {[]byte("{}"), "not a WebAssembly module"},
		"section past the end": {append(moduleWith(), 0, 9, 1), "past the end"},
	} {
		err := CheckLoadable(tc.wasm)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
		if strings.HasPrefix(tc.want, "Policy is missing") && !errors.Is(err, ErrMissingProtocolVersion) {
			t.Errorf("%s: error %v is not ErrMissingProtocolVersion", name, err)
		}
	}
}
