package kwctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
)

// fakeGuest answers validate_settings and validate with canned bytes and records the payloads.
type fakeGuest struct {
	settingsAnswer string
	validateAnswer string
	validateErr    error
	payloads       map[string]string
}

func (f *fakeGuest) Call(_ context.Context, op string, payload []byte) ([]byte, error) {
	if f.payloads == nil {
		f.payloads = map[string]string{}
	}
	f.payloads[op] = string(payload)
	switch op {
	case "validate_settings":
		if f.settingsAnswer == "" {
			return []byte(`{"valid":true}`), nil
		}
		return []byte(f.settingsAnswer), nil
	case "validate":
		return []byte(f.validateAnswer), f.validateErr
	}
	return nil, &wapchost.GuestError{Operation: op, Message: "unknown"}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// object returns request.object of a fixture exactly as written there.
func object(t *testing.T, name string) string {
	t.Helper()
	req, err := ParseRequest(readFixture(t, name), PayloadRaw)
	if err != nil {
		t.Fatal(err)
	}
	return string(req.Object)
}

func run(t *testing.T, fixture string, guest *fakeGuest) string {
	t.Helper()
	resp, err := Run(context.Background(), guest, readFixture(t, fixture), json.RawMessage(`{}`), PayloadRaw)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return string(resp.JSON())
}

const deployUID = `"uid":"b1e0c2d4-0000-4000-8000-000000000001"`

func TestResponse_Shapes(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
	}{
		{"allowed: absent fields omitted, annotations and warnings null",
			`{"accepted":true}`,
			`{` + deployUID + `,"allowed":true,"auditAnnotations":null,"warnings":null}`},
		{"rejected: message and code in status, < and > not escaped",
			`{"accepted":false,"message":"no <way>","code":403}`,
			`{` + deployUID + `,"allowed":false,"status":{"message":"no <way>","code":403},"auditAnnotations":null,"warnings":null}`},
		{"rejected without code: status has the message only",
			`{"accepted":false,"message":"no"}`,
			`{` + deployUID + `,"allowed":false,"status":{"message":"no"},"auditAnnotations":null,"warnings":null}`},
		{"accepted with a message keeps the status, as policy-evaluator does",
			`{"accepted":true,"message":"fine"}`,
			`{` + deployUID + `,"allowed":true,"status":{"message":"fine"},"auditAnnotations":null,"warnings":null}`},
		{"warnings and audit annotations pass through, keys sorted",
			`{"accepted":true,"warnings":["w1","w2"],"audit_annotations":{"z":"1","a":"2"}}`,
			`{` + deployUID + `,"allowed":true,"auditAnnotations":{"a":"2","z":"1"},"warnings":["w1","w2"]}`},
		{"empty warnings stay an empty list",
			`{"accepted":true,"warnings":[]}`,
			`{` + deployUID + `,"allowed":true,"auditAnnotations":null,"warnings":[]}`},
		{"null mutated_object is no mutation",
			`{"accepted":true,"mutated_object":null}`,
			`{` + deployUID + `,"allowed":true,"auditAnnotations":null,"warnings":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, "deployment-create.json", &fakeGuest{validateAnswer: tc.answer})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponse_MutationIsABase64JSONPatch(t *testing.T) {
	obj := object(t, "deployment-create.json")
	mutated := strings.Replace(obj, `"annotations": {"team": "a"}`,
		`"annotations": {"team": "a", "yunikorn.apache.org/user.info": "{\"user\":\"alice\"}"}`, 1)
	answer := `{"accepted":true,"mutated_object":` + mutated + `}`
	got := run(t, "deployment-create.json", &fakeGuest{validateAnswer: answer})

	wantPatch := `[{"op":"add","path":"/metadata/annotations/yunikorn.apache.org~1user.info","value":"{\"user\":\"alice\"}"}]`
	want := `{` + deployUID + `,"allowed":true,"patchType":"JSONPatch","patch":"` +
		base64.StdEncoding.EncodeToString([]byte(wantPatch)) + `","auditAnnotations":null,"warnings":null}`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestPatch_FalsyFieldsOfTheObjectSurvive(t *testing.T) {
	// replicas: 0, allowPrivilegeEscalation: false and runAsUser: 0 are what a typed round trip
	// drops; a guest that splices raw JSON keeps them, and the patch must then only add.
	obj := object(t, "deployment-create.json")
	for _, keep := range []string{`"replicas": 0`, `"allowPrivilegeEscalation": false`, `"runAsUser": 0`} {
		if !strings.Contains(obj, keep) {
			t.Fatalf("fixture lost %s", keep)
		}
	}
	mutated := strings.Replace(obj, `"annotations": {"team": "a"}`,
		`"annotations":{"team":"a","yunikorn.apache.org/user.info":"x"}`, 1)
	resp, err := Run(context.Background(), &fakeGuest{validateAnswer: `{"accepted":true,"mutated_object":` + mutated + `}`},
		readFixture(t, "deployment-create.json"), json.RawMessage(`{}`), PayloadRaw)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := resp.PatchOps()
	if err != nil {
		t.Fatal(err)
	}
	want := []PatchOp{{Op: "add", Path: "/metadata/annotations/yunikorn.apache.org~1user.info", Value: json.RawMessage(`"x"`)}}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}

func TestPatch_DroppedFieldsBecomeRemoveOps(t *testing.T) {
	obj := object(t, "deployment-create.json")
	mutated := strings.Replace(obj, `"replicas": 0,`, ``, 1)
	resp, err := Run(context.Background(), &fakeGuest{validateAnswer: `{"accepted":true,"mutated_object":` + mutated + `}`},
		readFixture(t, "deployment-create.json"), json.RawMessage(`{}`), PayloadRaw)
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := resp.PatchOps()
	if want := []PatchOp{{Op: "remove", Path: "/spec/replicas"}}; !cmp.Equal(want, ops) {
		t.Errorf("patch = %+v, want %+v", ops, want)
	}
}

func TestPatch_UnchangedMutatedObjectSendsNoPatch(t *testing.T) {
	// Reformatted but equal: the diff is semantic.
	var v any
	_ = json.Unmarshal([]byte(object(t, "deployment-create.json")), &v)
	same, _ := json.Marshal(v)
	got := run(t, "deployment-create.json", &fakeGuest{validateAnswer: `{"accepted":true,"mutated_object":` + string(same) + `}`})
	if want := `{` + deployUID + `,"allowed":true,"auditAnnotations":null,"warnings":null}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestPatch_LargeIntegersAreNotRounded(t *testing.T) {
	p, err := jsonPatch(json.RawMessage(`{"n":9007199254740993}`), json.RawMessage(`{"n":9007199254740993,"m":1}`))
	if err != nil || string(p) != `[{"op":"add","path":"/m","value":1}]` {
		t.Errorf("patch = %s, %v", p, err)
	}
}

func TestMutation_OfADeleteIsRefused(t *testing.T) {
	got := run(t, "pod-delete.json", &fakeGuest{validateAnswer: `{"accepted":true,"mutated_object":{"kind":"Pod"},"warnings":["w"]}`})
	want := `{"uid":"b1e0c2d4-0000-4000-8000-000000000002","allowed":false,"status":{"message":"` +
		deleteMutationMessage + `"},"auditAnnotations":null,"warnings":null}`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestSettings_RefusedSettingsStopTheRun(t *testing.T) {
	guest := &fakeGuest{settingsAnswer: `{"valid":false,"message":"trustedUsers must be a list"}`}
	_, err := Run(context.Background(), guest, readFixture(t, "deployment-create.json"), json.RawMessage(`{"trustedUsers":1}`), PayloadRaw)
	if err == nil || err.Error() != "Provided settings are not valid: trustedUsers must be a list" {
		t.Fatalf("error = %v", err)
	}
	var se *SettingsError
	if !errors.As(err, &se) {
		t.Errorf("error is %T, want *SettingsError", err)
	}
	if guest.payloads["validate_settings"] != `{"trustedUsers":1}` {
		t.Errorf("validate_settings payload = %q", guest.payloads["validate_settings"])
	}
	if _, called := guest.payloads["validate"]; called {
		t.Error("validate was called despite refused settings")
	}
}

func TestSettings_FailingOrGarbledAnswersAreRefusals(t *testing.T) {
	for answer, want := range map[string]string{
		`{"valid":false}`: "Provided settings are not valid: ",
		`{"message":"x"}`: "Provided settings are not valid: error: cannot decode the settings validation response",
		`not json`:        "Provided settings are not valid: error: cannot decode the settings validation response",
	} {
		err := ValidateSettings(context.Background(), &fakeGuest{settingsAnswer: answer}, json.RawMessage(`{}`))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("answer %s: error = %v, want prefix %q", answer, err, want)
		}
	}
}

func TestValidate_GuestFailuresAre500s(t *testing.T) {
	for _, tc := range []struct {
		name   string
		guest  *fakeGuest
		prefix string
	}{
		{"guest error", &fakeGuest{validateErr: &wapchost.GuestError{Operation: "validate", Message: "boom"}},
			"internal server error: Guest call failure: boom"},
		{"trap", &fakeGuest{validateErr: &wapchost.TrapError{Operation: "validate", Err: errors.New("wasm error: unreachable")}},
			"internal server error: Guest call failure: wasm error: unreachable"},
		{"answer without accepted", &fakeGuest{validateAnswer: `{"message":"x"}`},
			"internal server error: cannot decode the policy's validation response"},
		{"code out of range", &fakeGuest{validateAnswer: `{"accepted":false,"code":70000}`},
			"internal server error: cannot decode the policy's validation response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := ParseRequest(readFixture(t, "deployment-create.json"), PayloadRaw)
			resp, err := Validate(context.Background(), tc.guest, req, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Allowed || resp.Status == nil || resp.Status.Code == nil || *resp.Status.Code != 500 ||
				resp.Status.Message == nil || !strings.HasPrefix(*resp.Status.Message, tc.prefix) {
				t.Errorf("response = %s, want a 500 starting %q", resp.JSON(), tc.prefix)
			}
		})
	}
}

func TestRequest_ReviewAndBareRequestSendTheSamePayload(t *testing.T) {
	bare := bytes.TrimSpace(readFixture(t, "deployment-create.json"))
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + string(bare) + `}`)
	reviewWithoutKind := []byte(`{"request":` + string(bare) + `}`)
	want := `{"request":` + string(bare) + `,"settings":{"a":1}}`
	for name, input := range map[string][]byte{"bare": bare, "review": review, "review without kind": reviewWithoutKind} {
		guest := &fakeGuest{validateAnswer: `{"accepted":true}`}
		if _, err := Run(context.Background(), guest, input, json.RawMessage(`{"a":1}`), PayloadRaw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := guest.payloads["validate"]; got != want {
			t.Errorf("%s: validate payload differs from the request as given:\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestRequest_ParsedFields(t *testing.T) {
	req, err := ParseRequest(readFixture(t, "pod-delete.json"), PayloadRaw)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{req.UID, req.Operation, req.Kind, req.Username, string(req.Object)}
	want := []string{"b1e0c2d4-0000-4000-8000-000000000002", "DELETE", "Pod", "bob", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestRequest_RefusesWhatKwctlRefuses(t *testing.T) {
	for input, want := range map[string]string{
		`[1]`:                              "the request is not a JSON object",
		`{"kind":"AdmissionReview"}`:       "invalid AdmissionReview object",
		`{"uid":"u","operation":"CREATE"}`: "cannot build AdmissionRequest object from given input: missing field `kind`",
		`{"uid":"u","kind":{"kind":"Pod"},"resource":{},"operation":"CREATE"}`: "missing field `userInfo`",
	} {
		if _, err := ParseRequest([]byte(input), PayloadRaw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error = %v, want %q", input, err, want)
		}
	}
}

func TestSettingsParsing(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
		yaml              bool
	}{
		{"empty is none", ``, `{}`, false},
		{"null is none", `null`, `{}`, false},
		{"object is compacted, order and numbers kept", "{ \"b\": 1,\n \"a\": 12345678901234567890 }", `{"b":1,"a":12345678901234567890}`, false},
		{"YAML file", "trustedUsers:\n  - system:serviceaccount:kube-system:x\nstrict: true\n", `{"strict":true,"trustedUsers":["system:serviceaccount:kube-system:x"]}`, true},
		{"empty YAML file is none", "# nothing\n", `{}`, true},
		{"JSON file", `{"z": 1, "a": 2}`, `{"z":1,"a":2}`, true},
	} {
		parse := SettingsFromJSON
		if tc.yaml {
			parse = SettingsFromFile
		}
		got, err := parse([]byte(tc.input))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{`} {
		if _, err := SettingsFromJSON([]byte(bad)); err == nil {
			t.Errorf("SettingsFromJSON(%s) accepted", bad)
		}
	}
	if _, err := SettingsFromFile([]byte("- a\n- b\n")); err == nil {
		t.Error("a YAML list was accepted as settings")
	}
}

func TestResponse_IdenticalInputGivesIdenticalBytes(t *testing.T) {
	obj := object(t, "deployment-create.json")
	mutated := strings.NewReplacer(`"team": "a"`, `"team":"b","x":"1","y":"2"`, `"replicas": 0`, `"replicas": 3`).Replace(obj)
	answer := `{"accepted":true,"mutated_object":` + mutated + `,"audit_annotations":{"k1":"v","k2":"v","k3":"v"}}`
	first := run(t, "deployment-create.json", &fakeGuest{validateAnswer: answer})
	for i := range 20 {
		if again := run(t, "deployment-create.json", &fakeGuest{validateAnswer: answer}); again != first {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, again)
		}
	}
}
