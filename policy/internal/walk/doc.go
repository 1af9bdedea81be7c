// Package walk finds the maps a kind's paths name in a JSON object: Parse reads the path syntax, a Walker
// walks paths over one object and records each map as a Ref (offsets into the object) with its concrete
// path, Paired walks an UPDATE's two objects together. It reports what it finds as facts (a Problem); the
// rules of package policy decide on the maps and word the problems. It reads JSON through rawjson only.
package walk
