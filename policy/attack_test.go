package policy

// The attack catalogue: every way we know to forge or change the yunikorn.apache.org/user.info annotation,
// each with the defence that stops it, or, where the design allows it, why. The README's "Security" section lists
// the same catalogue as a table; e2e-attacks.bats runs each class through policy.wasm.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// attackCase is one entry of the catalogue.
type attackCase struct {
	name    string
	attempt string // what the attacker does, in one line
	defence string // what stops it; for what the design allows, why that is fine
	req     map[string]any
	raw     string // a hand-written payload, for what a map cannot express (escaped and duplicate keys)
	// settings is the policy configuration (JSON, "" for the defaults).
	settings string
	check    func(t *testing.T, req map[string]any, resp response)
}

// runAttacks runs one class of the catalogue.
func runAttacks(t *testing.T, attacks []attackCase) {
	t.Helper()
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if a.attempt == "" || a.defence == "" || a.check == nil {
				t.Fatal("every attack states its attempt, its defence and its check")
			}
			var resp response
			if a.raw != "" {
				resp, _ = evaluateRaw(t, a.raw)
			} else {
				resp, _ = evaluateReq(t, a.req, a.settings)
			}
			a.check(t, a.req, resp)
		})
	}
}

// stampOf is the value the policy must write for user (docs/rules.md "Value format").
func stampOf(user map[string]any) string {
	v := UserInfo{User: user["username"].(string)}
	groups, _ := user["groups"].([]any)
	for _, g := range groups {
		v.Groups = append(v.Groups, g.(string))
	}
	return v.Encode()
}

func withName(user map[string]any, name string) map[string]any {
	return map[string]any{"username": name, "groups": user["groups"]}
}

// The checks. Each compares the whole mutated object (expectOnly): nothing but the one entry may change.

func replacedBy(kind string, user map[string]any) func(*testing.T, map[string]any, response) {
	return func(t *testing.T, req map[string]any, resp response) {
		t.Helper()
		expectOnly(t, req, resp, kind, "annotations", AnnotationKey, stampOf(user))
		expectWarning(t, resp, "replaced by your identity")
	}
}

func stampedWith(kind string, user map[string]any) func(*testing.T, map[string]any, response) {
	return func(t *testing.T, req map[string]any, resp response) {
		t.Helper()
		expectOnly(t, req, resp, kind, "annotations", AnnotationKey, stampOf(user))
	}
}

func restoredTo(kind, mapName, key string, old any) func(*testing.T, map[string]any, response) {
	return func(t *testing.T, req map[string]any, resp response) {
		t.Helper()
		expectOnly(t, req, resp, kind, mapName, key, old)
		expectWarning(t, resp, "restored: only trusted submitters may change it")
	}
}

func refused(parts ...string) func(*testing.T, map[string]any, response) {
	return func(t *testing.T, _ map[string]any, resp response) {
		t.Helper()
		expectRejected(t, resp, parts...)
	}
}

func keptAsIs(t *testing.T, _ map[string]any, resp response) {
	t.Helper()
	expectAccepted(t, resp)
}

const (
	cannotChange  = rule5Refusal
	bobMaySet     = "user bob with groups [qa,system:authenticated] is not allowed to set the yunikorn.apache.org/user.info annotation"
	bobMayChange  = "user bob with groups [qa,system:authenticated] is not allowed to change the yunikorn.apache.org/user.info annotation"
	legacyKey     = "yunikorn.apache.org/username"
	invalidValue  = "annotation in metadata is not valid"
	designPattern = "system:serviceaccount:kube-system:*" // the SYSTEM_USERS example of YuniKorn's user and group design
)

// -------------------------------------------------------------------------------------------- classes

func forgedAnnotationAttacks(t *testing.T) []attackCase {
	t.Helper()
	var attacks []attackCase
	for _, kind := range sortedKinds() {
		attacks = append(attacks, attackCase{
			name:    kind + " replace",
			attempt: "bob creates a " + kind + " whose target metadata says alice",
			defence: "rule 1 (replace): the value is replaced with bob's own identity, with a warning",
			req:     as(t, stampedKinds[kind], kind, bob, aliceValue),
			check:   replacedBy(kind, bob),
		}, attackCase{
			name:     kind + " reject",
			attempt:  "bob creates a " + kind + " whose target metadata says alice",
			defence:  "rule 1 (reject): the request is refused, naming bob",
			req:      as(t, stampedKinds[kind], kind, bob, aliceValue),
			settings: rejectSettings,
			check:    refused(bobMaySet),
		})
	}
	return attacks
}

func workloadTemplateAttacks(t *testing.T) []attackCase {
	t.Helper()
	var attacks []attackCase
	for _, kind := range sortedKinds() {
		if kind == "Pod" {
			continue
		}
		attacks = append(attacks, attackCase{
			name:    kind + " changed",
			attempt: "bob, allowed to edit alice's " + kind + ", changes its template to his own identity to move its pods into his queue",
			defence: "rule 8 (replace): the template annotation is restored to alice's value, with a warning",
			req:     workloadUpdate(t, kind, bob, aliceValue, bobValue),
			check:   restoredTo(kind, "annotations", AnnotationKey, aliceValue),
		}, attackCase{
			name:    kind + " changed to another user",
			attempt: "bob edits a " + kind + " he may edit (his team's) so that its template says alice, the user with the big quota",
			defence: "rule 8 (replace): the old value is restored",
			req:     workloadUpdate(t, kind, bob, bobValue, aliceValue),
			check:   restoredTo(kind, "annotations", AnnotationKey, bobValue),
		}, attackCase{
			name:    kind + " added",
			attempt: "bob adds alice's value to the template of a " + kind + " created before the policy (no annotation)",
			defence: "rule 8: the added annotation is removed again; the controller's pods then get the controller's identity",
			req:     workloadUpdate(t, kind, bob, nil, aliceValue),
			check:   restoredTo(kind, "annotations", AnnotationKey, nil),
		}, attackCase{
			name:     kind + " rejected",
			attempt:  "bob edits alice's " + kind + " template annotation",
			defence:  "rule 8 (reject): refused, naming bob",
			req:      workloadUpdate(t, kind, bob, aliceValue, bobValue),
			settings: rejectSettings,
			check:    refused(bobMayChange, "of this "+kind),
		})
	}
	return attacks
}

