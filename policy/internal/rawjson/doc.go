// Package rawjson reads and edits JSON text in place, without decoding it into Go values: Valid and Parse
// check a document in one iterative pass (no recursion, whatever the nesting) and index its large
// containers; Index finds members by their unescaped keys and steps over values without reading them
// again; Ref keeps a value as a few words of offsets; Edit describes a change as spans of new text over the
// document, written once into the answer (AppendTo) or over the buffer the document was read from
// (WriteOver). It knows nothing of Kubernetes or of the policy.
//
// Why splice: a typed decode and re-encode would drop or rewrite what it does not model (`replicas: 0`,
// `allowPrivilegeEscalation: false`, the order and spelling of members), and the host's diff of the answer
// against the request would then change the object beyond the one member meant.
//
// The policy's unsafe code is in this package (wapcguest has its own, for the host's buffers): View (a string sharing a byte slice's
// memory), and the word-at-a-time loads and stores of the scanners (load64, store64). The invariant every
// use keeps: a string or gjson.Result is a view of bytes that nobody writes while it is in use. The one
// writer over such bytes is Edit.WriteOver, which writes the answer over the payload the edit's views read:
// it moves each piece of text before anything overwrites it and copies the parts that are views of the
// buffer first (its doc comment gives the order; FuzzEditWriteOver compares it with AppendTo for any edit
// of any buffer, and fails when the order is wrong).
package rawjson
