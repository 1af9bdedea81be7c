// Package rawjson reads and edits JSON text in place, without decoding it: Parse validates a document in
// one pass and indexes its large containers, Index finds members by unescaped key, Ref keeps a value as
// offsets, and Edit writes a change as spans of new text. Its unsafe code keeps one invariant:
// docs/runtime.md "The JSON engine".
package rawjson
