package policy

import (
	"strings"
	"testing"
)

// podUpdate returns the pod UPDATE fixture (alice's annotation on the old pod) by user, with the new pod's
// annotation set to value (nil: unchanged, "-": removed).
func podUpdate(t *testing.T, user map[string]any, value any) map[string]any {
	t.Helper()
	req := fixture(t, "pod-update-label-change")
	req["userInfo"] = user
	if value == "-" {
		setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, nil)
	} else if value != nil {
		setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, value)
	}
	return req
}

func TestRule5_OtherChangesPass(t *testing.T) {
	resp, _ := evaluateReq(t, fixture(t, "pod-update-label-change"), "")
	expectAccepted(t, resp)
	resp, _ = evaluateReq(t, fixture(t, "pod-update-status"), "")
	expectAccepted(t, resp)
}

func TestRule5_AnnotationIsImmutable(t *testing.T) {
	const msg = rule5Refusal
	for _, tc := range []struct {
		name     string
		user     map[string]any
		value    any
		settings string
	}{
		{"changed by another user", bob, bobValue, ""},
		{"changed by its owner", fixture(t, "pod-update-label-change")["userInfo"].(map[string]any), bobValue, ""},
		{"changed by a trusted controller", rsc, bobValue, ""},
		{"changed by a trusted external", airflow, bobValue, externalSettings},
		{"removed", bob, "-", ""},
		{"set to empty", bob, "", ""},
		{"reformatted", bob, `{"user":"alice", "groups":["devops","system:authenticated"]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := evaluateReq(t, podUpdate(t, tc.user, tc.value), tc.settings)
			expectRejected(t, resp, msg)
		})
	}
	t.Run("added", func(t *testing.T) {
		req := podUpdate(t, bob, nil)
		setEntry(object(req, "oldObject"), "Pod", "annotations", AnnotationKey, nil)
		resp, _ := evaluateReq(t, req, "")
		expectRejected(t, resp, msg)
	})
	t.Run("from empty", func(t *testing.T) {
		req := podUpdate(t, bob, aliceValue)
		setEntry(object(req, "oldObject"), "Pod", "annotations", AnnotationKey, "")
		resp, _ := evaluateReq(t, req, "")
		expectRejected(t, resp, msg)
	})
	t.Run("status subresource", func(t *testing.T) {
		req := fixture(t, "pod-update-status")
		setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, bobValue)
		resp, _ := evaluateReq(t, req, "")
		expectRejected(t, resp, msg)
	})
}

// honorLegacyUserLabel false turns legacy handling off as legacyUserLabel "" does: rule 5 then guards the
// annotation only.
func TestRule5_LegacyLabelIsFreeWhenNotHonoured(t *testing.T) {
	req := fixture(t, "pod-update-label-change")
	setEntry(object(req, "oldObject"), "Pod", "annotations", AnnotationKey, nil)
	setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, nil)
	setEntry(object(req, "oldObject"), "Pod", "labels", defaultLegacyUserLabel, "alice")
	setEntry(object(req, "object"), "Pod", "labels", defaultLegacyUserLabel, "bob")
	resp, _ := evaluateReq(t, req, "")
	expectRejected(t, resp, "label cannot be changed once the pod exists")
	for _, settings := range []string{`{"honorLegacyUserLabel":false}`, `{"legacyUserLabel":""}`} {
		resp, _ = evaluateReq(t, req, settings)
		expectAccepted(t, resp)
	}
}

func TestRule5_LegacyLabelIsImmutableWithoutAnnotation(t *testing.T) {
	const label = "yunikorn.apache.org/username"
	withLabels := func(oldLabel, newLabel any, annotated bool) map[string]any {
		req := podUpdate(t, bob, nil)
		for field, v := range map[string]any{"oldObject": oldLabel, "object": newLabel} {
			obj := object(req, field)
			if !annotated {
				setEntry(obj, "Pod", "annotations", AnnotationKey, nil)
			}
			setEntry(obj, "Pod", "labels", label, v)
		}
		return req
	}
	for _, tc := range []struct {
		name          string
		old, new      any
		annotated     bool
		settings      string
		wantRejection bool
	}{
		{"changed", "alice", "bob", false, "", true},
		{"added", nil, "bob", false, "", true},
		{"removed", "alice", nil, false, "", true},
		{"unchanged", "alice", "alice", false, "", false},
		{"changed while the annotation exists", "alice", "bob", true, "", false},
		{"changed with legacy handling off", "alice", "bob", false, `{"legacyUserLabel":""}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := evaluateReq(t, withLabels(tc.old, tc.new, tc.annotated), tc.settings)
			if tc.wantRejection {
				expectRejected(t, resp, rule5LabelRefusal("yunikorn.apache.org/username"))
			} else {
				expectAccepted(t, resp)
			}
		})
	}
}

