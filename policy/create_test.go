package policy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// stampedKinds maps each kind the policy stamps (every kind of the table but the Binding) to a fixture of
// alice creating it, testdata/requests/<kind>-create-alice.json.
var stampedKinds = func() map[string]string {
	m := map[string]string{}
	for _, k := range Kinds() {
		if k.Handling != BindingHandling {
			m[k.Kind] = strings.ToLower(k.Kind) + "-create-alice"
		}
	}
	return m
}()

var (
	bob = map[string]any{"username": "bob", "groups": []any{"qa", "system:authenticated"}}
	rsc = map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller",
		"groups": []any{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	kcm     = map[string]any{"username": "system:kube-controller-manager", "groups": []any{"system:authenticated"}}
	airflow = map[string]any{"username": "airflow", "groups": []any{"workflow-engines", "system:authenticated"}}
	spark   = map[string]any{"username": "spark-gateway", "groups": []any{"spark-submitters", "system:authenticated"}}
)

const (
	externalSettings      = `{"bypassAuth":true,"externalUsers":["^airflow$"],"externalGroups":["^spark-submitters$"]}`
	rejectSettings        = `{"onUntrustedAnnotation":"reject"}`
	noControllersSettings = `{"bypassControllers":false}`
)

// as returns the fixture with another requester and, unless value is nil, the annotation set to value.
func as(t *testing.T, name, kind string, user map[string]any, value any) map[string]any {
	t.Helper()
	req := fixture(t, name)
	req["userInfo"] = user
	if value != nil {
		setEntry(object(req, "object"), kind, "annotations", AnnotationKey, value)
	}
	return req
}

func TestRule3_StampsTheRequesterOnEveryKind(t *testing.T) {
	for kind, name := range stampedKinds {
		t.Run(kind, func(t *testing.T) {
			req := fixture(t, name)
			resp, logs := evaluateReq(t, req, "")
			expectOnly(t, req, resp, kind, "annotations", AnnotationKey, aliceValue)
			if len(resp.Warnings) != 0 {
				t.Fatalf("a plain stamp carries no warning: %q", resp.Warnings)
			}
			if logs != "" {
				t.Fatalf("a plain stamp logs nothing by default: %s", logs)
			}
			if _, logs = evaluateReq(t, req, `{"logDecisions":true}`); !strings.Contains(logs, `"level":"debug","message":"stamped the requester (rule 3)"`) {
				t.Fatalf("with logDecisions, a plain stamp logs its rule at debug: %s", logs)
			}
		})
	}
}

func TestRule3_WorkloadOwnMetadataIsNotTouched(t *testing.T) {
	req := fixture(t, "deployment-create-alice")
	resp, _ := evaluateReq(t, req, "")
	// expectOnly compares the whole object: the Deployment's own annotations stay {"team":"a"}.
	expectOnly(t, req, resp, "Deployment", "annotations", AnnotationKey, aliceValue)
}

func TestRule3_StampKeepsEveryOtherByte(t *testing.T) {
	// The splice inserts one member; removing it must give back the original text exactly, including
	// replicas: 0, allowPrivilegeEscalation: false, runAsUser: 0, hostUsers: false, {} and unknown fields.
	for kind, name := range stampedKinds {
		t.Run(kind, func(t *testing.T) {
			req := fixture(t, name)
			original := mustJSON(t, object(req, "object"))
			for _, must := range []string{`"allowPrivilegeEscalation":false`, `"runAsUser":0`, `"nodeSelector":{}`, `"x-unknown-field"`} {
				if !strings.Contains(original, must) {
					t.Fatalf("fixture lacks %s", must)
				}
			}
			resp, _ := evaluateReq(t, req, "")
			// The fixtures' templates have metadata without annotations: the splice adds the map.
			inserted := `"annotations":{"` + AnnotationKey + `":` + rawjson.Quote(aliceValue) + `},`
			got := string(resp.MutatedObject)
			if strings.Count(got, inserted) != 1 || strings.Replace(got, inserted, "", 1) != original {
				t.Fatalf("mutated object differs beyond the annotation:\n got %.300s...\nwant %.300s...", got, original)
			}
		})
	}
}

func TestRule3_CreatesMissingMetadataAndAnnotations(t *testing.T) {
	const stamped = `"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"devops\",\"system:authenticated\"]}"}}`
	for _, tc := range []struct{ name, object, want string }{
		{"no metadata", `{"kind":"Pod","spec":{}}`, `{` + stamped + `,"kind":"Pod","spec":{}}`},
		{"null metadata", `{"kind":"Pod","metadata":null}`, `{"kind":"Pod",` + stamped + `}`},
		{"empty object", `{}`, `{` + stamped + `}`},
		{"no annotations", `{"metadata":{"name":"p"}}`,
			`{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"devops\",\"system:authenticated\"]}"},"name":"p"}}`},
		{"null annotations", `{"metadata":{"annotations":null}}`,
			`{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"devops\",\"system:authenticated\"]}"}}}`},
		{"empty annotations", `{"metadata":{"annotations":{ }}}`,
			`{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"devops\",\"system:authenticated\"]}" }}}`},
		{"other annotations", `{"metadata":{"annotations":{"a":"b"}}}`,
			`{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"devops\",\"system:authenticated\"]}","a":"b"}}}`},
		{"whitespace kept", "{ \"metadata\" : { \"annotations\" : { \"a\" : \"b\" } } }",
			"{ \"metadata\" : { \"annotations\" : {\"yunikorn.apache.org/user.info\":\"{\\\"user\\\":\\\"alice\\\",\\\"groups\\\":[\\\"devops\\\",\\\"system:authenticated\\\"]}\", \"a\" : \"b\" } } }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"request":{"operation":"CREATE","kind":{"group":"","version":"v1","kind":"Pod"},` +
				`"userInfo":{"username":"alice","groups":["devops","system:authenticated"]},"object":` + tc.object + `},"settings":{}}`
			resp, _ := evaluateRaw(t, payload)
			if string(resp.MutatedObject) != tc.want {
				t.Fatalf("got  %s\nwant %s", resp.MutatedObject, tc.want)
			}
		})
	}
}

