// Package wapchost runs a Kubewarden waPC policy module on wazero the way policy-server does: the
// module is compiled once, every evaluation gets a fresh instance, and each instance is started with
// `_start` then `wapc_init`. It answers the `kubewarden/tracing/log` host call and refuses every
// other one, so it suits policies that need no context-aware capabilities.
//
// It is for tests, the local `kwhost` CLI and benchmarks. It is not a policy-server: it knows nothing
// of AdmissionReviews, settings or HTTP (see package kwctl for the first two), keeps no module cache
// on disk and enforces no memory limit.
package wapchost
