package policy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

func TestOperations_DeleteAndConnectAreAcceptedWhateverElseIsMissing(t *testing.T) {
	for _, payload := range []string{
		`{"request":{"operation":"DELETE"}}`,
		`{"request":{"operation":"CONNECT","kind":{"kind":"Pod"}}}`,
		`{"request":{"operation":"DELETE","kind":{"group":"","kind":"Pod"},"userInfo":null,"object":null}}`,
	} {
		resp, _ := evaluateRaw(t, payload)
		expectAccepted(t, resp)
	}
	resp, _ := evaluateReq(t, fixture(t, "pod-delete"), "")
	expectAccepted(t, resp)
}

func TestKinds_OtherKindsAreAcceptedUnchanged(t *testing.T) {
	for _, kind := range []string{
		`{"group":"","kind":"ConfigMap"}`,
		`{"group":"example.com","kind":"Job"}`, // a Job of another group is not ours
		`{"group":"apps","kind":"Pod"}`,
		`{"group":"","kind":"Deployment"}`,
		`{"group":"autoscaling","kind":"Scale"}`, // deployments/scale
		`{"group":"example.com","kind":"Binding"}`,
		`{"group":"","kind":"pod"}`,
	} {
		payload := `{"request":{"operation":"CREATE","kind":` + kind + `},"settings":{}}`
		resp, _ := evaluateRaw(t, payload)
		expectAccepted(t, resp)
	}
	resp, _ := evaluateReq(t, fixture(t, "deployment-scale"), "")
	expectAccepted(t, resp)
	// The table decides on CREATE of a Binding only (rule 10); a Binding is never updated.
	binding := fixture(t, "binding-create-forged")
	binding["operation"] = "UPDATE"
	resp, _ = evaluateReq(t, binding, "")
	expectAccepted(t, resp)
}