func TestRule3_TemplateMetadataIsCreatedWhenMissing(t *testing.T) {
	req := fixture(t, "cronjob-create-alice")
	tmpl := path(req, "object", "spec", "jobTemplate", "spec", "template").(map[string]any)
	delete(tmpl, "metadata")
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "CronJob", "annotations", AnnotationKey, aliceValue)
}

func TestRule1_EscapedKeyIsTheSameKey(t *testing.T) {
	// `user\u002einfo` is the annotation: a forged value written with escapes is replaced, not duplicated.
	payload := `{"request":{"operation":"CREATE","kind":{"group":"","kind":"Pod"},"userInfo":{"username":"bob"},` +
		`"object":{"metadata":{"annotations":{"yunikorn.apache.org/user\u002einfo":"{\"user\":\"alice\"}"}}}},"settings":{}}`
	resp, _ := evaluateRaw(t, payload)
	if string(resp.MutatedObject) != `{"metadata":{"annotations":{"yunikorn.apache.org/user\u002einfo":"{\"user\":\"bob\"}"}}}` {
		t.Fatalf("got %s", resp.MutatedObject)
	}
	expectWarning(t, resp, replacedWarning("metadata"))
}

func TestRule3_ControllerWithoutAnnotationGetsItsOwnIdentity(t *testing.T) {
	req := fixture(t, "pod-create-job-controller-no-annotation")
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey,
		`{"user":"system:serviceaccount:kube-system:job-controller","groups":["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]}`)
}

func TestRule3_StampsWhenBypassAuthIsOn(t *testing.T) {
	// Upstream adds nothing when bypassAuth is on; the design (and docs/rules.md rule 3) stamps.
	req := as(t, "pod-create-alice", "Pod", airflow, nil)
	resp, _ := evaluateReq(t, req, externalSettings)
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, `{"user":"airflow","groups":["workflow-engines","system:authenticated"]}`)
}

func TestRule1_UntrustedAnnotationIsReplaced(t *testing.T) {
	for kind, name := range stampedKinds {
		t.Run(kind, func(t *testing.T) {
			req := as(t, name, kind, bob, aliceValue)
			resp, logs := evaluateReq(t, req, "")
			expectOnly(t, req, resp, kind, "annotations", AnnotationKey, bobValue)
			expectWarning(t, resp, replacedWarning(strings.Join(templatePath(kind), ".")))
			if !strings.Contains(logs, `"level":"warning"`) {
				t.Fatalf("refused impersonation logs at warn: %s", logs)
			}
		})
	}
}

func TestRule1_UntrustedAnnotationIsRejected(t *testing.T) {
	for kind, name := range stampedKinds {
		t.Run(kind, func(t *testing.T) {
			resp, _ := evaluateReq(t, as(t, name, kind, bob, aliceValue), rejectSettings)
			expectRejected(t, resp, "user bob with groups [qa,system:authenticated] is not allowed to set the yunikorn.apache.org/user.info annotation")
		})
	}
}