func legacyLabelAttacks(t *testing.T) []attackCase {
	t.Helper()
	labelled := func(user map[string]any) map[string]any {
		return as(t, "pod-create-legacy-label", "Pod", user, nil) // label says alice, no annotation
	}
	deployment := as(t, "deployment-create-alice", "Deployment", bob, nil)
	setEntry(object(deployment, "object"), "Deployment", "labels", legacyKey, "alice")
	podLabels := func(oldLabel, newLabel any) map[string]any {
		req := podUpdate(t, bob, "-")
		setEntry(object(req, "oldObject"), "Pod", "annotations", AnnotationKey, nil)
		setEntry(object(req, "oldObject"), "Pod", "labels", legacyKey, oldLabel)
		setEntry(object(req, "object"), "Pod", "labels", legacyKey, newLabel)
		return req
	}
	templateLabels := func(kind string, oldLabel, newLabel any) map[string]any {
		req := workloadUpdate(t, kind, bob, nil, nil)
		setEntry(object(req, "oldObject"), kind, "labels", legacyKey, oldLabel)
		setEntry(object(req, "object"), kind, "labels", legacyKey, newLabel)
		return req
	}
	return []attackCase{
		{
			name: "create, bypassAuth off", attempt: "bob creates a pod labelled yunikorn.apache.org/username=alice",
			defence: "rule 2: the label counts only with bypassAuth on and a trusted requester; bob is stamped",
			req:     labelled(bob), check: stampedWith("Pod", bob),
		},
		{
			name: "create, bypassAuth on, untrusted", attempt: "bob sets the label where bypassAuth is on for an external submitter",
			defence: "rule 2: bob is not trusted, so the label is ignored and bob is stamped",
			req:     labelled(bob), settings: externalSettings, check: stampedWith("Pod", bob),
		},
		{
			name: "create workload, bypassAuth on, untrusted", attempt: "bob creates a Deployment whose template is labelled alice",
			defence: "rule 2: the template is stamped with bob", req: deployment, settings: externalSettings,
			check: stampedWith("Deployment", bob),
		},
		{
			name: "create, bypassAuth on, trusted external (by design)", attempt: "airflow, an allow-listed submitter, labels a pod alice",
			defence: "rule 2 [design]: a trusted submitter may name the user; the label stands, with a deprecation warning",
			req:     labelled(airflow), settings: externalSettings,
			check: func(t *testing.T, _ map[string]any, resp response) {
				t.Helper()
				expectAccepted(t, resp)
				expectWarning(t, resp, "label is deprecated")
			},
		},
		{
			name: "update pod: changed", attempt: "bob relabels a running pod without annotation from alice to bob",
			defence: "rule 5: without the annotation the label is immutable", req: podLabels("alice", "bob"),
			check: refused("the yunikorn.apache.org/username label cannot be changed once the pod exists"),
		},
		{
			name: "update pod: added", attempt: "bob labels a running pod, stamped before the policy existed, as alice",
			defence: "rule 5: adding the label is a change", req: podLabels(nil, "alice"),
			check: refused("label cannot be changed once the pod exists"),
		},
		{
			name: "update pod: added with bypassAuth on", attempt: "bob labels a running pod as alice where bypassAuth is on",
			defence: "rule 5: nobody is exempt, whatever bypassAuth says", req: podLabels(nil, "alice"), settings: externalSettings,
			check: refused("label cannot be changed once the pod exists"),
		},
		{
			name: "update template: changed", attempt: "bob relabels an old Deployment's template from alice to bob",
			defence: "rule 9: the label is restored", req: templateLabels("Deployment", "alice", "bob"),
			check: restoredTo("Deployment", "labels", legacyKey, "alice"),
		},
		{
			name: "update template: added with bypassAuth on", attempt: "bob adds label alice to an old StatefulSet, hoping rule 2 lets its pods keep it",
			defence: "rule 9: protected whatever bypassAuth says; the label is removed", req: templateLabels("StatefulSet", nil, "alice"),
			settings: externalSettings, check: restoredTo("StatefulSet", "labels", legacyKey, nil),
		},
		{
			name: "update template: removed", attempt: "bob removes the label from a CronJob's template so that its pods get stamped fresh",
			defence: "rule 9: the label is put back", req: templateLabels("CronJob", "alice", nil),
			check: restoredTo("CronJob", "labels", legacyKey, "alice"),
		},
		{
			name: "update template: rejected", attempt: "bob relabels a Job template",
			defence: "rule 9 with reject: refused", req: templateLabels("Job", "alice", "bob"), settings: rejectSettings,
			check: refused("is not allowed to change the yunikorn.apache.org/username label"),
		},
	}
}

// undefended is an attack that settings leave open: the forged value is kept as it is.
func undefended(name, attempt, defence string, req map[string]any, settings string) attackCase {
	return attackCase{name: name, attempt: attempt, defence: defence, req: req, settings: settings, check: keptAsIs}
}

