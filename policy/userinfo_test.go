package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// upstreamValue is what YuniKorn's own admission controller writes: encoding/json of its struct.
type upstreamValue struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
}

func TestUserInfo_EncodingIsByteIdenticalToYuniKorn(t *testing.T) {
	for _, u := range []UserInfo{
		{User: "alice", Groups: []string{"devops", "system:authenticated"}},
		{User: "system:serviceaccount:kube-system:job-controller", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
		{User: "no-groups"},
		{User: "empty-groups", Groups: []string{}},
		{User: `html <script>&"quotes"\back`, Groups: []string{"<>&"}},
		{User: "line\u2028sep\u2029para", Groups: []string{"tab\tnew\nline\r\x00\x1f"}},
		{User: "bad utf8 \xff\xfe", Groups: []string{"é ü 日本 🙂"}},
		{User: "\u007f del and \u00a0 nbsp"},
	} {
		want, err := json.Marshal(upstreamValue(u))
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Encode(); got != string(want) {
			t.Errorf("Encode(%q)\n got %s\nwant %s", u.User, got, want)
		}
	}
}

// The stamp is written straight from the payload's groups array (stampValue), without the []string that
// UserInfo holds: byte for byte what YuniKorn writes, whatever the array's own escapes.
func TestUserInfo_StampFromThePayloadIsByteIdenticalToYuniKorn(t *testing.T) {
	for _, tc := range []struct {
		user, groups string // groups as the payload holds request.userInfo.groups; "" when absent
		want         []string
		plain        bool // the array's text is copied as it is (requester.plain)
	}{
		{"alice", `["devops","system:authenticated"]`, []string{"devops", "system:authenticated"}, true},
		{"alice", `["domain users","é日本 🙂","cn=a,ou=b"]`, []string{"domain users", "é日本 🙂", "cn=a,ou=b"}, true},
		{"alice", `[ "dev\u006fps" , "a\"b\\c" ,"\u00e9\ud83d\ude42"]`, []string{"devops", `a"b\c`, "é🙂"}, false},
		{"alice", `["a",  "b"]`, []string{"a", "b"}, false},
		{"alice", `["<x>","a&b"]`, []string{"<x>", "a&b"}, false},
		{"alice", "[\"line\u2028sep\u2029para\"]", []string{"line\u2028sep\u2029para"}, false},
		{"no-groups", "", nil, false},
		{"null-groups", `null`, nil, false},
		{"empty-groups", `[]`, nil, true},
		{`html <script>&"quotes"\back`, `["line\u2028sep\u2029para"]`, []string{"line\u2028sep\u2029para"}, false},
		{"tab", `["tab\tnew\nline\r\u0000\u001f","\u007f del and \u00a0 nbsp"]`, []string{"tab\tnew\nline\r\x00\x1f", "\u007f del and \u00a0 nbsp"}, false},
		{"bad-utf8", "[\"bad utf8 \xff\xfe\"]", []string{"bad utf8 \xff\xfe"}, false}, // raw bytes, as in --payload raw
		{"é \"q\" <b>\u2028", `["a","b"]`, []string{"a", "b"}, true},                  // a user name with everything to escape
	} {
		userInfo := `{"username":` + rawjson.Quote(tc.user)
		if tc.groups != "" {
			userInfo += `,"groups":` + tc.groups
		}
		r := request{userInfo: gjson.Parse(userInfo + "}")}
		r.username, r.groups = r.userInfo.Get("username"), r.userInfo.Get("groups")
		who, problem := readRequester(&r)
		if problem != "" {
			t.Fatalf("%s: %s", userInfo, problem)
		}
		if who.plain != tc.plain {
			t.Errorf("%s: plain = %v, want %v", userInfo, who.plain, tc.plain)
		}
		want, err := json.Marshal(upstreamValue{User: tc.user, Groups: tc.want})
		if err != nil {
			t.Fatal(err)
		}
		if got := stampValue(&who); got != string(want) {
			t.Errorf("stamp for %s\n got %s\nwant %s", userInfo, got, want)
		}
		// As a JSON string, as it is spliced into the object: encoding/json of the value.
		parts := stampJSON(&who)
		if quoted, err := json.Marshal(string(want)); err != nil || partsString(parts) != string(quoted) {
			t.Errorf("stamp as a JSON string for %s\n got %s\nwant %s (%v)", userInfo, partsString(parts), quoted, err)
		}
		if n := (rawjson.Edit{Span: rawjson.Span{Parts: parts}}).Len(); n != len(partsString(parts)) {
			t.Errorf("stamp as a JSON string for %s: its parts say %d bytes, they write %d", userInfo, n, len(partsString(parts)))
		}
		if got, want := who.joinGroups(), strings.Join(tc.want, ","); got != want {
			t.Errorf("groups of %s joined: got %q, want %q", userInfo, got, want)
		}
	}
}

func TestReadRequester_GroupsMustBeStrings(t *testing.T) {
	for _, groups := range []string{`["a",1]`, `[null]`, `[["a"]]`, `[{"a":"b"}]`, `"a"`, `{}`, `true`} {
		r := request{userInfo: gjson.Parse(`{"username":"alice","groups":` + groups + `}`)}
		r.username, r.groups = r.userInfo.Get("username"), r.userInfo.Get("groups")
		if _, problem := readRequester(&r); problem != "request.userInfo.groups must be a list of strings" {
			t.Errorf("groups %s: problem %q", groups, problem)
		}
	}
}

// TestLogGroups_ALongListIsCutWithACount: a log line carries the groups joined by commas, up to about
// 1 KiB, and then how many were left out; the plain and the element-by-element paths agree.
func TestLogGroups_ALongListIsCutWithACount(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf(`"cn=team-%d,ou=groups"`, 100000+i)
	}
	for _, tc := range []struct {
		name, groups, want string
	}{
		{"none", `[]`, ``},
		{"few", `["devops","system:authenticated"]`, `devops,system:authenticated`},
		{"few, not plain", `[ "devops", "abc" ]`, `devops,abc`},
		{"many", `[` + strings.Join(many, ",") + `]`, ""},
		{"many, not plain", `[` + strings.Join(many, ", ") + `]`, ""},
	} {
		r := request{userInfo: gjson.Parse(`{"username":"alice","groups":` + tc.groups + `}`)}
		r.username, r.groups = r.userInfo.Get("username"), r.userInfo.Get("groups")
		who, problem := readRequester(&r)
		if problem != "" {
			t.Fatalf("%s: %s", tc.name, problem)
		}
		got := who.logGroups()
		if tc.want != "" || tc.groups == `[]` {
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			}
			continue
		}
		shown, rest, ok := strings.Cut(got, " ... and ")
		if !ok || len(shown) > logGroupsSize || len(shown) < logGroupsSize-30 || !strings.HasPrefix(got, "cn=team-100000,ou=groups,cn=team-100001,") {
			t.Fatalf("%s: %q", tc.name, got)
		}
		if n := strings.Count(shown, ",ou=groups"); rest != fmt.Sprintf("%d more", 1000-n) {
			t.Errorf("%s: %d groups shown, then %q", tc.name, n, rest)
		}
	}
}