// Rule 1: an untrusted requester's value that is exactly its own stamp is accepted unchanged, in both modes.
func TestRule1_UntrustedRequestersOwnStampIsAcceptedUnchangedInBothModes(t *testing.T) {
	// kubectl create job --from=cronjob copies the owner's stamp: nothing is forged, nothing changes, in
	// either mode, on every kind.
	for kind, name := range stampedKinds {
		for _, settings := range []string{"", `{"onUntrustedAnnotation":"replace"}`, rejectSettings, noControllersSettings} {
			resp, _ := evaluateReq(t, as(t, name, kind, bob, bobValue), settings)
			expectAccepted(t, resp)
			if len(resp.Warnings) != 0 {
				t.Fatalf("%s %s: nothing was replaced: %q", kind, settings, resp.Warnings)
			}
		}
	}
	// The same identity written differently is not the stamp: it is replaced.
	req := as(t, "pod-create-alice", "Pod", bob, `{"groups":["qa","system:authenticated"],"user":"bob"}`)
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, bobValue)
}

func TestRule1_EvenAnEmptyUntrustedValueIsReplaced(t *testing.T) {
	req := as(t, "pod-create-alice", "Pod", bob, "")
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, bobValue)
}

func TestRule1_TrustedControllerValueIsKept(t *testing.T) {
	for _, name := range []string{"pod-create-replicaset-controller", "pod-create-kube-controller-manager"} {
		t.Run(name, func(t *testing.T) {
			resp, _ := evaluateReq(t, fixture(t, name), "")
			expectAccepted(t, resp)
			resp, _ = evaluateReq(t, fixture(t, name), rejectSettings)
			expectAccepted(t, resp)
		})
	}
}

func TestRule1_TrustedExternalValueIsKept(t *testing.T) {
	for _, u := range []namedUser{{"by user", airflow}, {"by group", spark}} {
		user := u.user
		t.Run(u.name, func(t *testing.T) {
			for kind, name := range stampedKinds {
				resp, _ := evaluateReq(t, as(t, name, kind, user, aliceValue), externalSettings)
				if kind == "Pod" || !strings.HasPrefix(user["username"].(string), "system:") {
					expectAccepted(t, resp)
				}
			}
		})
	}
}

func TestRule1_ExternalListsNeedBypassAuth(t *testing.T) {
	// [design] BYPASS_AUTH gates the external lists; upstream applies them always.
	req := as(t, "pod-create-alice", "Pod", airflow, aliceValue)
	resp, _ := evaluateReq(t, req, `{"externalUsers":["^airflow$"]}`)
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, `{"user":"airflow","groups":["workflow-engines","system:authenticated"]}`)
}

func TestRule1_ExternalGroupMatchesAnyOneGroup(t *testing.T) {
	user := map[string]any{"username": "carol", "groups": []any{"devs", "spark-submitters"}}
	resp, _ := evaluateReq(t, as(t, "pod-create-alice", "Pod", user, aliceValue), externalSettings)
	expectAccepted(t, resp)
}

func TestRule1_TrustedInvalidValueIsRejected(t *testing.T) {
	for _, value := range []string{"", "null", "{}", `{"user":""}`, `{"user":"alice","groups":null}`,
		`{"user":"alice","uid":"x"}`, `{"user":"bob","user":"alice"}`, `{"user":"alice"} trailing`, `{"USER":"alice"}`} {
		t.Run(value, func(t *testing.T) {
			resp, _ := evaluateReq(t, as(t, "pod-create-alice", "Pod", rsc, value), "")
			expectRejected(t, resp, "the yunikorn.apache.org/user.info annotation in metadata is not valid: ", `a valid value looks like`)
		})
	}
}

func TestRule1_BypassControllersOffTreatsControllersAsUntrusted(t *testing.T) {
	req := fixture(t, "pod-create-replicaset-controller")
	resp, _ := evaluateReq(t, req, noControllersSettings)
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey,
		`{"user":"system:serviceaccount:kube-system:replicaset-controller","groups":["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]}`)
	expectWarning(t, resp, replacedWarning("metadata"))

	resp, _ = evaluateReq(t, req, `{"bypassControllers":false,"onUntrustedAnnotation":"reject"}`)
	expectRejected(t, resp, "user system:serviceaccount:kube-system:replicaset-controller with groups [system:serviceaccounts,system:serviceaccounts:kube-system,system:authenticated] is not allowed to set")
}

