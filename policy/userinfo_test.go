package policy

import (
	"encoding/json"
	"strings"
	"testing"
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
		{`{"user":"alice","user":"bob"}`, `the key "user" appears more than once`},
		{`{"user":"alice","us\u0065r":"bob"}`, `the key "user" appears more than once`},
		{`{"user":"a","groups":[],"groups":["x"]}`, `the key "groups" appears more than once`},
		{`{"user":"alice"}{"user":"bob"}`, "not valid JSON"},
		{`{"user":"alice"} x`, "not valid JSON"},
		{`{"user":"alice"`, "not valid JSON"},
		{`{'user':'alice'}`, "not valid JSON"},
		{"{\"user\":\"al\xffice\"}", "not valid UTF-8"},
	} {
		got := CheckSuppliedValue(tc.value)
		if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
			t.Errorf("CheckSuppliedValue(%q) = %q, want %q", tc.value, got, tc.problem)
		}
	}
}

func TestJSONString_MatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "yunikorn.apache.org/user.info", `q"b\`, "<>&", "\u2028\u2029", "\x00\x1f\x7f", "é日🙂", "bad \xff utf8", "\t\n\r"} {
		want, _ := json.Marshal(s)
		if got := jsonString(s); got != string(want) {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
	}
}