// workloadUpdate returns a Deployment-like UPDATE of kind: old template annotated with oldValue, new with
// newValue (nil: absent).
func workloadUpdate(t *testing.T, kind string, user map[string]any, oldValue, newValue any) map[string]any {
	t.Helper()
	req := fixture(t, stampedKinds[kind])
	req["operation"] = "UPDATE"
	req["userInfo"] = user
	old := object(req, "object")
	req["oldObject"] = fixture(t, stampedKinds[kind])["object"]
	setEntry(object(req, "oldObject"), kind, "annotations", AnnotationKey, oldValue)
	setEntry(old, kind, "annotations", AnnotationKey, newValue)
	return req
}

func TestRule6_UnchangedTemplateIdentityPasses(t *testing.T) {
	resp, _ := evaluateReq(t, fixture(t, "deployment-update-image"), "")
	expectAccepted(t, resp)
	for kind := range stampedKinds {
		if kind == "Pod" {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			for _, v := range []any{nil, aliceValue, ""} {
				resp, _ := evaluateReq(t, workloadUpdate(t, kind, bob, v, v), rejectSettings)
				expectAccepted(t, resp)
			}
		})
	}
}

func TestRule7_TrustedRequesterMayChange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		user     map[string]any
		settings string
		old, new any
	}{
		{"controller changes", rsc, "", aliceValue, bobValue},
		{"controller removes", kcm, "", aliceValue, nil},
		{"external adds", airflow, externalSettings, nil, bobValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := evaluateReq(t, workloadUpdate(t, "Deployment", tc.user, tc.old, tc.new), tc.settings)
			expectAccepted(t, resp)
		})
	}
	t.Run("invalid value is rejected", func(t *testing.T) {
		resp, _ := evaluateReq(t, workloadUpdate(t, "StatefulSet", rsc, aliceValue, `{"user":"bob","user":"alice"}`), "")
		expectRejected(t, resp, "the yunikorn.apache.org/user.info annotation in spec.template.metadata is not valid: the key \"user\" occurs more than once")
	})
}

func TestRule8_UntrustedChangeIsUndone(t *testing.T) {
	for kind := range stampedKinds {
		if kind == "Pod" {
			continue
		}
		t.Run(kind+" changed", func(t *testing.T) {
			req := workloadUpdate(t, kind, bob, aliceValue, bobValue)
			resp, logs := evaluateReq(t, req, "")
			expectOnly(t, req, resp, kind, "annotations", AnnotationKey, aliceValue)
			expectWarning(t, resp, "restored: only trusted submitters may change it")
			if !strings.Contains(logs, `"level":"warning"`) {
				t.Fatalf("refused impersonation logs at warn: %s", logs)
			}
		})
		t.Run(kind+" added", func(t *testing.T) {
			req := workloadUpdate(t, kind, bob, nil, aliceValue)
			resp, _ := evaluateReq(t, req, "")
			expectOnly(t, req, resp, kind, "annotations", AnnotationKey, nil)
		})
		t.Run(kind+" removed", func(t *testing.T) {
			req := workloadUpdate(t, kind, bob, aliceValue, nil)
			resp, _ := evaluateReq(t, req, "")
			expectOnly(t, req, resp, kind, "annotations", AnnotationKey, aliceValue)
		})
	}
	t.Run("fixture", func(t *testing.T) {
		req := fixture(t, "deployment-update-bob-template")
		resp, _ := evaluateReq(t, req, "")
		expectOnly(t, req, resp, "Deployment", "annotations", AnnotationKey, aliceValue)
	})
}

