// Package shipcheck checks that the files the policy ships with agree with each other and with the
// policy: metadata.yml (what kwctl annotates into the module), artifacthub-pkg.yml (what Artifact Hub
// shows), questions-ui.yml (Rancher's settings form), examples/*.yaml (the ClusterAdmissionPolicies the
// README points to), LICENSE and CHANGELOG.md. Each of them restates the rules, the version or the
// settings, and nothing else notices when one of them drifts.
//
// It holds tests only and is not part of the policy: nothing imports it, and it never reaches policy.wasm.
package shipcheck
