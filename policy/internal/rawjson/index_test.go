package rawjson

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// jsonIndexCases are valid documents with what the member iterator must get right: escapes in keys and
// strings, numbers and literals, empty and nested containers, whitespace everywhere, keys twice.
var jsonIndexCases = []string{
	`{}`, `[]`, ` { } `, `{"a":1}`, `[1,"b",true,false,null,-1.5e+3,{},[]]`,
	`{"a":{"b":[1,{"c":null}]},"d":"x","e":[[],[{}]],"f":{"g":{}}}`,
	" {\n\t\"a\" :\r [ 1 , { \"b\" : \"c\" } ] ,\n \"d\" : { } , \"e\" : [ ] } \n",
	`{"user\u002einfo":"v","k":"a\"b\\c\u00e9\ud800","\"":{"\\":[]}}`,
	`{"a":1,"a":{"x":[1]},"a":"3"}`, `[[[[[[[]]]]]]]`, `{"a":"}","b":"]","c":"{[","d":["}"]}`,
	// Long strings, recorded as values and not as keys, escaped or not, beside containers.
	`{"` + strings.Repeat("k", 200) + `":"` + strings.Repeat(`{\"a\":1}`, 30) + `","b":["` + strings.Repeat("v", 150) +
		`",{"c":"` + strings.Repeat("w", 140) + `"}],"d":1}`,
	`"0}0"`, ` "x" `, `5`, // not containers: a view that says JSON is read by gjson (the fuzzer found "0}0")
}

// TestJSONIndex_ForEachAgreesWithGJSON reads every container of every case, and of every request in
// testdata, with the index and with gjson's ForEach, from views whose Index is the offset in the
// document and from views restarted at 0: the keys and values must be the same.
func TestJSONIndex_ForEachAgreesWithGJSON(t *testing.T) {
	docs := append([]string(nil), jsonIndexCases...)
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "requests", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no request fixtures: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	for _, doc := range docs {
		checkIndexAgrees(t, doc)
	}
}

// checkIndexAgrees checks the index of doc as the policy makes it, and with every container recorded.
func checkIndexAgrees(t *testing.T, doc string) {
	t.Helper()
	for _, minSize := range []int{IndexedSize, 1} {
		checkIndexFromAgrees(t, doc, minSize)
	}
}

func checkIndexFromAgrees(t *testing.T, doc string, minSize int) {
	t.Helper()
	x := ParseFrom(doc, minSize)
	if x == nil {
		t.Fatalf("valid JSON refused: %s", doc)
	}
	for i, c := range x.containers {
		got, escaped := ContainerEnd(doc, c.start), false
		if doc[c.start] == '"' { // a string value
			got, escaped = StringEnd(doc, c.start)
		}
		if got != c.end || escaped != c.escaped || c.end-c.start < minSize {
			t.Fatalf("container %d at %d ends at %d (escaped %v), reading it says %d (%v): %s", i, c.start, c.end, c.escaped, got, escaped, doc)
		}
		if c.next != x.Following(c.end) {
			t.Fatalf("container %d at %d: next %d, want %d", i, c.start, c.next, x.Following(c.end))
		}
	}
	// Every container, as gjson finds it (Index: its offset) and restarted at 0 (as the policy's walker does), and
	// the root as gjson.Parse gives it (leading whitespace skipped, trailing kept).
	var check func(v gjson.Result)
	check = func(v gjson.Result) {
		for _, view := range []gjson.Result{v, Root(v.Raw)} {
			if got, want := members(x.ForEach, view), members(gjson.Result.ForEach, view); got != want {
				t.Fatalf("container at %d of %s:\nindex: %s\ngjson: %s", v.Index, doc, got, want)
			}
			if view.IsObject() {
				checkMemberAgrees(t, x, view)
			}
			checkMemberRawAgrees(t, x, view)
		}
		v.ForEach(func(_, value gjson.Result) bool {
			if value.Type == gjson.JSON {
				check(value)
			}
			return true
		})
	}
	check(gjson.Parse(doc))
}

// checkMemberAgrees looks up every key of obj with the index, which steps over the values it does not
// return without reading them, and with gjson: the value found must be the same, every field.
func checkMemberAgrees(t *testing.T, x *Index, obj gjson.Result) {
	t.Helper()
	obj.ForEach(func(key, _ gjson.Result) bool {
		_, got, gotDup := x.member(obj, key.Str)
		_, want, wantDup := memberOf(obj, key.Str)
		if g, w := fmt.Sprintf("%#v %v", got, gotDup), fmt.Sprintf("%#v %v", want, wantDup); g != w {
			t.Fatalf("member %q of %s:\nindex: %s\ngjson: %s", key.Str, obj.Raw, g, w)
		}
		return true
	})
}