func lookalikeNamespaceAttacks(t *testing.T) []attackCase {
	t.Helper()
	evil := map[string]any{"username": "system:serviceaccount:kube-system-evil:replicaset-controller",
		"groups": []any{"system:serviceaccounts", "system:serviceaccounts:kube-system-evil", "system:authenticated"}}
	design := mustJSON(t, map[string]any{"systemUsers": []string{designPattern}})
	noColon := mustJSON(t, map[string]any{"systemUsers": []string{"^system:serviceaccount:kube-system"}})
	oidc := withName(bob, "bob@corp system:serviceaccount:kube-system:x") // an identity provider's free-form name
	return []attackCase{
		{
			name: "default settings, pod", attempt: "a service account in namespace kube-system-evil (anyone allowed to create namespaces) sets alice on a pod",
			defence: "the default ^system:serviceaccount:kube-system: needs the colon: not a system user; replaced with its own identity",
			req:     as(t, "pod-create-alice", "Pod", evil, aliceValue), check: replacedBy("Pod", evil),
		},
		{
			name: "default settings, deployment", attempt: "the same service account creates a Deployment whose template says alice",
			defence: "not a system user, so rule 4 does not apply: replaced", req: as(t, "deployment-create-alice", "Deployment", evil, aliceValue),
			check: replacedBy("Deployment", evil),
		},
		// Settings that leave the attack open: the value is kept as it is. docs/security.md says what to use instead.
		undefended("design pattern: the attack works on pods", "the same pod, with the design's unanchored "+designPattern,
			"NONE: the pattern matches kube-system-evil, the requester is a trusted controller and alice's value is kept; anchor systemUsers",
			as(t, "pod-create-alice", "Pod", evil, aliceValue), design),
		undefended("design pattern: the attack works on workloads", "the same Deployment, with the design's pattern",
			"NONE: rule 4 leaves a system user's workload alone; anchor systemUsers",
			as(t, "deployment-create-alice", "Deployment", evil, aliceValue), design),
		undefended("design pattern: any name containing it", "a user whose name (from the identity provider) contains system:serviceaccount:kube-system",
			"NONE with the unanchored pattern: it matches anywhere in the name; anchor systemUsers with ^",
			as(t, "pod-create-alice", "Pod", oidc, aliceValue), design),
		undefended("anchored without the colon", "kube-system-evil against ^system:serviceaccount:kube-system (no trailing colon)",
			"NONE: a prefix without the colon still matches kube-system-evil; keep the colon",
			as(t, "pod-create-alice", "Pod", evil, aliceValue), noColon),
		{
			name: "default settings, name containing it", attempt: "the identity-provider user whose name contains system:serviceaccount:kube-system",
			defence: "the default pattern is anchored at ^: replaced", req: as(t, "pod-create-alice", "Pod", oidc, aliceValue),
			check: replacedBy("Pod", oidc),
		},
	}
}

func regexMetacharacterAttacks(t *testing.T) []attackCase {
	t.Helper()
	external := func(key string, patterns ...string) string {
		return mustJSON(t, map[string]any{"bypassAuth": true, key: patterns})
	}
	forge := func(user map[string]any) map[string]any { return as(t, "pod-create-alice", "Pod", user, aliceValue) }
	attacks := []attackCase{
		{
			name: "unescaped dot", attempt: "user airXflow against externalUsers ^air.flow$",
			defence: "NONE: . matches any character, so airXflow is trusted; escape dots (^air\\.flow$)",
			req:     forge(withName(airflow, "airXflow")), settings: external("externalUsers", "^air.flow$"), check: keptAsIs,
		},
		{
			name: "escaped dot", attempt: "user airXflow against ^air\\.flow$",
			defence: "the escaped dot matches only a dot: not trusted, replaced", req: forge(withName(airflow, "airXflow")),
			settings: external("externalUsers", `^air\.flow$`), check: replacedBy("Pod", withName(airflow, "airXflow")),
		},
		{
			name: "unanchored pattern", attempt: "user not-airflow-really against externalUsers airflow (no anchors)",
			defence: "NONE: unanchored patterns match anywhere, as upstream; anchor them",
			req:     forge(withName(airflow, "not-airflow-really")), settings: external("externalUsers", "airflow"), check: keptAsIs,
		},
		{
			name: "unanchored group", attempt: "a member of group spark-submitters-test against externalGroups spark-submitters",
			defence:  "NONE: matches anywhere; anchor group patterns too",
			req:      forge(map[string]any{"username": "carol", "groups": []any{"spark-submitters-test"}}),
			settings: external("externalGroups", "spark-submitters"), check: keptAsIs,
		},
	}
	// Usernames and groups are data, never patterns, and $ ends the text (RE2 without the m flag).
	for _, name := range []string{"airflow\n", "airflow ", " airflow", "Airflow", ".*", "^airflow$", "airflow$", "air.flow", "(airflow)", "airflow\x00"} {
		user := withName(airflow, name)
		attacks = append(attacks, attackCase{
			name: fmt.Sprintf("username %q", name), attempt: fmt.Sprintf("user %q against externalUsers ^airflow$", name),
			defence: "not the same name: replaced", req: forge(user), settings: externalSettings, check: replacedBy("Pod", user),
		})
	}
	for _, group := range []string{"spark-submitters\n", ".*", "^spark-submitters$", "Spark-Submitters"} {
		user := map[string]any{"username": "carol", "groups": []any{group}}
		attacks = append(attacks, attackCase{
			name: fmt.Sprintf("group %q", group), attempt: fmt.Sprintf("group %q against externalGroups ^spark-submitters$", group),
			defence: "not the same group: replaced", req: forge(user), settings: externalSettings, check: replacedBy("Pod", user),
		})
	}
	for _, name := range []string{"system:kube-controller-manager\n", "system:kube-controller-manager ", "xsystem:kube-controller-manager"} {
		user := withName(kcm, name)
		attacks = append(attacks, attackCase{
			name: fmt.Sprintf("system user %q", name), attempt: fmt.Sprintf("user %q against the default ^system:kube-controller-manager$", name),
			defence: "the literal fast path compares exactly: not a system user, replaced", req: forge(user), check: replacedBy("Pod", user),
		})
	}
	return attacks
}

