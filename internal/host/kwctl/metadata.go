package kwctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MetadataSection is the custom section `kwctl annotate` writes metadata.yml into.
const MetadataSection = "io.kubewarden.metadata"

// ErrMissingProtocolVersion is policy-server's refusal of a waPC module without Kubewarden's metadata
// (one `kwctl annotate` has not written): it exits at start-up with these words.
var ErrMissingProtocolVersion = errors.New("Policy is missing protocol version, which is required for KubewardenWapc execution mode") //nolint:staticcheck // policy-server's words

// CheckLoadable refuses a module policy-server would refuse to load, as policy-server 1.36 does
// (policy-evaluator's Metadata::from_contents, then has_valid_protocol_version): the first
// io.kubewarden.metadata section is read as metadata; without one, or without a protocolVersion,
// a module in the default execution mode (kubewarden-wapc) is refused. kwctl run loads both.
func CheckLoadable(wasm []byte) error {
	data, found, err := customSection(wasm, MetadataSection)
	if err != nil {
		return err
	}
	if !found {
		return ErrMissingProtocolVersion
	}
	var meta struct {
		ProtocolVersion *string `json:"protocolVersion"`
		ExecutionMode   *string `json:"executionMode"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("cannot read the %s section: %w", MetadataSection, err)
	}
	switch {
	case meta.ExecutionMode != nil && *meta.ExecutionMode != "kubewarden-wapc":
		return fmt.Errorf("execution mode %q: kwhost runs kubewarden-wapc policies only", *meta.ExecutionMode)
	case meta.ProtocolVersion == nil:
		return ErrMissingProtocolVersion
	case *meta.ProtocolVersion != "v1":
		return fmt.Errorf("Policy uses protocol version %q but only V1 is supported", *meta.ProtocolVersion) //nolint:staticcheck // policy-server's words
	}
	return nil
}

// customSection returns the body of the module's first custom section named name.
func customSection(wasm []byte, name string) (data []byte, found bool, err error) {
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, false, errors.New("not a WebAssembly module")
	}
	for rest := wasm[8:]; len(rest) > 0; {
		id := rest[0]
		size, n := uleb(rest[1:])
		if n == 0 || size > len(rest)-1-n {
			return nil, false, errors.New("a section runs past the end of the module")
		}
		body := rest[1+n : 1+n+size]
		rest = rest[1+n+size:]
		if id != 0 {
			continue
		}
		nameLen, m := uleb(body)
		if m == 0 || nameLen > len(body)-m {
			return nil, false, errors.New("a custom section's name runs past its end")
		}
		if string(body[m:m+nameLen]) == name {
			return body[m+nameLen:], true, nil
		}
	}
	return nil, false, nil
}

// uleb reads an unsigned LEB128 number of at most 32 bits and how many bytes it took (0: malformed).
func uleb(b []byte) (v, n int) {
	for i := 0; i < len(b) && i < 5; i++ {
		v |= int(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
