package kwctl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPayload_PolicyServerForm(t *testing.T) {
	input := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
	  "uid":"u1","kind":{"version":"v1","kind":"Pod","group":""},
	  "resource":{"resource":"pods","group":"","version":"v1"},
	  "subResource":null,"name":null,"namespace":"ns","operation":"CREATE",
	  "userInfo":{"username":"alice","groups":["devops"],"uid":null,"username":"bob","future":1},
	  "object":{"metadata":{"name":"p","annotations":{"b":"2","a":"1","a":"3"}},"kind":"Pod","x":null,"n":1e3},
	  "oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions"},"unknownMember":{"z":1}}}`
	req, err := ParseRequest([]byte(input), PayloadPolicyServer)
	if err != nil {
		t.Fatal(err)
	}
	// Keys sorted at every level (objects included), nulls of optional members and unknown members
	// dropped, a map's duplicate resolved to the last (userInfo is k8s-openapi's, which does the same),
	// numbers as serde_json writes them, null inside an object kept.
	want := `{"dryRun":false,"kind":{"group":"","kind":"Pod","version":"v1"},"namespace":"ns",` +
		`"object":{"kind":"Pod","metadata":{"annotations":{"a":"3","b":"2"},"name":"p"},"n":1000.0,"x":null},` +
		`"operation":"CREATE","options":{"kind":"CreateOptions"},"resource":{"group":"","resource":"pods","version":"v1"},` +
		`"uid":"u1","userInfo":{"groups":["devops"],"username":"bob"}}`
	if string(req.Raw) != want {
		t.Errorf("policy-server form:\n got %s\nwant %s", req.Raw, want)
	}
	if string(req.Object) != `{"kind":"Pod","metadata":{"annotations":{"a":"3","b":"2"},"name":"p"},"n":1000.0,"x":null}` {
		t.Errorf("the object diffed against the mutation must be the one the policy saw: %s", req.Object)
	}
}

func TestPayload_PolicyServerRefusesWhatItsTypedRequestRefuses(t *testing.T) {
	base := `"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","userInfo":{}`
	for name, tc := range map[string]struct {
		input   string
		notJSON bool
		want    string
	}{
		"duplicate uid":          {`{"uid":"a","uid":"b",` + base + `}`, false, "duplicate field `uid`"},
		"duplicate operation":    {`{"uid":"a",` + base + `,"operation":"DELETE"}`, false, "duplicate field `operation`"},
		"duplicate kind.kind":    {`{"uid":"a",` + strings.Replace(base, `"kind":"Pod"`, `"kind":"Pod","kind":"Job"`, 1) + `}`, false, "duplicate field `kind`"},
		"missing uid":            {`{` + base + `}`, false, "missing field `uid`"},
		"missing kind.group":     {`{"uid":"a",` + strings.Replace(base, `"group":"",`, ``, 1) + `}`, false, "missing field `group`"},
		"userInfo null":          {`{"uid":"a",` + strings.Replace(base, `"userInfo":{}`, `"userInfo":null`, 1) + `}`, false, "userInfo"},
		"groups not strings":     {`{"uid":"a",` + strings.Replace(base, `"userInfo":{}`, `"userInfo":{"groups":[1]}`, 1) + `}`, false, "expected a string"},
		"operation not a string": {`{"uid":"a",` + strings.Replace(base, `"operation":"CREATE"`, `"operation":1`, 1) + `}`, false, "operation"},
		"lone surrogate":         {`{"uid":"\udc00",` + base + `}`, true, "surrogate"},
		"invalid UTF-8":          {"{\"uid\":\"\xff\"," + base + `}`, true, "invalid unicode"},
		"nesting too deep":       {`{"uid":"a",` + base + `,"object":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}`, true, "recursion limit"},
		"two requests":           {`{"kind":"AdmissionReview","request":{},"request":{}}`, false, "duplicate field `request`"},
	} {
		_, err := ParseRequest([]byte(tc.input), PayloadPolicyServer)
		var reqErr *RequestError
		if !errors.As(err, &reqErr) || reqErr.NotJSON != tc.notJSON || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v (not JSON: %v), want a RequestError containing %q (not JSON: %v)", name, err,
				reqErr != nil && reqErr.NotJSON, tc.want, tc.notJSON)
		}
	}
}

func TestPayload_SettingsInPolicyServerForm(t *testing.T) {
	guest := &fakeGuest{validateAnswer: `{"accepted":true}`}
	if _, err := Run(context.Background(), guest, readFixture(t, "deployment-create.json"), json.RawMessage(`{"b":[2,1],"a":{"y":1,"x":2}}`), PayloadPolicyServer); err != nil {
		t.Fatal(err)
	}
	if got, want := guest.payloads["validate_settings"], `{"a":{"x":2,"y":1},"b":[2,1]}`; got != want {
		t.Errorf("validate_settings payload %s, want %s", got, want)
	}
	if got := guest.payloads["validate"]; !strings.HasSuffix(got, `,"settings":{"a":{"x":2,"y":1},"b":[2,1]}}`) || !strings.HasPrefix(got, `{"request":{"dryRun"`) {
		t.Errorf("validate payload %.120s...: want sorted keys throughout", got)
	}
}

func TestResponse_ReadAsSerdeReadsIt(t *testing.T) {
	for _, tc := range []struct {
		answer string
		ok     bool
	}{
		{`{"accepted":true}`, true},
		{`{"accepted":true,"Accepted":false,"unknown":1}`, true}, // exact names; unknown members ignored
		{`{"accepted":false,"code":400,"message":"m","warnings":["w"],"audit_annotations":{"k":"v"},"mutated_object":null}`, true},
		{`{"accepted":true,"accepted":false}`, false}, // encoding/json would keep the last
		{`{"Accepted":true}`, false},
		{`{"accepted":"true"}`, false},
		{`{"accepted":false,"code":400.0}`, false},
		{`{"accepted":false,"code":-1}`, false},
		{`{"accepted":false,"code":65536}`, false},
		{"{\"accepted\":false,\"message\":\"\xff\"}", false},
		{`{"accepted":true,"warnings":[1]}`, false},
		{`{"accepted":true,"audit_annotations":{"k":1}}`, false},
		{`{"accepted":true} x`, false},
	} {
		_, err := decodeValidationResponse([]byte(tc.answer))
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok=%v", tc.answer, err, tc.ok)
		}
	}
	for answer, ok := range map[string]bool{
		`{"valid":true}`: true, `{"valid":false,"message":"m"}`: true, `{"valid":true,"valid":false}`: false,
		`{"Valid":true}`: false, `{"valid":1}`: false, `{"valid":false,"message":1}`: false,
	} {
		if _, _, err := decodeSettingsResponse([]byte(answer)); (err == nil) != ok {
			t.Errorf("%s: error %v, want ok=%v", answer, err, ok)
		}
	}
}
