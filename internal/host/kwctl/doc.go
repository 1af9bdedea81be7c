// Package kwctl reproduces what `kwctl run` and policy-server do around a waPC policy for one
// request: read an AdmissionReview or a bare AdmissionRequest, have the policy validate its
// settings, call `validate`, and turn the guest's answer into the AdmissionResponse they would send
// (field order, nulls, the base64 JSON Patch, the 500 for a failing guest). Sources: kubewarden/kwctl
// src/command/run.rs and kubewarden/policy-evaluator src/admission_response.rs and
// src/runtimes/wapc/runtime.rs.
//
// It is not a policy-server: no HTTP, no policy groups, no monitor mode, no `mutating: false`
// constraint, no custom rejection message and no context-aware host calls.
package kwctl
