package rawjson

import "unsafe"

// View returns b as a string without copying it: b must not be written while the string, or anything
// taken from it, is in use, except by Edit.WriteOver.
func View(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