func caseVariantAttacks(t *testing.T) []attackCase {
	t.Helper()
	forge := func(user map[string]any) map[string]any { return as(t, "pod-create-alice", "Pod", user, aliceValue) }
	var attacks []attackCase
	for _, name := range []string{"System:kube-controller-manager", "SYSTEM:KUBE-CONTROLLER-MANAGER",
		"System:serviceaccount:kube-system:replicaset-controller", "system:serviceaccount:Kube-System:replicaset-controller"} {
		user := withName(kcm, name)
		attacks = append(attacks, attackCase{
			name: name, attempt: "user " + name + " (an identity provider may allow it) sets alice on a pod",
			defence: "patterns are case-sensitive and Kubernetes names are too: not a system user, replaced",
			req:     forge(user), check: replacedBy("Pod", user),
		})
	}
	attacks = append(attacks, attackCase{
		name: "AIRFLOW", attempt: "user AIRFLOW against externalUsers ^airflow$", defence: "case-sensitive: replaced",
		req: forge(withName(airflow, "AIRFLOW")), settings: externalSettings, check: replacedBy("Pod", withName(airflow, "AIRFLOW")),
	})
	// A case variant of the annotation's key is another annotation, which YuniKorn does not read: the real
	// one is stamped beside it.
	variant := as(t, "pod-create-alice", "Pod", bob, nil)
	setEntry(object(variant, "object"), "Pod", "annotations", "Yunikorn.Apache.Org/User.Info", aliceValue)
	attacks = append(attacks, attackCase{
		name: "annotation key in another case", attempt: "bob sets Yunikorn.Apache.Org/User.Info to alice",
		defence: "another key, which YuniKorn never reads; the real annotation is stamped with bob beside it",
		req:     variant, check: stampedWith("Pod", bob),
	})
	return attacks
}

// ambiguousValueAttacks: values a trusted requester (or a template it copies) might carry that encoding/json,
// which YuniKorn reads them with, resolves differently from what a reviewer sees: it takes the last of
// duplicate keys and matches keys case-insensitively (with Unicode folding: ſ is s, K is k).
func ambiguousValueAttacks(t *testing.T) []attackCase {
	t.Helper()
	var attacks []attackCase
	for _, v := range []struct{ name, value, problem string }{
		{"duplicate user", `{"user":"bob","user":"alice"}`, `the key "user" occurs more than once`},
		{"duplicate user, once escaped", `{"user":"bob","\u0075ser":"alice"}`, `the key "user" occurs more than once`},
		{"duplicate groups", `{"user":"bob","groups":["qa"],"groups":["system:masters"]}`, `the key "groups" occurs more than once`},
		{"USER beside user", `{"user":"a","USER":"b"}`, `unknown key "USER"`},
		{"User only", `{"User":"alice"}`, `unknown key "User"`},
		{"long s folds to user", `{"user":"bob","uſer":"alice"}`, `unknown key "uſer"`},
		{"long s folds to groups", `{"user":"bob","groupſ":["system:masters"]}`, `unknown key "groupſ"`},
		{"GROUPS beside user", `{"user":"bob","GROUPS":["system:masters"]}`, `unknown key "GROUPS"`},
		{"null groups", `{"user":"alice","groups":null}`, `"groups" must be a list of strings`},
		{"empty object", `{}`, `the key "user" is missing`},
		{"null", `null`, `it must be a JSON object`},
		{"two objects", `{"user":"bob"}{"user":"alice"}`, `it is not valid JSON`},
		{"uid and extra", `{"user":"alice","uid":"0","extra":{}}`, `unknown key "uid"`},
	} {
		attacks = append(attacks, attackCase{
			name: v.name, attempt: "a trusted controller's pod carries " + v.value,
			defence: "the strict validator (docs/rules.md \"Value format\"): rejected, naming the problem",
			req:     as(t, "pod-create-alice", "Pod", rsc, v.value), check: refused(invalidValue, v.problem),
		})
	}
	// What encoding/json makes of these, to show that the ambiguity is real (the check above would be moot
	// if the scheduler read them the way they look).
	var read struct {
		User string `json:"user"`
	}
	if err := json.Unmarshal([]byte(`{"user":"bob","uſer":"alice"}`), &read); err != nil || read.User != "alice" {
		t.Fatalf("encoding/json no longer folds ſ to s (read %q, %v): revisit this class", read.User, err)
	}
	return attacks
}

