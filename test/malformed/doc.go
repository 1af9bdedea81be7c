// Package malformed runs hostile input through the compiled policy.wasm, the module policy-server runs:
// truncated JSON, wrong types at every path the policy reads, huge strings, deep nesting, escaped and
// duplicate keys, invalid UTF-8, byte order marks, out-of-range numbers and trailing garbage. Every case
// must get a well-formed answer (docs/rules.md "Bad input"): never a trap or a Go error, which policy-server
// answers as a rejection with code 500 ("internal server error: Guest call failure") whatever failurePolicy says.
//
// It is not part of the policy and has no code outside its test.
package malformed
