// Command mutfloor is the benchmark's mutating floor: a TinyGo waPC policy that answers every request with
// the change the policy makes to a Pod it stamps (one yunikorn.apache.org/user.info annotation) without
// deciding anything, built with the same flags and on the same waPC glue (package wapcguest) as
// policy.wasm. Where the floor (bench/floor) measures what Kubewarden's protocol costs every policy, this
// one adds what returning a mutated object costs every mutating policy (finding the object, answering it
// whole); the policy's ratio to it is what its decisions cost.
package main

import "github.com/seed-a6d343df/yunikorn-user-info-policy/wapcguest"

func main() {
	wapcguest.Register(wapcguest.Functions{
		"validate":          mutate,
		"validate_settings": func([]byte) []byte { return []byte(`{"valid":true}`) },
		"protocol_version":  func([]byte) []byte { return []byte(`"v1"`) },
	})
}