func TestReadGroups_CountsAndClassifiesInOnePass(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		ok, plain bool
		count     int
	}{
		{`[]`, true, true, 0},
		{`["a"]`, true, true, 1},
		{`["a","b,c",""]`, true, true, 3},
		{`["a\"],[\"b"]`, true, false, 1}, // escaped quotes do not end the string
		{`["a\\","b"]`, true, false, 2},   // an escaped backslash does not escape the quote after it
		{`[ "a" ]`, true, false, 1},
		{`["é"]`, true, true, 1},
		{"[\"\xff\"]", true, false, 1},
		{`["a",1]`, false, false, 0},
		{`["a",["b"]]`, false, false, 0},
	} {
		ok, plain, count := rawjson.PlainStrings(tc.raw)
		if ok != tc.ok || plain != tc.plain || count != tc.count {
			t.Errorf("%s: ok %v plain %v count %d, want %v %v %d", tc.raw, ok, plain, count, tc.ok, tc.plain, tc.count)
		}
	}
}

// rawjson.PlainStrings reads eight bytes at a time through a group's text: a character that makes the array not
// plain is found at every offset of a long group, and the first and last groups are read to their ends.
func TestReadGroups_FindsWhatMattersAtEveryOffset(t *testing.T) {
	for _, special := range []struct {
		text  string
		plain bool
	}{{`\"`, false}, {`\\`, false}, {"<", false}, {">", false}, {"&", false}, {"\u2028", false}, {"\xff", false}, {"é", true}, {"~", true},
		// Neighbours of the bytes the word test looks for, which it must not mistake for them.
		{"$", true}, {"'", true}, {"=", true}, {"?", true}, {"%", true}, {";", true}, {"^", true}, {"|", true}} {
		for at := range 20 {
			group := strings.Repeat("a", at) + special.text + strings.Repeat("b", 19-at)
			raw := `["` + group + `","cn=team-000001,ou=groups,dc=example","` + group + `"]`
			if ok, plain, count := rawjson.PlainStrings(raw); !ok || plain != special.plain || count != 3 {
				t.Errorf("%s: ok %v plain %v count %d, want true %v 3", raw, ok, plain, count, special.plain)
			}
		}
	}
}