func TestBadInput_IsRejectedWith400AndAMessage(t *testing.T) {
	const pod = `"kind":{"group":"","kind":"Pod"}`
	const deploy = `"kind":{"group":"apps","kind":"Deployment"}`
	const alice = `"userInfo":{"username":"alice","groups":["devops"]}`
	for _, tc := range []struct{ name, payload, want string }{
		{"not JSON", `{"request":`, "the validate payload is not valid JSON"},
		{"empty payload", ``, "the validate payload is not valid JSON"},
		{"trailing garbage", `{"request":{}} {}`, "the validate payload is not valid JSON"},
		{"no request", `{"settings":{}}`, `no "request" object`},
		{"request not an object", `{"request":"CREATE"}`, `no "request" object`},
		{"no operation", `{"request":{` + pod + `}}`, "request.operation is missing"},
		{"operation not a string", `{"request":{"operation":1}}`, "request.operation is missing"},
		{"no userInfo", `{"request":{"operation":"CREATE",` + pod + `,"object":{}}}`, "request.userInfo is missing"},
		{"userInfo not an object", `{"request":{"operation":"CREATE",` + pod + `,"userInfo":"alice","object":{}}}`, "request.userInfo is missing"},
		{"no username", `{"request":{"operation":"CREATE",` + pod + `,"userInfo":{"groups":["a"]},"object":{}}}`, "request.userInfo.username is missing or empty"},
		{"empty username", `{"request":{"operation":"UPDATE",` + pod + `,"userInfo":{"username":""},"object":{}}}`, "request.userInfo.username is missing or empty"},
		{"username not a string", `{"request":{"operation":"CREATE",` + pod + `,"userInfo":{"username":7},"object":{}}}`, "request.userInfo.username is missing or empty"},
		{"groups not a list", `{"request":{"operation":"CREATE",` + pod + `,"userInfo":{"username":"a","groups":"g"},"object":{}}}`, "request.userInfo.groups must be a list of strings"},
		{"group not a string", `{"request":{"operation":"CREATE",` + pod + `,"userInfo":{"username":"a","groups":[1]},"object":{}}}`, "request.userInfo.groups must be a list of strings"},
		{"no object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `}}`, "request.object is missing or not an object"},
		{"null object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":null}}`, "request.object is missing or not an object"},
		{"object not an object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":[]}}`, "request.object is missing or not an object"},
		{"metadata not an object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":"x"}}}`, "request.object.metadata must be an object"},
		{"annotations not an object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":{"annotations":[]}}}}`, "request.object.metadata.annotations must be an object of strings"},
		{"annotation not a string", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":{"annotations":{"yunikorn.apache.org/user.info":{"user":"a"}}}}}}`, `request.object.metadata.annotations["yunikorn.apache.org/user.info"] must be a string`},
		{"labels not an object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":{"labels":"x"}}}}`, "request.object.metadata.labels must be an object of strings"},
		{"legacy label not a string", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":{"labels":{"yunikorn.apache.org/username":1}}}}}`, `request.object.metadata.labels["yunikorn.apache.org/username"] must be a string`},
		{"duplicate annotation", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"a\"}","yunikorn.apache.org/user\u002einfo":"{\"user\":\"b\"}"}}}}}`, `["yunikorn.apache.org/user.info"] occurs more than once`},
		{"duplicate metadata", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{"metadata":{},"metadata":{}}}}`, `request.object.metadata occurs more than once`},
		{"workload without template", `{"request":{"operation":"CREATE",` + deploy + `,` + alice + `,"object":{"spec":{}}}}`, "request.object.spec.template is missing or not an object: a Deployment needs a pod template"},
		{"workload without spec", `{"request":{"operation":"CREATE",` + deploy + `,` + alice + `,"object":{}}}`, "request.object.spec is missing or not an object"},
		{"template not an object", `{"request":{"operation":"CREATE",` + deploy + `,` + alice + `,"object":{"spec":{"template":null}}}}`, "request.object.spec.template is missing or not an object"},
		{"cronjob without jobTemplate", `{"request":{"operation":"CREATE","kind":{"group":"batch","kind":"CronJob"},` + alice + `,"object":{"spec":{"template":{}}}}}`, "request.object.spec.jobTemplate is missing or not an object: a CronJob needs a pod template"},
		{"update without oldObject", `{"request":{"operation":"UPDATE",` + pod + `,` + alice + `,"object":{}}}`, "request.oldObject is missing: an UPDATE needs the old object"},
		{"update with null oldObject", `{"request":{"operation":"UPDATE",` + deploy + `,` + alice + `,"object":{"spec":{"template":{}}},"oldObject":null}}`, "request.oldObject is missing"},
		{"old template missing", `{"request":{"operation":"UPDATE",` + deploy + `,` + alice + `,"object":{"spec":{"template":{}}},"oldObject":{"spec":{}}}}`, "request.oldObject.spec.template is missing"},
		{"invalid settings", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{}},"settings":{"bypassAuth":"yes"}}`, "the policy settings are not valid: bypassAuth: must be true or false"},
		{"settings not an object", `{"request":{"operation":"CREATE",` + pod + `,` + alice + `,"object":{}},"settings":[]}`, "the policy settings are not valid: settings must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := evaluateRaw(t, tc.payload)
			expectRejected(t, resp, tc.want)
		})
	}
}

// A member the decision reads that occurs twice is bad input: encoding/json takes the last copy, gjson the
// first, so whichever the policy read, another reader may see the other.
func TestBadInput_DuplicateMembersAre400(t *testing.T) {
	const pod = `"kind":{"group":"","kind":"Pod"}`
	const bob = `"userInfo":{"username":"bob","groups":["qa"]}`
	const obj = `"object":{"metadata":{"name":"p"}}`
	const create = `"operation":"CREATE"`
	for _, tc := range []struct{ name, payload, want string }{
		{"request", `{"request":{` + create + `,` + pod + `,` + bob + `,` + obj + `},"request":{"operation":"DELETE"}}`, "the validate payload's request occurs more than once"},
		{"settings", `{"request":{` + create + `,` + pod + `,` + bob + `,` + obj + `},"settings":{},"settings":{"onUntrustedAnnotation":"reject"}}`, "the validate payload's settings occurs more than once"},
		{"operation", `{"request":{` + create + `,"operation":"DELETE",` + pod + `,` + bob + `,` + obj + `}}`, "request.operation occurs more than once"},
		{"operation, escaped", `{"request":{"operation":"DELETE","oper\u0061tion":"CREATE",` + pod + `}}`, "request.operation occurs more than once"},
		{"kind", `{"request":{` + create + `,` + pod + `,"kind":{"group":"","kind":"ConfigMap"},` + bob + `,` + obj + `}}`, "request.kind occurs more than once"},
		{"kind.kind", `{"request":{` + create + `,"kind":{"group":"","kind":"ConfigMap","kind":"Pod"},` + bob + `,` + obj + `}}`, "request.kind.kind occurs more than once"},
		{"kind.group", `{"request":{` + create + `,"kind":{"group":"example.com","group":"batch","kind":"Job"},` + bob + `,` + obj + `}}`, "request.kind.group occurs more than once"},
		{"subResource", `{"request":{` + create + `,` + pod + `,"subResource":"","subResource":"status",` + bob + `,` + obj + `}}`, "request.subResource occurs more than once"},
		{"userInfo", `{"request":{` + create + `,` + pod + `,` + bob + `,"userInfo":{"username":"alice"},` + obj + `}}`, "request.userInfo occurs more than once"},
		{"username", `{"request":{` + create + `,` + pod + `,"userInfo":{"username":"bob","username":"alice"},` + obj + `}}`, "request.userInfo.username occurs more than once"},
		{"groups", `{"request":{` + create + `,` + pod + `,"userInfo":{"username":"bob","groups":["qa"],"groups":["devops"]},` + obj + `}}`, "request.userInfo.groups occurs more than once"},
		{"object", `{"request":{` + create + `,` + pod + `,` + bob + `,` + obj + `,"object":{}}}`, "request.object occurs more than once"},
		{"oldObject", `{"request":{"operation":"UPDATE",` + pod + `,` + bob + `,` + obj + `,"oldObject":{},"oldObject":{}}}`, "request.oldObject occurs more than once"},
		{"object of a Binding", `{"request":{` + create + `,"kind":{"group":"","kind":"Binding"},"object":{},"object":{}}}`, "request.object occurs more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := evaluateRaw(t, tc.payload)
			expectRejected(t, resp, tc.want)
		})
	}
	// Members the decision does not read may repeat; DELETE reads nothing but the operation.
	for _, payload := range []string{
		`{"request":{` + create + `,` + pod + `,` + bob + `,` + obj + `,"uid":"a","uid":"b","name":"x","name":"y"},"other":1,"other":2}`,
		`{"request":{"operation":"DELETE",` + pod + `,` + pod + `}}`,
	} {
		resp, _ := evaluateRaw(t, payload)
		if !resp.Accepted {
			t.Errorf("%s: %+v", payload, resp)
		}
	}
}

func TestBadInput_MissingSettingsMeanDefaults(t *testing.T) {
	payload := `{"request":{"operation":"CREATE","kind":{"group":"","kind":"Pod"},"userInfo":{"username":"alice"},"object":{}}}`
	resp, _ := evaluateRaw(t, payload)
	if string(resp.MutatedObject) != `{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\"}"}}}` {
		t.Fatalf("got %+v", resp)
	}
}

func TestResponse_IdenticalInputGivesIdenticalBytes(t *testing.T) {
	logger := NewLogger(&bytes.Buffer{})
	for _, file := range testdataFiles(t, "requests") {
		payload := []byte(`{"request":` + string(file.data) + `,"settings":{"onUntrustedAnnotation":"replace"}}`)
		first := validate(payload, logger)
		for range 3 {
			if again := validate(payload, logger); !bytes.Equal(first, again) {
				t.Fatalf("%s: output differs between runs", file.name)
			}
		}
		if !strings.HasPrefix(string(first), `{"accepted":`) {
			t.Fatalf("%s: %s", file.name, first)
		}
	}
}

func TestResponse_Shape(t *testing.T) {
	logger := NewLogger(&bytes.Buffer{})
	if got := string(validate([]byte(`{"request":{"operation":"DELETE"}}`), logger)); got != `{"accepted":true}` {
		t.Fatalf("accept: %s", got)
	}
	got := string(validate([]byte(`{"request":{}}`), logger))
	if got != `{"accepted":false,"message":"request.operation is missing","code":400}` {
		t.Fatalf("reject: %s", got)
	}
}

// Every fault a walk reports is worded: an empty text would read as no problem.
func TestBadInput_EveryWalkFaultIsWorded(t *testing.T) {
	for f := walk.DuplicateKey; f <= walk.NotIndexed; f++ {
		if text := walkProblemText(walk.Problem{Fault: f, At: "request.object.spec", Key: "k"}, "Deployment"); text == "" {
			t.Errorf("fault %d has no text", f)
		}
	}
}