func TestRule1_LookalikeNamespaceIsNotASystemUser(t *testing.T) {
	evil := map[string]any{"username": "system:serviceaccount:kube-system-evil:replicaset-controller", "groups": []any{"system:serviceaccounts"}}
	req := as(t, "pod-create-alice", "Pod", evil, aliceValue)
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, `{"user":"system:serviceaccount:kube-system-evil:replicaset-controller","groups":["system:serviceaccounts"]}`)
}

func TestRule2_LegacyLabelStandsForTrustedSubmitters(t *testing.T) {
	for _, u := range []namedUser{{"trusted external", airflow}, {"trusted controller", rsc}} {
		user := u.user
		t.Run(u.name, func(t *testing.T) {
			req := as(t, "pod-create-legacy-label", "Pod", user, nil)
			resp, logs := evaluateReq(t, req, externalSettings)
			expectAccepted(t, resp)
			expectWarning(t, resp, deprecatedLabelWarning("yunikorn.apache.org/username"))
			if !strings.Contains(logs, `"level":"warning"`) {
				t.Fatalf("the legacy label logs at warn: %s", logs)
			}
		})
	}
}

func TestRule2_LegacyLabelIsIgnoredOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name, settings string
		user           map[string]any
	}{
		{"bypassAuth off", "", airflow},
		{"bypassAuth off, controller", "", rsc},
		{"untrusted requester", externalSettings, bob},
		{"legacy handling off", `{"bypassAuth":true,"externalUsers":"^airflow$","legacyUserLabel":""}`, airflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := as(t, "pod-create-legacy-label", "Pod", tc.user, nil)
			resp, logs := evaluateReq(t, req, tc.settings)
			value := UserInfo{User: tc.user["username"].(string)}
			for _, g := range tc.user["groups"].([]any) {
				value.Groups = append(value.Groups, g.(string))
			}
			expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, value.Encode())
			if tc.settings == "" && !strings.Contains(logs, `"level":"warning"`) {
				t.Fatalf("an ignored legacy label logs at warn: %s", logs)
			}
		})
	}
}

func TestRule2_EmptyLegacyLabelIsNoLabel(t *testing.T) {
	req := as(t, "pod-create-legacy-label", "Pod", airflow, nil)
	setEntry(object(req, "object"), "Pod", "labels", "yunikorn.apache.org/username", "")
	resp, _ := evaluateReq(t, req, externalSettings)
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, `{"user":"airflow","groups":["workflow-engines","system:authenticated"]}`)
}

func TestRule2_CustomLegacyLabel(t *testing.T) {
	req := as(t, "pod-create-alice", "Pod", airflow, nil)
	setEntry(object(req, "object"), "Pod", "labels", "example.com/owner", "alice")
	resp, _ := evaluateReq(t, req, `{"bypassAuth":true,"externalUsers":"^airflow$","legacyUserLabel":"example.com/owner"}`)
	expectAccepted(t, resp)
	expectWarning(t, resp, "the example.com/owner label is deprecated")
}

func TestRule2_AnnotationWinsOverLabel(t *testing.T) {
	req := as(t, "pod-create-legacy-label", "Pod", airflow, aliceValue)
	resp, _ := evaluateReq(t, req, externalSettings)
	expectAccepted(t, resp)
	if len(resp.Warnings) != 0 {
		t.Fatalf("the label plays no part when the annotation is there: %q", resp.Warnings)
	}
}

