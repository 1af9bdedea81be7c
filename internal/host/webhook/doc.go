// Package webhook serves a Kubewarden waPC policy as an HTTPS AdmissionReview (admission.k8s.io/v1)
// endpoint, so that a real kube-apiserver can call the policy as a mutating admission webhook. The
// cluster suite under test/cluster uses it, through `kwhost serve`, to prove what the policy does with
// the requests that the API server and the controllers really send.
//
// It is a test host, not a production server: one policy, no policy groups, no monitor mode, no
// metrics, no client authentication, no context-aware host calls and no certificate reloading. Use
// Kubewarden's policy-server in a cluster. What it shares with policy-server is what the tests rely
// on: the settings are validated once at start-up (and refused as policy-server refuses them), a review
// is read as policy-server reads it (what it refuses before any policy runs gets its HTTP status and
// message), every request is evaluated in a fresh instance, and the AdmissionResponse (uid, allowed, JSONPatch,
// status, warnings) is built by package kwctl exactly as kwctl and policy-server build it.
package webhook
