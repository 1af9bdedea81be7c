package policy

import (
	"strings"
	"testing"
)

// Rule 10: the API server copies a Binding's metadata.annotations onto the still unscheduled pod, with no
// Pod admission, so a Binding must not carry the annotation.

func TestRule10_AnnotationIsRefusedWhoeverSendsIt(t *testing.T) {
	for _, name := range []string{"binding-create-forged", "bindings-create-forged"} {
		for _, user := range []map[string]any{bob, kcm, airflow, rsc} {
			for _, settings := range []string{"", rejectSettings, externalSettings, noControllersSettings} {
				req := fixture(t, name)
				req["userInfo"] = user
				resp, logs := evaluateReq(t, req, settings)
				expectRejected(t, resp, bindingRefusal)
				if !strings.Contains(logs, "rule 10") {
					t.Fatalf("a refused Binding is logged: %s", logs)
				}
			}
		}
	}
}

func TestRule10_AnyValueOrEscapedKeyIsRefused(t *testing.T) {
	for _, annotations := range []string{
		`{"yunikorn.apache.org/user.info":""}`,
		`{"yunikorn.apache.org/user.info":"{\"user\":\"bob\",\"groups\":[\"qa\",\"system:authenticated\"]}"}`, // even the sender's own
		`{"yunikorn.apache.org/user\u002einfo":"x"}`,
		`{"a":"b","yunikorn.apache.org/user.info":null}`,
		`{"yunikorn.apache.org/user.info":"x","yunikorn.apache.org/user.info":"y"}`,
	} {
		payload := `{"request":{"operation":"CREATE","kind":{"group":"","version":"v1","kind":"Binding"},` +
			`"userInfo":{"username":"bob"},"object":{"metadata":{"name":"p","annotations":` + annotations + `}}}}`
		resp, _ := evaluateRaw(t, payload)
		expectRejected(t, resp, bindingRefusal)
	}
}

func TestRule10_SchedulersBindingIsAcceptedUnchanged(t *testing.T) {
	resp, _ := evaluateReq(t, fixture(t, "binding-create-scheduler"), "")
	expectAccepted(t, resp)
	for _, object := range []string{`{}`, `{"metadata":null}`, `{"metadata":{"name":"p"}}`, `{"metadata":{"annotations":null}}`,
		`{"metadata":{"annotations":{}}}`, `{"metadata":{"annotations":{"scheduler.example/zone":"a","yunikorn.apache.org/username":"alice"}}}`,
		`{"metadata":{},"target":{"kind":"Node","name":"n"}}`} {
		resp, _ := evaluateRaw(t, `{"request":{"operation":"CREATE","kind":{"group":"","kind":"Binding"},"userInfo":{"username":"s"},"object":`+object+`}}`)
		expectAccepted(t, resp)
	}
}

func TestRule10_NeedsNoUsernameAndNoSettings(t *testing.T) {
	req := fixture(t, "binding-create-scheduler")
	delete(req, "userInfo")
	resp, _ := evaluateReq(t, req, `{"bypassAuth":"not read"}`)
	expectAccepted(t, resp)
	forged := fixture(t, "binding-create-forged")
	forged["userInfo"] = map[string]any{"username": ""}
	resp, _ = evaluateReq(t, forged, "")
	expectRejected(t, resp, bindingRefusal)
}

func TestRule10_UnreadableMetadataIsBadInput(t *testing.T) {
	for _, tc := range []struct{ object, want string }{
		{`null`, "request.object is missing or not an object"},
		{`[]`, "request.object is missing or not an object"},
		{`{"metadata":"x"}`, "request.object.metadata must be an object"},
		{`{"metadata":{"annotations":[]}}`, "request.object.metadata.annotations must be an object of strings"},
		{`{"metadata":{"annotations":"yunikorn.apache.org/user.info"}}`, "request.object.metadata.annotations must be an object of strings"},
		{`{"metadata":{},"metadata":{}}`, `request.object.metadata occurs more than once`},
		{`{"metadata":{"annotations":{},"annotations":{}}}`, `request.object.metadata.annotations occurs more than once`},
	} {
		resp, _ := evaluateRaw(t, `{"request":{"operation":"CREATE","kind":{"group":"","kind":"Binding"},"object":`+tc.object+`}}`)
		expectRejected(t, resp, tc.want)
	}
	resp, _ := evaluateRaw(t, `{"request":{"operation":"CREATE","kind":{"group":"","kind":"Binding"}}}`)
	expectRejected(t, resp, "request.object is missing or not an object")
}

func TestRule10_LabelsAreNotConcerned(t *testing.T) {
	// A Binding's labels are not copied onto the pod: the legacy label plays no part.
	resp, _ := evaluateRaw(t, `{"request":{"operation":"CREATE","kind":{"group":"","kind":"Binding"},"object":`+
		`{"metadata":{"labels":{"yunikorn.apache.org/username":"alice"}}}}}`)
	expectAccepted(t, resp)
}