func escapedKeyAttacks(*testing.T) []attackCase {
	const (
		head    = `{"request":{"operation":"CREATE","kind":{"group":"","version":"v1","kind":"Pod"},"userInfo":{"username":"bob","groups":["qa","system:authenticated"]},"object":`
		tail    = `},"settings":{}}`
		alice   = `"{\"user\":\"alice\"}"`
		stamped = `"{\"user\":\"bob\",\"groups\":[\"qa\",\"system:authenticated\"]}"`
	)
	replaced := func(want string) func(*testing.T, map[string]any, response) {
		return func(t *testing.T, _ map[string]any, resp response) {
			t.Helper()
			if string(resp.MutatedObject) != want {
				t.Fatalf("got  %s\nwant %s", resp.MutatedObject, want)
			}
			expectWarning(t, resp, "replaced by your identity")
		}
	}
	var attacks []attackCase
	for _, key := range []string{`yunikorn.apache.org/user\u002einfo`, `yunikorn.apache.org\/user.info`, `\u0079unikorn.apache.org/user.info`,
		`yunikorn.apache.org/user\u002Einfo`} {
		attacks = append(attacks, attackCase{
			name: "annotation key " + key, attempt: "bob writes the annotation's key as " + key + ", hoping a byte comparison misses it",
			defence: "keys are compared after unescaping: the value is replaced, the key kept as written",
			raw:     head + `{"metadata":{"annotations":{"` + key + `":` + alice + `}}}` + tail,
			check:   replaced(`{"metadata":{"annotations":{"` + key + `":` + stamped + `}}}`),
		})
	}
	attacks = append(attacks, attackCase{
		name: "metadata key escaped", attempt: "bob writes met\\u0061data, hoping the policy creates a second metadata and YuniKorn reads his",
		defence: "the same key: the annotation inside is replaced",
		raw:     head + `{"met\u0061data":{"annotations":{"yunikorn.apache.org/user.info":` + alice + `}}}` + tail,
		check:   replaced(`{"met\u0061data":{"annotations":{"yunikorn.apache.org/user.info":` + stamped + `}}}`),
	}, attackCase{
		name: "annotations key escaped", attempt: "bob writes annot\\u0061tions",
		defence: "the same key: the annotation inside is replaced",
		raw:     head + `{"metadata":{"annot\u0061tions":{"yunikorn.apache.org/user.info":` + alice + `}}}` + tail,
		check:   replaced(`{"metadata":{"annot\u0061tions":{"yunikorn.apache.org/user.info":` + stamped + `}}}`),
	}, attackCase{
		name: "escaped key, reject mode", attempt: "bob writes user\\u002einfo where forged values are rejected",
		defence: "the same key: refused",
		raw: strings.Replace(head+`{"metadata":{"annotations":{"yunikorn.apache.org/user\u002einfo":`+alice+`}}}`+tail,
			`"settings":{}`, `"settings":`+rejectSettings, 1),
		check: refused(bobMaySet),
	}, attackCase{
		name: "plain and escaped key together", attempt: "bob sends the key twice, once escaped: the policy might check one and YuniKorn read the other",
		defence: "duplicate keys on the way to the annotation are refused with 400",
		raw:     head + `{"metadata":{"annotations":{"yunikorn.apache.org/user.info":` + stamped + `,"yunikorn.apache.org/user\u002einfo":` + alice + `}}}` + tail,
		check:   refused(`["yunikorn.apache.org/user.info"] occurs more than once`),
	}, attackCase{
		name: "plain and escaped metadata together", attempt: "bob sends metadata twice, once escaped",
		defence: "refused with 400",
		raw:     head + `{"metadata":{},"met\u0061data":{"annotations":{"yunikorn.apache.org/user.info":` + alice + `}}}` + tail,
		check:   refused(`request.object.metadata occurs more than once`),
	}, attackCase{
		name: "escaped key on a running pod", attempt: "bob updates a pod, writing the annotation's key escaped with a new value",
		defence: "the same key, so the value changed: rule 5 refuses",
		raw:     bobsPodUpdate(`"yunikorn.apache.org/user\u002einfo":`+alice, `"yunikorn.apache.org/user.info":`+stamped),
		check:   refused(cannotChange),
	}, attackCase{
		name: "escaped key kept on a running pod", attempt: "an update that only re-escapes the key, same value",
		defence: "the same key and value: accepted unchanged (no false alarm)",
		raw:     bobsPodUpdate(`"yunikorn.apache.org/user\u002einfo":`+stamped, `"yunikorn.apache.org/user.info":`+stamped),
		check:   keptAsIs,
	})
	return attacks
}

// bobsPodUpdate is bob's update of a pod whose annotations were old and are now annotations (members' text).
func bobsPodUpdate(annotations, old string) string {
	return `{"request":{"operation":"UPDATE","kind":{"group":"","kind":"Pod"},"userInfo":{"username":"bob"},` +
		`"object":{"metadata":{"annotations":{` + annotations + `}}},"oldObject":{"metadata":{"annotations":{` + old + `}}}},"settings":{}}`
}

func removalAttacks(t *testing.T) []attackCase {
	t.Helper()
	withoutMap := func(req map[string]any, field, kind string, value any) map[string]any {
		md := object(req, field)
		for _, k := range templatePath(kind) {
			md, _ = md[k].(map[string]any)
		}
		md["annotations"] = value
		return req
	}
	noMetadata := podUpdate(t, bob, nil)
	delete(object(noMetadata, "object"), "metadata")
	noTemplateMetadata := workloadUpdate(t, "Deployment", bob, aliceValue, nil)
	delete(path(noTemplateMetadata, "object", "spec", "template").(map[string]any), "metadata")
	return []attackCase{
		{name: "pod: removed", attempt: "bob removes the annotation from a running pod, hoping YuniKorn falls back to the label or nobody",
			defence: "rule 5", req: podUpdate(t, bob, "-"), check: refused(cannotChange)},
		{name: "pod: removed by a controller", attempt: "a trusted controller removes it", defence: "rule 5: nobody is exempt",
			req: podUpdate(t, rsc, "-"), check: refused(cannotChange)},
		{name: "pod: emptied", attempt: "bob sets it to the empty string", defence: "rule 5: even to an empty string",
			req: podUpdate(t, bob, ""), check: refused(cannotChange)},
		{name: "pod: annotations null", attempt: "bob sets metadata.annotations to null", defence: "rule 5: the annotation is gone, so it changed",
			req: withoutMap(podUpdate(t, bob, nil), "object", "Pod", nil), check: refused(cannotChange)},
		{name: "pod: metadata gone", attempt: "bob sends the pod without metadata", defence: "rule 5",
			req: noMetadata, check: refused(cannotChange)},
		{name: "pod: whitespace", attempt: "bob re-formats the value with a space (same JSON meaning)", defence: "rule 5 compares bytes: refused",
			req: podUpdate(t, bob, `{"user":"alice", "groups":["devops","system:authenticated"]}`), check: refused(cannotChange)},
		{name: "workload: removed", attempt: "bob removes alice's template annotation so new pods are stamped... by the controller",
			defence: "rule 8: restored", req: workloadUpdate(t, "Deployment", bob, aliceValue, nil),
			check: restoredTo("Deployment", "annotations", AnnotationKey, aliceValue)},
		{name: "workload: emptied", attempt: "bob empties the template annotation of a DaemonSet", defence: "rule 8: restored",
			req: workloadUpdate(t, "DaemonSet", bob, aliceValue, ""), check: restoredTo("DaemonSet", "annotations", AnnotationKey, aliceValue)},
		{name: "workload: annotations null", attempt: "bob sets the template's annotations to null", defence: "rule 8: restored into a new map",
			req:   withoutMap(workloadUpdate(t, "Job", bob, aliceValue, aliceValue), "object", "Job", nil),
			check: restoredTo("Job", "annotations", AnnotationKey, aliceValue)},
		{name: "workload: template metadata gone", attempt: "bob drops spec.template.metadata", defence: "rule 8: restored, metadata created",
			req: noTemplateMetadata, check: restoredTo("Deployment", "annotations", AnnotationKey, aliceValue)},
		{name: "workload: removed by a controller (by design)", attempt: "a trusted controller removes a template annotation",
			defence: "rule 7: a trusted requester may; its own pods then carry its identity", req: workloadUpdate(t, "ReplicaSet", kcm, aliceValue, nil),
			check: keptAsIs},
		{name: "create: emptied", attempt: "bob creates a pod with an empty value, hoping for \"nobody\" rather than bob",
			defence: "rule 1: any supplied value, even empty, is replaced", req: as(t, "pod-create-alice", "Pod", bob, ""),
			check: replacedBy("Pod", bob)},
	}
}