func TestUserInfo_GroupsAreOmittedWhenEmpty(t *testing.T) {
	if got := (UserInfo{User: "alice"}).Encode(); got != `{"user":"alice"}` {
		t.Fatalf("got %s", got)
	}
}

func TestCheckSuppliedValue(t *testing.T) {
	for _, tc := range []struct{ value, problem string }{
		{aliceValue, ""},
		{`{"user":"alice"}`, ""},
		{`{"user":"alice","groups":[]}`, ""},
		{`{"groups":["g"],"user":"alice"}`, ""},
		{"  {\"user\":\"alice\"}\n\t", ""},
		{`{"us\u0065r":"alice"}`, ""}, // an escaped key is the same key
		{``, "not valid JSON"},
		{`null`, "must be a JSON object"},
		{`"alice"`, "must be a JSON object"},
		{`[{"user":"alice"}]`, "must be a JSON object"},
		{`{}`, `the key "user" is missing`},
		{`{"groups":["a"]}`, `the key "user" is missing`},
		{`{"user":""}`, `"user" must not be empty`},
		{`{"user":null}`, `"user" must be a string`},
		{`{"user":7}`, `"user" must be a string`},
		{`{"user":"alice","groups":null}`, `"groups" must be a list of strings`},
		{`{"user":"alice","groups":"devops"}`, `"groups" must be a list of strings`},
		{`{"user":"alice","groups":["a",1]}`, `"groups" must be a list of strings`},
		{`{"user":"alice","uid":"1"}`, `unknown key "uid"`},
		{`{"user":"alice","USER":"bob"}`, `unknown key "USER"`}, // encoding/json would read bob
		{`{"user":"alice","user":"bob"}`, `the key "user" occurs more than once`},
		{`{"user":"alice","us\u0065r":"bob"}`, `the key "user" occurs more than once`},
		{`{"user":"a","groups":[],"groups":["x"]}`, `the key "groups" occurs more than once`},
		{`{"user":"alice"}{"user":"bob"}`, "not valid JSON"},
		{`{"user":"alice"} x`, "not valid JSON"},
		{`{"user":"alice"`, "not valid JSON"},
		{`{'user':'alice'}`, "not valid JSON"},
		{"{\"user\":\"al\xffice\"}", "not valid UTF-8"},
	} {
		got := checkSuppliedValue(tc.value)
		if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
			t.Errorf("checkSuppliedValue(%q) = %q, want %q", tc.value, got, tc.problem)
		}
	}
}

func TestJSONString_MatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "yunikorn.apache.org/user.info", `q"b\`, "<>&", "\u2028\u2029", "\x00\x1f\x7f", "é日🙂", "bad \xff utf8", "\t\n\r"} {
		want, _ := json.Marshal(s)
		if got := rawjson.Quote(s); got != string(want) {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
	}
}
