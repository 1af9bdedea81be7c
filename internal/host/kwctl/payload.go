package kwctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/serdejson"
)

// Payload is the form in which the host hands the request to the policy.
type Payload string

const (
	// PayloadPolicyServer is what policy-server sends: the AdmissionRequest read into its typed Rust
	// struct and written out again by serde_json, so unknown members are dropped, null optional
	// members are left out, every object's keys are sorted (objects included), duplicates resolved to
	// the last, and the text is compact with serde_json's escapes. A request its struct refuses (a
	// required member missing, a wrong type, a duplicate member) never reaches the policy.
	PayloadPolicyServer Payload = "policy-server"
	// PayloadRaw hands over the request's bytes exactly as given: for malformed-input tests, which
	// must reach the policy with what policy-server would have stopped.
	PayloadRaw Payload = "raw"
)

// ParsePayload reads a --payload flag value.
func ParsePayload(s string) (Payload, error) {
	switch p := Payload(s); p {
	case PayloadPolicyServer, PayloadRaw:
		return p, nil
	}
	return "", fmt.Errorf("--payload %q: want %q or %q", s, PayloadPolicyServer, PayloadRaw)
}

// RequestError is a request that policy-server refuses before any policy runs.
type RequestError struct {
	NotJSON bool // serde_json refused the text itself (a syntax error): HTTP 400, else 422
	Err     error
}

func (e *RequestError) Error() string {
	return "cannot build AdmissionRequest object from given input: " + e.Err.Error()
}

func (e *RequestError) Unwrap() error { return e.Err }

// PolicyServerAnswer is the HTTP status and message policy-server answers a review it refuses with:
// its web framework (axum's Json extractor) says 400 for a body serde_json cannot parse, 422 for one
// its typed AdmissionReview refuses, and policy-server writes {"message": ..., "status": ...}. The
// reason is serde's, after serde_path_to_error's path ("request: missing field `userInfo`"); where
// policy-server adds serde_json's line and column, the stand-in gives a byte offset or nothing.
func (e *RequestError) PolicyServerAnswer() (status int, message string) {
	if e.NotJSON {
		return http.StatusBadRequest, "Failed to parse the request body as JSON: " + e.Err.Error()
	}
	return http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: " + e.Err.Error()
}

// typedError is a member serde's typed structs refuse, with serde_path_to_error's path to the value
// that failed: the struct for a missing or duplicate member, the member itself for a wrong type.
type typedError struct {
	path []string // outermost first; an array index is "[i]"
	msg  string
}

