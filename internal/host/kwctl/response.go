package kwctl

import (
	"bytes"
	"encoding/json"

	"github.com/wI2L/jsondiff"
)

// Response is the AdmissionResponse kwctl prints and policy-server sends. Field order, omitted
// fields and nulls follow policy-evaluator's serde struct: patchType, patch and status are left
// out when absent, while auditAnnotations and warnings are always written, null when absent.
type Response struct {
	UID              string            `json:"uid"`
	Allowed          bool              `json:"allowed"`
	PatchType        string            `json:"patchType,omitempty"`
	Patch            []byte            `json:"patch,omitempty"` // a JSON Patch; encoding/json writes it as std base64
	Status           *Status           `json:"status,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	Warnings         []string          `json:"warnings"`
}

// Status holds the guest's message and code as given: either may be absent.
type Status struct {
	Message *string `json:"message,omitempty"`
	Code    *uint16 `json:"code,omitempty"`
}

// JSON renders r on one line, as kwctl prints it. Like serde_json it does not escape <, > and &,
// and map keys come out sorted, so identical input gives identical bytes.
func (r *Response) JSON() []byte {
	b, err := marshal(r)
	if err != nil {
		panic(err) // cannot happen: every field is a plain JSON type
	}
	return b
}

// PatchOp is one RFC 6902 operation, in the member order of the json-patch crate kwctl uses.
type PatchOp struct {
	Op    string          `json:"op"`
	From  string          `json:"from,omitempty"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// PatchOps decodes r.Patch; nil when there is none.
func (r *Response) PatchOps() ([]PatchOp, error) {
	if len(r.Patch) == 0 {
		return nil, nil
	}
	var ops []PatchOp
	err := json.Unmarshal(r.Patch, &ops)
	return ops, err
}

// jsonPatch diffs the request's object against the guest's mutated object. An empty diff gives
// nil: policy-evaluator then sends no patch at all rather than an empty one.
func jsonPatch(object, mutated json.RawMessage) ([]byte, error) {
	diff, err := jsondiff.CompareJSON(object, mutated, jsondiff.UnmarshalFunc(unmarshalNumbers))
	if err != nil || len(diff) == 0 {
		return nil, err
	}
	ops := make([]PatchOp, len(diff))
	for i, d := range diff {
		ops[i] = PatchOp{Op: d.Type, From: d.From, Path: d.Path}
		if d.Type == jsondiff.OperationAdd || d.Type == jsondiff.OperationReplace || d.Type == jsondiff.OperationTest {
			if ops[i].Value, err = marshal(d.Value); err != nil {
				return nil, err
			}
		}
	}
	return marshal(ops)
}

// unmarshalNumbers keeps numbers as written: through float64, an int64 such as a large
// resourceVersion-like value would come back rounded and produce a spurious replace.
func unmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// RefuseMutation is policy-server's answer when a policy deployed without mutations (a ClusterAdmissionPolicy
// with `mutating: false`, `allowedToMutate` unset in policies.yml) answers with a patch: the request is rejected
// with policy-server's words and no code, the patch dropped and the rest of the answer (warnings) kept. An answer
// without a patch is returned as it is.
func RefuseMutation(r *Response, policyID string) *Response {
	if r.Patch == nil {
		return r
	}
	msg := "Request rejected by policy " + policyID + ". The policy attempted to mutate the request, but it is currently configured to not allow mutations."
	refused := *r
	refused.Allowed, refused.Patch, refused.PatchType, refused.Status = false, nil, "", &Status{Message: &msg}
	return &refused
}