// checkMemberRawAgrees looks up every key of the container c, and "" (an array element's key), with
// memberRaw and by iterating with Next as a lookup by key reads (keysOnly): every field the same.
func checkMemberRawAgrees(t *testing.T, x *Index, c gjson.Result) {
	t.Helper()
	keys := []string{""}
	c.ForEach(func(key, _ gjson.Result) bool {
		keys = append(keys, key.Str)
		return true
	})
	for _, key := range keys {
		gotK, gotV, gotDup := x.memberRaw(c, key)
		wantK, wantV, wantDup := gjson.Result{}, gjson.Result{}, false
		if it, ok := x.Members(c); ok {
			it.keysOnly = true
			for it, k, v, more := it.Next(); more; it, k, v, more = it.Next() {
				if k.Str != key {
					continue
				}
				if wantV.Exists() {
					wantDup = true
					break
				}
				wantK, wantV = k, v
			}
		} else {
			wantK, wantV, wantDup = memberOf(c, key)
		}
		if g, w := fmt.Sprintf("%#v %#v %v", gotK, gotV, gotDup), fmt.Sprintf("%#v %#v %v", wantK, wantV, wantDup); g != w {
			t.Fatalf("memberRaw(%q) of %s:\ngot:  %s\nwant: %s", key, c.Raw, g, w)
		}
	}
}

// members prints what an iteration reports, every field the policy reads.
func members(each func(gjson.Result, func(k, v gjson.Result) bool), v gjson.Result) string {
	var b strings.Builder
	each(v, func(k, v gjson.Result) bool {
		for _, r := range []gjson.Result{k, v} {
			fmt.Fprintf(&b, "%v %q %q %v @%d; ", r.Type, r.Raw, r.Str, r.Num, r.Index)
		}
		b.WriteString("\n")
		return true
	})
	return b.String()
}

// TestJSONIndex_ViewsOutsideTheDocumentAreReadByGJSON: a value that is not a view of the indexed
// document (another document, a copy) is read by gjson, and a nil index reads everything with gjson.
func TestJSONIndex_ViewsOutsideTheDocumentAreReadByGJSON(t *testing.T) {
	doc := `{"a":{"b":1,"b":2}}`
	x := Parse(doc)
	other := strings.Clone(doc)
	for name, x := range map[string]*Index{"other document": x, "nil index": nil} {
		if _, dup := x.Child(gjson.Parse(other).Get("a"), "b"); !dup {
			t.Errorf("%s: the duplicate key was not seen", name)
		}
		if v, _ := x.Child(gjson.Parse(other), "a"); v.Raw != `{"b":1,"b":2}` {
			t.Errorf("%s: a = %q", name, v.Raw)
		}
	}
	if x.At(doc[5:]) != 5 || x.At(other) != -1 || x.At("") != -1 {
		t.Errorf("at: %d %d %d", x.At(doc[5:]), x.At(other), x.At(""))
	}
}

func FuzzJSONIndex(f *testing.F) {
	for _, s := range append(jsonIndexCases, validJSONCases...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Parse(s) == nil {
			return // Valid's own fuzz test checks which documents are refused
		}
		checkIndexAgrees(t, s)
	})
}

// TestHasMembers_CopiesNoValue: whether an object has a member is answered without unescaping its first
// value (a kubectl last-applied-configuration annotation is the whole object again, escaped), and
// agrees with gjson.
func TestHasMembers_CopiesNoValue(t *testing.T) {
	doc := `{"annotations":{"last-applied":"` + strings.Repeat(`{\"a\":\"b\"},`, 100) + `"},"empty":{ }}`
	x := Parse(doc)
	for _, key := range []string{"annotations", "empty"} {
		obj, _ := x.Child(Root(doc), key)
		want := false
		obj.ForEach(func(_, _ gjson.Result) bool { want = true; return false })
		if got := x.HasMembers(obj); got != want {
			t.Errorf("%s: HasMembers = %v, want %v", key, got, want)
		}
		if allocs := testing.AllocsPerRun(10, func() { x.HasMembers(obj) }); allocs != 0 {
			t.Errorf("%s: HasMembers allocates %.0f times, want 0", key, allocs)
		}
	}
}