func TestRule4_WorkloadBySystemUserIsNeverMutated(t *testing.T) {
	for _, tc := range []struct{ name, fixture, settings string }{
		{"ReplicaSet from the deployment controller", "replicaset-create-deployment-controller", ""},
		{"Job from the cronjob controller", "job-create-cronjob-controller", ""},
		{"bypassControllers off", "replicaset-create-deployment-controller", noControllersSettings},
		{"reject mode", "replicaset-create-deployment-controller", `{"bypassControllers":false,"onUntrustedAnnotation":"reject"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := evaluateReq(t, fixture(t, tc.fixture), tc.settings)
			expectAccepted(t, resp)
		})
	}
}

func TestRule4_SystemUserWorkloadWithoutAnnotationIsNotStamped(t *testing.T) {
	for kind, name := range stampedKinds {
		if kind == "Pod" {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			resp, _ := evaluateReq(t, as(t, name, kind, kcm, nil), "")
			expectAccepted(t, resp)
		})
	}
}

func TestRule4_TrustedSystemUserValueIsValidated(t *testing.T) {
	req := as(t, "replicaset-create-deployment-controller", "ReplicaSet", rsc, `{"user":"alice","groups":null}`)
	resp, _ := evaluateReq(t, req, "")
	expectRejected(t, resp, "the yunikorn.apache.org/user.info annotation in spec.template.metadata is not valid")
	// Untrusted system user (bypassControllers off): never rejected for carrying the annotation.
	resp, _ = evaluateReq(t, req, noControllersSettings)
	expectAccepted(t, resp)
}

func TestRule4_DoesNotApplyToPods(t *testing.T) {
	req := as(t, "pod-create-alice", "Pod", kcm, nil)
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, `{"user":"system:kube-controller-manager","groups":["system:authenticated"]}`)
}

// Routine decisions (nothing replaced, restored or refused) log a line naming their rule only when
// logDecisions asks for it; warnings are logged either way (the tests of each rule check them).
func TestLogDecisions_NamesTheRuleOfARoutineDecisionOnlyWhenAsked(t *testing.T) {
	spark := exampleSettings(t, "spark-operator")
	for _, tc := range []struct{ fixture, settings, message string }{
		{"pod-create-alice", `{}`, "stamped the requester (rule 3)"},
		{"pod-create-replicaset-controller", `{}`, "supplied value kept: the requester is trusted (rule 1)"},
		{"replicaset-create-deployment-controller", `{}`, "workload created by a system user: left unchanged (rule 4)"},
		{"sparkapplication-create-alice", spark, "stamped the requester in the custom resource's annotation maps (rules 11 and 12)"},
		{"pod-update-label-change", `{}`, "pod update leaves the identity as it was (rules 5 and 14b)"},
		{"deployment-update-image", `{}`, "template identity unchanged (rule 6)"},
		{"binding-create-scheduler", `{}`, "accepted a Binding without yunikorn.apache.org/user.info (rule 10)"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			req := fixture(t, tc.fixture)
			if _, logs := evaluateReq(t, req, tc.settings); logs != "" {
				t.Fatalf("logged without logDecisions: %s", logs)
			}
			var on map[string]any
			if err := json.Unmarshal([]byte(tc.settings), &on); err != nil {
				t.Fatal(err)
			}
			on["logDecisions"] = true
			_, logs := evaluateReq(t, req, mustJSON(t, on))
			if !strings.Contains(logs, `"level":"debug","message":`+strconv.Quote(tc.message)) {
				t.Fatalf("with logDecisions: want a debug line %q, got %s", tc.message, logs)
			}
		})
	}
}

// Refusals log a warning whoever is refused: a trusted requester's invalid value too.
func TestLog_ATrustedRequestersInvalidValueIsRefusedWithAWarning(t *testing.T) {
	req := as(t, "pod-create-alice", "Pod", kcm, `{"user":""}`)
	resp, logs := evaluateReq(t, req, "")
	expectRejected(t, resp, "is not valid")
	if !strings.Contains(logs, `"level":"warning","message":"refused an invalid yunikorn.apache.org/user.info value from a trusted requester in metadata (rules 1, 4 and 7)"`) {
		t.Fatalf("want the refusal logged at warning: %s", logs)
	}
}

// Rule 2: a legacy label that does not decide is logged at WARN whenever it is present, not only when the
// requester is stamped.
func TestRule2_AnIgnoredLegacyLabelIsLoggedWhenTheAnnotationDecides(t *testing.T) {
	for _, tc := range []struct {
		name        string
		user        map[string]any
		value, want string
	}{
		{"kept from a trusted requester", kcm, aliceValue, "deprecated label yunikorn.apache.org/username ignored: the annotation decides (rule 2)"},
		{"replaced", bob, aliceValue, "deprecated label yunikorn.apache.org/username ignored: the annotation decides (rule 2)"},
		{"stamped", bob, "", "deprecated label yunikorn.apache.org/username ignored: the requester is stamped (rule 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := as(t, "pod-create-alice", "Pod", tc.user, nil)
			setEntry(object(req, "object"), "Pod", "labels", "yunikorn.apache.org/username", "alice")
			if tc.value != "" {
				setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, tc.value)
			}
			if resp, logs := evaluateReq(t, req, ""); !resp.Accepted {
				t.Fatalf("refused: %s (%s)", resp.Message, logs)
			}
			_, logs := evaluateReq(t, req, "")
			if strings.Count(logs, `"level":"warning","message":`+strconv.Quote(tc.want)) != 1 {
				t.Fatalf("want one warning %q, got %s", tc.want, logs)
			}
		})
	}
}
