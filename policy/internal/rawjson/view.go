package rawjson

import "unsafe"

// View returns b as a string without copying it. The string, and every string or gjson Result taken from
// it, reads b's bytes: b must not be written while any of them is in use, except by Edit.WriteOver, whose
// order of writes reads every byte before it is overwritten (FuzzEditWriteOver checks it).
func View(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