// bigGroups returns n distinct group names of 19 bytes.
// encodingJSONValue is the annotation value as YuniKorn's encoding/json writes it.
type encodingJSONValue struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
}

func bigGroups(n int) []any {
	groups := make([]any, n)
	for i := range groups {
		groups[i] = fmt.Sprintf("team-%06d-readers", i)
	}
	return groups
}

func sizeLimitAttacks(t *testing.T) []attackCase {
	t.Helper()
	const annotationLimit = 256 * 1024 // Kubernetes: all annotations of an object, keys and values
	many := map[string]any{"username": "alice", "groups": bigGroups(11_500)}
	odd := map[string]any{"username": "<alice&co>", "groups": []any{}}
	for i := range 5_000 {
		odd["groups"] = append(odd["groups"].([]any), fmt.Sprintf("<g\u2028%d&>", i))
	}
	huge := UserInfo{User: "alice"}
	for _, g := range bigGroups(11_900) {
		huge.Groups = append(huge.Groups, g.(string))
	}
	hugeValue := huge.Encode()
	if n := len(hugeValue) + len(AnnotationKey); n < annotationLimit-10_000 || n > annotationLimit {
		t.Fatalf("the forged value is %d bytes with its key, want just under %d", n, annotationLimit)
	}
	byteIdentical := func(user map[string]any) func(*testing.T, map[string]any, response) {
		return func(t *testing.T, req map[string]any, resp response) {
			t.Helper()
			var groups []string
			for _, g := range user["groups"].([]any) {
				groups = append(groups, g.(string))
			}
			want, err := json.Marshal(encodingJSONValue{User: user["username"].(string), Groups: groups})
			if err != nil {
				t.Fatal(err)
			}
			if len(want) < 100_000 {
				t.Fatalf("the value is only %d bytes", len(want))
			}
			expectOnly(t, req, resp, "Pod", "annotations", AnnotationKey, string(want))
		}
	}
	return []attackCase{
		{name: "thousands of groups", attempt: "a user in 11,500 groups (a ~250 KB value) hopes for a truncated or mangled stamp",
			defence: "stamped whole, byte-identical to encoding/json", req: as(t, "pod-create-alice", "Pod", many, nil), check: byteIdentical(many)},
		{name: "thousands of groups needing escapes", attempt: "5,000 groups full of <, & and U+2028",
			defence: "escaped exactly as YuniKorn's encoding/json would", req: as(t, "pod-create-alice", "Pod", odd, nil), check: byteIdentical(odd)},
		{name: "a forged value at the size limit", attempt: "bob supplies a ~256 KB value naming alice",
			defence: "rule 1: replaced like any other", req: as(t, "pod-create-alice", "Pod", bob, hugeValue), check: replacedBy("Pod", bob)},
		{name: "a forged value at the size limit, rejected", attempt: "the same where forged values are rejected",
			defence: "rule 1 (reject)", req: as(t, "pod-create-alice", "Pod", bob, hugeValue), settings: rejectSettings, check: refused(bobMaySet)},
		{name: "a forged template value at the size limit", attempt: "bob's CronJob template carries the ~256 KB value",
			defence: "rule 1: replaced", req: as(t, "cronjob-create-alice", "CronJob", bob, hugeValue), check: replacedBy("CronJob", bob)},
		{name: "a trusted value at the size limit", attempt: "a trusted controller copies a ~256 KB template value",
			defence: "valid, so kept as it is", req: as(t, "pod-create-alice", "Pod", rsc, hugeValue), check: keptAsIs},
	}
}

func trustedControllerAttacks(t *testing.T) []attackCase {
	t.Helper()
	admin := `{"user":"cluster-admin","groups":["system:masters"]}`
	return []attackCase{
		{name: "pod for another user (by design)", attempt: "the replicaset controller creates a pod whose value names alice, not itself",
			defence: "allowed by design: it copies the template of a ReplicaSet whose annotation was already checked; the policy cannot see the parent",
			req:     fixture(t, "pod-create-replicaset-controller"), check: keptAsIs},
		{name: "pod for any user (by design)", attempt: "the controller-manager creates a pod naming cluster-admin",
			defence: "allowed by design: a trusted requester may supply any well-formed value; keep systemUsers to real controllers",
			req:     as(t, "pod-create-alice", "Pod", kcm, admin), check: keptAsIs},
		{name: "template change (by design)", attempt: "a controller changes a Deployment's template value",
			defence: "rule 7: trusted requesters may; the value must be valid", req: workloadUpdate(t, "Deployment", rsc, aliceValue, admin), check: keptAsIs},
		{name: "bypassControllers off", attempt: "the same pod where controllers are not trusted",
			defence: "rule 1: replaced with the controller's identity", req: fixture(t, "pod-create-replicaset-controller"),
			settings: noControllersSettings, check: replacedBy("Pod", rsc)},
		{name: "invalid value", attempt: "a controller copies a value YuniKorn would read as nobody ({})",
			defence: "the strict validator: rejected", req: as(t, "pod-create-alice", "Pod", rsc, "{}"), check: refused(invalidValue)},
	}
}

