package rawjson

import (
	"strings"
	"testing"
)

func TestLeaves_DeepNestingIsReadWithoutRecursion(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 100000) + `"` + "yunikorn.apache.org/user.info" + `"` + strings.Repeat("}", 100000)
	found := false
	EachLeaf(deep, "k", func(l Leaf) bool {
		found = l.IsString && l.Text == "yunikorn.apache.org/user.info" && strings.Count(l.Key, ".") == 100000
		return true
	})
	if !found {
		t.Fatal("the deepest leaf was not read")
	}
	var got []string
	EachLeaf(`{"a":[1,{"b":"x","c":[]}],"d":{},"e":null}`, "top", func(l Leaf) bool {
		got = append(got, l.Key+"="+l.Text)
		return true
	})
	if want := "top.a= top.a.b=x top.a.c= top.d= top.e="; strings.Join(got, " ") != want {
		t.Fatalf("leaves: %q, want %q", strings.Join(got, " "), want)
	}
}