func (e *typedError) Error() string {
	var b strings.Builder
	for i, seg := range e.path {
		if i > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	if b.Len() == 0 {
		return e.msg
	}
	return b.String() + ": " + e.msg
}

func typedErrorf(format string, args ...any) error {
	return &typedError{msg: fmt.Sprintf(format, args...)}
}

// at puts err, refused within member (or array index) seg, on the path.
func at(seg string, err error) error {
	var te *typedError
	if !errors.As(err, &te) {
		return &typedError{path: []string{seg}, msg: err.Error()}
	}
	return &typedError{path: append([]string{seg}, te.path...), msg: te.msg}
}

// The typed structs' members: a derived serde struct refuses a duplicate member and ignores unknown
// ones; Option members accept null as absent.
var (
	gvkFields = []field{{"group", reqString}, {"version", reqString}, {"kind", reqString}}
	gvrFields = []field{{"group", reqString}, {"version", reqString}, {"resource", reqString}}
	// policy-evaluator's AdmissionRequest.
	requestFields = []field{
		{"uid", reqString},
		{"kind", reqStruct(gvkFields)},
		{"resource", reqStruct(gvrFields)},
		{"subResource", optional(reqString)},
		{"requestKind", optional(reqStruct(gvkFields))},
		{"requestResource", optional(reqStruct(gvrFields))},
		{"requestSubResource", optional(reqString)},
		{"name", optional(reqString)},
		{"namespace", optional(reqString)},
		{"operation", reqString},
		{"userInfo", userInfo},
		{"object", optional(anyValue)},
		{"oldObject", optional(anyValue)},
		{"dryRun", optional(reqBool)},
		{"options", optional(anyValue)},
	}
)

// field is a struct member and how it reads its value: ok false leaves the member out.
type field struct {
	name string
	read func(v serdejson.Value) (out serdejson.Value, ok bool, err error)
}

func typedRequest(v serdejson.Value) (serdejson.Value, error) {
	out, _, err := reqStruct(requestFields)(v)
	return out, err
}

// reqStruct reads a derived struct: every non-optional member must be there, once.
func reqStruct(fields []field) func(serdejson.Value) (serdejson.Value, bool, error) {
	return func(v serdejson.Value) (serdejson.Value, bool, error) {
		if v.Kind != serdejson.Object {
			return v, false, typedErrorf("invalid type: %s, expected a struct", v.Kind)
		}
		out := serdejson.Obj()
		for _, f := range fields {
			if dup := v.Duplicate(f.name); dup != "" {
				return v, false, typedErrorf("duplicate field `%s`", dup)
			}
			member, present := v.Get(f.name)
			if !present {
				member = serdejson.Value{Kind: serdejson.Null} // Option members default to None
			}
			got, ok, err := f.read(member)
			if err != nil {
				if !present {
					return v, false, typedErrorf("missing field `%s`", f.name)
				}
				return v, false, at(f.name, err)
			}
			if ok {
				out.Members = append(out.Members, serdejson.Member{Key: f.name, Value: got})
			}
		}
		return out, true, nil
	}
}

func optional(read func(serdejson.Value) (serdejson.Value, bool, error)) func(serdejson.Value) (serdejson.Value, bool, error) {
	return func(v serdejson.Value) (serdejson.Value, bool, error) {
		if v.Kind == serdejson.Null {
			return v, false, nil
		}
		return read(v)
	}
}

func reqString(v serdejson.Value) (serdejson.Value, bool, error) {
	if v.Kind != serdejson.String {
		return v, false, typedErrorf("invalid type: %s, expected a string", v.Kind)
	}
	return v, true, nil
}

func reqBool(v serdejson.Value) (serdejson.Value, bool, error) {
	if v.Kind != serdejson.Bool {
		return v, false, typedErrorf("invalid type: %s, expected a boolean", v.Kind)
	}
	return v, true, nil
}

func anyValue(v serdejson.Value) (serdejson.Value, bool, error) { return v, true, nil }

func stringList(v serdejson.Value) (serdejson.Value, bool, error) {
	if v.Kind != serdejson.Array {
		return v, false, typedErrorf("invalid type: %s, expected a sequence", v.Kind)
	}
	for i, el := range v.Elems {
		if _, _, err := reqString(el); err != nil {
			return v, false, at(fmt.Sprintf("[%d]", i), err)
		}
	}
	return v, true, nil
}

// userInfo reads k8s-openapi's UserInfo: every member optional, and (its hand-written deserializer)
// a repeated member replaces the earlier one instead of failing.
func userInfo(v serdejson.Value) (serdejson.Value, bool, error) {
	if v.Kind != serdejson.Object {
		return v, false, typedErrorf("invalid type: %s, expected UserInfo", v.Kind)
	}
	out := serdejson.Obj()
	for _, f := range []field{
		{"extra", optional(stringListMap)}, {"groups", optional(stringList)},
		{"uid", optional(reqString)}, {"username", optional(reqString)},
	} {
		member, present := v.Get(f.name)
		if !present {
			continue
		}
		got, ok, err := f.read(member)
		if err != nil {
			return v, false, at(f.name, err)
		}
		if ok {
			out.Members = append(out.Members, serdejson.Member{Key: f.name, Value: got})
		}
	}
	return out, true, nil
}

func stringListMap(v serdejson.Value) (serdejson.Value, bool, error) {
	if v.Kind != serdejson.Object {
		return v, false, typedErrorf("invalid type: %s, expected a map", v.Kind)
	}
	for _, m := range v.Members {
		if _, _, err := stringList(m.Value); err != nil {
			return v, false, at(m.Key, err)
		}
	}
	return v, true, nil
}

// SettingsFor returns settings in the form the policy receives them: in policy-server's form a
// serde_json Value (keys sorted, compact), else as given.
func SettingsFor(settings json.RawMessage, form Payload) (json.RawMessage, error) {
	if form != PayloadPolicyServer {
		return settings, nil
	}
	v, err := serdejson.Parse(settings)
	if err != nil {
		return nil, err
	}
	return serdejson.Marshal(v), nil
}