func systemWorkloadAttacks(t *testing.T) []attackCase {
	t.Helper()
	forgedRS := as(t, "replicaset-create-deployment-controller", "ReplicaSet", nil, bobValue)
	forgedRS["userInfo"] = fixture(t, "replicaset-create-deployment-controller")["userInfo"]
	return []attackCase{
		{name: "replicaset from the deployment controller (by design)", attempt: "a ReplicaSet created by the deployment controller carries a value",
			defence: "rule 4: never mutated or rejected; its template came from a Deployment already handled, and changing it loops (YUNIKORN-1627)",
			req:     forgedRS, check: keptAsIs},
		{name: "also with bypassControllers off", attempt: "the same where controllers are not trusted",
			defence: "rule 4 whatever bypassControllers says: the deployment controller would otherwise create ReplicaSets forever",
			req:     forgedRS, settings: noControllersSettings, check: keptAsIs},
		{name: "also in reject mode", attempt: "the same where forged values are rejected",
			defence: "rule 4: rejecting would stop every rollout", req: forgedRS, settings: `{"bypassControllers":false,"onUntrustedAnnotation":"reject"}`,
			check: keptAsIs},
		{name: "job from the cronjob controller (by design)", attempt: "a Job created by the cronjob controller carries the CronJob's value",
			defence: "rule 4: kept", req: fixture(t, "job-create-cronjob-controller"), check: keptAsIs},
		{name: "invalid value from a trusted system user", attempt: "the deployment controller's ReplicaSet carries {\"user\":\"\"}",
			defence: "rule 4: a trusted system user's value is still validated", req: as(t, "replicaset-create-deployment-controller", "ReplicaSet",
				fixture(t, "replicaset-create-deployment-controller")["userInfo"].(map[string]any), `{"user":""}`),
			check: refused("annotation in spec.template.metadata is not valid")},
		{name: "not for pods", attempt: "a system user, not trusted (bypassControllers off), creates a pod naming alice",
			defence: "rule 4 covers workloads only: the pod is stamped with the controller", req: as(t, "pod-create-alice", "Pod", kcm, aliceValue),
			settings: noControllersSettings, check: replacedBy("Pod", kcm)},
	}
}

func subresourceAttacks(t *testing.T) []attackCase {
	t.Helper()
	status := func(user map[string]any, value any) map[string]any {
		req := fixture(t, "pod-update-status")
		req["userInfo"] = user
		switch value {
		case nil:
		case "-":
			setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, nil)
		default:
			setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, value)
		}
		return req
	}
	ephemeral := func(user map[string]any, value any) map[string]any {
		req := status(user, value)
		req["subResource"] = "ephemeralcontainers"
		spec := path(req, "object", "spec").(map[string]any)
		spec["ephemeralContainers"] = []any{map[string]any{"name": "debugger", "image": "busybox"}}
		return req
	}
	binding := fixture(t, "binding-create-forged")
	return []attackCase{
		{name: "pods/status changes it", attempt: "bob, allowed to update pods/status, changes the annotation there (status updates may change metadata)",
			defence: "rule 5 applies to every update whose object is a Pod, if the webhook rules send pods/status", req: status(bob, bobValue), check: refused(cannotChange)},
		{name: "pods/status removes it", attempt: "the same, removing it", defence: "rule 5", req: status(bob, "-"), check: refused(cannotChange)},
		{name: "pods/status by a controller", attempt: "a controller changes it through pods/status", defence: "rule 5: nobody is exempt",
			req: status(kcm, bobValue), check: refused(cannotChange)},
		{name: "pods/ephemeralcontainers changes it", attempt: "bob adds a debug container and changes the annotation in the same update",
			defence: "rule 5", req: ephemeral(bob, bobValue), check: refused(cannotChange)},
		{name: "pods/ephemeralcontainers without change", attempt: "a debug container alone", defence: "any other change to a pod passes",
			req: ephemeral(bob, nil), check: keptAsIs},
		{name: "pods/binding", attempt: "bob, allowed to create pods/binding, binds alice's unscheduled pod with a Binding carrying the annotation " +
			"(the API server copies a Binding's annotations onto the pod, with no Pod admission)",
			defence: "rule 10: a Binding that holds the annotation key is refused, whoever sends it", req: binding, check: refused(bindingRefusal)},
		{name: "bindings", attempt: "the same through the older top-level bindings resource", defence: "rule 10",
			req: fixture(t, "bindings-create-forged"), check: refused(bindingRefusal)},
		{name: "pods/binding by the scheduler", attempt: "a scheduler binds a pod, without annotations", defence: "rule 10: accepted unchanged",
			req: fixture(t, "binding-create-scheduler"), check: keptAsIs},
		{name: "deployments/scale", attempt: "a Scale update", defence: "no template in it: accepted unchanged",
			req: fixture(t, "deployment-scale"), check: keptAsIs},
	}
}

func otherGroupAttacks(t *testing.T) []attackCase {
	t.Helper()
	regroup := func(name, kind, group string) map[string]any {
		req := as(t, name, kind, bob, aliceValue)
		req["kind"].(map[string]any)["group"] = group
		return req
	}
	batchBeta := as(t, "cronjob-create-alice", "CronJob", bob, aliceValue)
	batchBeta["kind"].(map[string]any)["version"] = "v1beta1"
	return []attackCase{
		{name: "Job of example.com (by design)", attempt: "bob creates example.com/v1 Job (a custom resource) whose template names alice",
			defence: "not ours: accepted unchanged. Its pods, created by the CRD's operator, are stamped on CREATE like any pod",
			req:     regroup("job-create-alice", "Job", "example.com"), check: keptAsIs},
		{name: "Deployment of the core group", attempt: "a Deployment kind without the apps group",
			defence: "no such resource in Kubernetes: not ours, accepted unchanged", req: regroup("deployment-create-alice", "Deployment", ""), check: keptAsIs},
		{name: "CronJob of batch/v1beta1", attempt: "a CronJob of an older version of the batch group",
			defence: "matched on group and kind, not version: replaced", req: batchBeta, check: replacedBy("CronJob", bob)},
	}
}