func TestRule8_UntrustedChangeIsRejected(t *testing.T) {
	for kind := range stampedKinds {
		if kind == "Pod" {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			resp, _ := evaluateReq(t, workloadUpdate(t, kind, bob, aliceValue, bobValue), rejectSettings)
			expectRejected(t, resp, "user bob with groups [qa,system:authenticated] is not allowed to change the yunikorn.apache.org/user.info annotation in "+
				strings.Join(templatePath(kind), ".")+" of this "+kind)
		})
	}
}

func TestRule8_OnlyTheTemplateEntryIsRestored(t *testing.T) {
	// Other edits in the same update (image, other annotations) go through.
	req := workloadUpdate(t, "Deployment", bob, aliceValue, bobValue)
	setEntry(object(req, "object"), "Deployment", "annotations", "team/contact", "bob@example.com")
	resp, _ := evaluateReq(t, req, "")
	expectOnly(t, req, resp, "Deployment", "annotations", AnnotationKey, aliceValue)
}

func TestRule9_LegacyLabelIsGuardedWithoutAnnotation(t *testing.T) {
	const label = "yunikorn.apache.org/username"
	labelled := func(user map[string]any, oldLabel, newLabel any) map[string]any {
		req := workloadUpdate(t, "Job", user, nil, nil)
		setEntry(object(req, "oldObject"), "Job", "labels", label, oldLabel)
		setEntry(object(req, "object"), "Job", "labels", label, newLabel)
		return req
	}
	t.Run("changed: restored", func(t *testing.T) {
		req := labelled(bob, "alice", "bob")
		resp, _ := evaluateReq(t, req, "")
		expectOnly(t, req, resp, "Job", "labels", label, "alice")
		expectWarning(t, resp, restoredWarning("yunikorn.apache.org/username", "spec.template.metadata"))
	})
	t.Run("added: removed", func(t *testing.T) {
		req := labelled(bob, nil, "alice")
		resp, _ := evaluateReq(t, req, "")
		expectOnly(t, req, resp, "Job", "labels", label, nil)
	})
	t.Run("changed: rejected", func(t *testing.T) {
		resp, _ := evaluateReq(t, labelled(bob, "alice", "bob"), rejectSettings)
		expectRejected(t, resp, "is not allowed to change the yunikorn.apache.org/username label")
	})
	t.Run("whatever bypassAuth says", func(t *testing.T) {
		req := labelled(bob, "alice", "bob")
		resp, _ := evaluateReq(t, req, externalSettings)
		expectOnly(t, req, resp, "Job", "labels", label, "alice")
	})
	t.Run("trusted: any value", func(t *testing.T) {
		resp, _ := evaluateReq(t, labelled(airflow, "alice", "anything at all"), externalSettings)
		expectAccepted(t, resp)
	})
	t.Run("not guarded when the old template has the annotation", func(t *testing.T) {
		req := labelled(bob, "alice", "bob")
		setEntry(object(req, "oldObject"), "Job", "annotations", AnnotationKey, aliceValue)
		setEntry(object(req, "object"), "Job", "annotations", AnnotationKey, aliceValue)
		resp, _ := evaluateReq(t, req, rejectSettings)
		expectAccepted(t, resp)
	})
	t.Run("annotation added and label changed: both undone", func(t *testing.T) {
		req := labelled(bob, "alice", "bob")
		setEntry(object(req, "object"), "Job", "annotations", AnnotationKey, bobValue)
		resp, _ := evaluateReq(t, req, "")
		// Restore the label in the expectation's source, then compare the annotation's absence.
		setEntry(object(req, "object"), "Job", "labels", label, "alice")
		expectOnly(t, req, resp, "Job", "annotations", AnnotationKey, nil)
	})
}
