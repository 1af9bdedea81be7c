// Package policy decides what happens to an admission request for the yunikorn.apache.org/user.info
// annotation (docs/rules.md). It is plain Go: no waPC, no I/O, no globals beyond constants, so every rule is
// tested natively. main.go wires it to the waPC exports.
package policy