func modeAttacks(t *testing.T) []attackCase {
	t.Helper()
	var attacks []attackCase
	for _, mode := range []string{"", ModeReplace, ModeReject} {
		settings := ""
		label := "default"
		if mode != "" {
			settings, label = `{"onUntrustedAnnotation":"`+mode+`"}`, mode
		}
		create := replacedBy("Pod", bob)
		update := restoredTo("StatefulSet", "annotations", AnnotationKey, aliceValue)
		if mode == ModeReject {
			create, update = refused(bobMaySet), refused(bobMayChange)
		}
		attacks = append(attacks,
			attackCase{name: label + ": create", attempt: "bob forges alice on a pod", defence: "rule 1 in mode " + label,
				req: as(t, "pod-create-alice", "Pod", bob, aliceValue), settings: settings, check: create},
			attackCase{name: label + ": template update", attempt: "bob edits alice's StatefulSet template", defence: "rule 8 in mode " + label,
				req: workloadUpdate(t, "StatefulSet", bob, aliceValue, bobValue), settings: settings, check: update},
			attackCase{name: label + ": pod update", attempt: "bob changes a running pod's value", defence: "rule 5 rejects in every mode",
				req: podUpdate(t, bob, bobValue), settings: settings, check: refused(cannotChange)},
		)
	}
	return append(attacks, attackCase{
		name: "unknown mode", attempt: `settings say onUntrustedAnnotation: "ignore"`,
		defence: "invalid settings fail closed: every request is rejected with 400 (and policy-server refuses to start)",
		req:     as(t, "pod-create-alice", "Pod", bob, aliceValue), settings: `{"onUntrustedAnnotation":"ignore"}`,
		check: refused(`onUntrustedAnnotation: "ignore" is not a valid mode`),
	})
}

func sortedKinds() []string {
	return []string{"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicationController"}
}

// ------------------------------------------------------------------------------------------------ tests

// attackClasses is the catalogue: each class of attack with the fewest cases it may have, so that a
// class that loses its cases is noticed.
var attackClasses = []struct {
	name    string
	attacks func(*testing.T) []attackCase
	min     int
}{
	{"ForgedAnnotationOnEveryKind", forgedAnnotationAttacks, 16},
	{"WorkloadTemplateUpdate", workloadTemplateAttacks, 28},
	{"LegacyLabel", legacyLabelAttacks, 11},
	{"LookalikeServiceAccountNamespace", lookalikeNamespaceAttacks, 7},
	{"RegexMetacharacters", regexMetacharacterAttacks, 21},
	{"CaseVariants", caseVariantAttacks, 6},
	{"AmbiguousSuppliedValue", ambiguousValueAttacks, 13},
	{"EscapedKeys", escapedKeyAttacks, 11},
	{"RemovingOrEmptyingTheAnnotation", removalAttacks, 12},
	{"AnnotationSizeLimit", sizeLimitAttacks, 6},
	{"TrustedControllerNamesAnotherUser", trustedControllerAttacks, 5},
	{"WorkloadCreatedBySystemUser", systemWorkloadAttacks, 6},
	{"PodSubresources", subresourceAttacks, 7},
	{"KindsOfOtherGroups", otherGroupAttacks, 3},
	{"OnUntrustedAnnotationModes", modeAttacks, 10},
}

// TestAttack runs every class of the catalogue, each as a subtest (TestAttack/EscapedKeys).
func TestAttack(t *testing.T) {
	total := 0
	for _, class := range attackClasses {
		attacks := class.attacks(t)
		if len(attacks) < class.min {
			t.Errorf("%s: %d attacks, want at least %d", class.name, len(attacks), class.min)
		}
		total += len(attacks)
		t.Run(class.name, func(t *testing.T) { runAttacks(t, attacks) })
	}
	t.Logf("%d attacks in %d classes", total, len(attackClasses))
}

// TestAttack_FoundDeviations holds the deviations from docs/rules.md found while writing the catalogue, now fixed:
// regression tests.
func TestAttack_FoundDeviations(t *testing.T) {
	t.Run("an untrusted requester's own stamp is re-emitted as a mutation", func(t *testing.T) {
		// kubectl create job --from=cronjob/nightly copies the CronJob's template, stamp included, on the
		// client: the owner supplies exactly the value the policy would write. docs/rules.md "Host protocol": only
		// emit mutated_object when something changed (the host's diff is empty; the warning is wrong).
		resp, _ := evaluateReq(t, as(t, "pod-create-alice", "Pod", bob, bobValue), "")
		if !resp.Accepted {
			t.Fatalf("rejected: %s", resp.Message)
		}
		if len(resp.MutatedObject) != 0 || len(resp.Warnings) != 0 {
			t.Fatalf("mutated_object identical to request.object, with the warning %q", resp.Warnings)
		}
	})
	t.Run("lone surrogate escapes hide a change of a running pod's annotation", func(t *testing.T) {
		// gjson decodes \ud800\u0041 as one U+FFFD and drops the A; encoding/json, which YuniKorn and the API
		// server use, reads U+FFFD then A. Not reachable in a cluster: the API server sends the annotation as
		// UTF-8, never as escapes, and policy-server's serde_json refuses lone surrogates.
		resp, _ := evaluateRaw(t, `{"request":{"operation":"UPDATE","kind":{"group":"","kind":"Pod"},"userInfo":{"username":"bob"},`+
			`"object":{"metadata":{"annotations":{"`+AnnotationKey+`":"{\"user\":\"\ud800\u0042lice\"}"}}},`+
			`"oldObject":{"metadata":{"annotations":{"`+AnnotationKey+`":"{\"user\":\"\ud800\u0041lice\"}"}}}},"settings":{}}`)
		expectRejected(t, resp, cannotChange)
	})
}
