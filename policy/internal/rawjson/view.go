package rawjson

import "unsafe"

// View returns b as a string without copying it. The string, and every string or gjson Result taken from
// it, reads b's bytes: b must not be written while any of them is in use, except by Edit.WriteOver, whose
// order of writes reads every byte before it is overwritten (FuzzEditWriteOver checks it).
func View(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Bytes returns s's bytes without copying them, for a reader that takes a []byte. They must never be
// written: a Go string is immutable, and s may be a View of a buffer others read.
func Bytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
