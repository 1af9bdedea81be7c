package policy

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// Rules 15 and 16: task groups.

// k8shimTaskGroup is the part of YuniKorn's TaskGroup that placeholders take their identity from, decoded
// as YuniKorn decodes it (encoding/json: names matched ignoring case, the last duplicate wins).
type k8shimTaskGroup struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// podTaskGroups is a Pod CREATE by who with the task-groups annotation set to groups (JSON text).
func podTaskGroups(t *testing.T, who map[string]any, groups string) map[string]any {
	t.Helper()
	req := fixture(t, "pod-create-alice")
	if who != nil {
		req["userInfo"] = who
	}
	setEntry(object(req, "object"), "Pod", "annotations", TaskGroupsKey, groups)
	return req
}

var bobUser = map[string]any{"username": "bob", "groups": []string{"qa", "system:authenticated"}}

// answeredGroups decodes the task groups of the answer's object at kind's target, as YuniKorn does.
func answeredGroups(t *testing.T, resp response, kind string) (string, []k8shimTaskGroup) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(resp.MutatedObject, &obj); err != nil {
		t.Fatalf("%v: %s", err, resp.MutatedObject)
	}
	md, _ := path(obj, templatePath(kind)...).(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	text, _ := ann[TaskGroupsKey].(string)
	var groups []k8shimTaskGroup
	if err := json.Unmarshal([]byte(text), &groups); err != nil {
		t.Fatalf("YuniKorn cannot read the task groups %q: %v", text, err)
	}
	value, _ := ann[AnnotationKey].(string)
	return value, groups
}

func TestRule16_EveryTaskGroupCarriesThePodsIdentity(t *testing.T) {
	groups := `[{"name":"a","minMember":1},{"name":"b","annotations":null},{"name":"c","annotations":{"x":"y"}},` +
		`{"name":"d","annotations":{}},{"name":"e","annotations":{"` + AnnotationKey + `":` + rawjson.Quote(bobValue) + `}}]`
	resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), "")
	expectAllowed(t, resp)
	value, got := answeredGroups(t, resp, "Pod")
	if value != bobValue || len(got) != 5 {
		t.Fatalf("value %q, groups %+v", value, got)
	}
	for _, g := range got {
		if g.Annotations[AnnotationKey] != bobValue {
			t.Errorf("group %s: %v", g.Name, g.Annotations)
		}
	}
	if got[2].Annotations["x"] != "y" || len(resp.Warnings) != 0 {
		t.Errorf("other annotations kept, no warning: %+v %v", got[2], resp.Warnings)
	}
	// a built-in workload's template, and a declared kind's map, the same way
	req := fixture(t, "deployment-create-alice")
	setEntry(object(req, "object"), "Deployment", "annotations", TaskGroupsKey, `[{"name":"a"}]`)
	resp, _ = evaluateReq(t, req, "")
	if _, got := answeredGroups(t, resp, "Deployment"); got[0].Annotations[AnnotationKey] != aliceValue {
		t.Errorf("deployment: %+v", got)
	}
	obj := `{"spec":{"driver":{"annotations":{"` + TaskGroupsKey + `":` + rawjson.Quote(`[{"name":"a"}]`) + `}}}}`
	resp, _ = evaluateReq(t, sparkApp(t, asBob, obj, ""), sparkSettings)
	expectAllowed(t, resp)
	if !strings.Contains(string(resp.MutatedObject), `"`+TaskGroupsKey+`":`+rawjson.Quote(`[{"annotations":{"`+AnnotationKey+`":`+rawjson.Quote(bobValue)+`},"name":"a"}]`)) {
		t.Errorf("spark driver: %s", resp.MutatedObject)
	}
}

func TestRule16_EscapesOfBothLayersAreKept(t *testing.T) {
	odd := map[string]any{"username": `o"dd<&>\` + "\u2028", "groups": []string{`g"1`}}
	groups := `[{"name":"a\"<\u00e9>","minMember":1,"annotations":{"k":"v\\\"w"}}]`
	resp, _ := evaluateReq(t, podTaskGroups(t, odd, groups), "")
	value, got := answeredGroups(t, resp, "Pod")
	if got[0].Annotations[AnnotationKey] != value || got[0].Name != "a\"<\u00e9>" || got[0].Annotations["k"] != `v\"w` {
		t.Fatalf("value %q, groups %+v", value, got)
	}
}

func TestRule16_AnUntrustedDifferentValueIsReplacedOrRejected(t *testing.T) {
	groups := `[{"name":"a","annotations":{"` + AnnotationKey + `":` + rawjson.Quote(aliceValue) + `}}]`
	resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), "")
	if _, got := answeredGroups(t, resp, "Pod"); got[0].Annotations[AnnotationKey] != bobValue {
		t.Fatalf("replaced: %+v", got)
	}
	expectWarning(t, resp, "task groups replaced")
	resp, _ = evaluateReq(t, podTaskGroups(t, bobUser, groups), rejectSettings)
	expectRejected(t, resp, taskGroupsRefusal)
}

func TestRule16_ATrustedRequestersValidValueIsKept(t *testing.T) {
	scheduler := map[string]any{"username": "system:serviceaccount:kube-system:yunikorn"}
	groups := `[{"name":"a","annotations":{"` + AnnotationKey + `":` + rawjson.Quote(aliceValue) + `}},{"name":"b"}]`
	req := podTaskGroups(t, scheduler, groups)
	setEntry(object(req, "object"), "Pod", "annotations", AnnotationKey, bobValue)
	resp, _ := evaluateReq(t, req, "")
	_, got := answeredGroups(t, resp, "Pod")
	if got[0].Annotations[AnnotationKey] != aliceValue || got[1].Annotations[AnnotationKey] != bobValue {
		t.Fatalf("%+v", got)
	}
	req = podTaskGroups(t, scheduler, `[{"name":"a","annotations":{"`+AnnotationKey+`":"{}"}}]`)
	resp, _ = evaluateReq(t, req, "")
	expectRejected(t, resp, "task groups is not valid")
}

func TestRule16_ASystemUsersWorkloadIsNotRewritten(t *testing.T) {
	rs := fixture(t, "replicaset-create-deployment-controller")
	setEntry(object(rs, "object"), "ReplicaSet", "annotations", TaskGroupsKey, `[{"name":"a"}]`)
	resp, _ := evaluateReq(t, rs, "")
	expectAccepted(t, resp)
	if len(resp.MutatedObject) != 0 {
		t.Fatalf("rule 4: %s", resp.MutatedObject)
	}
}

func TestRule16_AWorkloadUpdateStampsNewTaskGroupsOnly(t *testing.T) {
	req := fixture(t, "deployment-update-image")
	setEntry(object(req, "object"), "Deployment", "annotations", TaskGroupsKey, `[{"name":"a"}]`)
	resp, _ := evaluateReq(t, req, "")
	_, got := answeredGroups(t, resp, "Deployment")
	if got[0].Annotations[AnnotationKey] == "" {
		t.Fatalf("%+v", got)
	}
	setEntry(object(req, "oldObject"), "Deployment", "annotations", TaskGroupsKey, `[{"name":"a"}]`)
	resp, _ = evaluateReq(t, req, "")
	expectAccepted(t, resp)
	if len(resp.MutatedObject) != 0 {
		t.Fatalf("unchanged: %s", resp.MutatedObject)
	}
}

func TestRule16_APodUpdateRewritesNothing(t *testing.T) {
	own := `{"user":"alice","groups":["devops","system:authenticated"]}` // pod-update-status's value
	for _, tc := range []struct {
		groups string
		want   string
	}{
		{`[{"name":"a","annotations":{"` + AnnotationKey + `":` + rawjson.Quote(own) + `}}]`, ""},
		{`[{"name":"a"}]`, taskGroupsRefusal},
		{`[{"name":"a","annotations":{"` + AnnotationKey + `":` + rawjson.Quote(bobValue) + `}}]`, taskGroupsRefusal},
		{`[{"name":"a","ANNOTATIONS":{}}]`, "is not plain JSON task groups"},
	} {
		req := fixture(t, "pod-update-status")
		req["userInfo"] = bobUser
		setEntry(object(req, "object"), "Pod", "annotations", TaskGroupsKey, tc.groups)
		resp, _ := evaluateReq(t, req, "")
		if tc.want == "" {
			expectAccepted(t, resp)
			continue
		}
		expectRejected(t, resp, tc.want)
		req["userInfo"] = map[string]any{"username": "system:serviceaccount:kube-system:yunikorn"}
		resp, _ = evaluateReq(t, req, "")
		expectAccepted(t, resp)
	}
}

func TestRule15_TaskGroupsThatAreNotPlainAreRefused(t *testing.T) {
	for _, groups := range []string{
		`[{"name":"a","ANNOTATIONS":{"x":"y"}}]`,
		`[{"name":"a","annotationſ":{}}]`,
		`[{"name":"a","Labels":{}}]`,
		`[{"name":"a","annotations":{"x":"y","x":"z"}}]`,
		`[{"name":"a","name":"b"}]`,
		`[{"name":"a","annotations":{"x":null}}]`,
		`[{"name":"a","labels":{"x":1}}]`,
		`[{"name":"a","annotations":[]}]`,
		`[{"name":"a\ud800"}]`,
		`[{"name":"a"}`,
		strings.Repeat("[", 40) + strings.Repeat("]", 40),
	} {
		for _, settings := range []string{"", rejectSettings} {
			resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), settings)
			if !strings.Contains(resp.Message, taskGroupsNotPlainRefusal("")) {
				t.Fatalf("%s: %+v", groups, resp.Message)
			}
		}
		// a trusted requester's value is left as it is
		resp, _ := evaluateReq(t, podTaskGroups(t, map[string]any{"username": "system:serviceaccount:kube-system:yunikorn"}, groups), "")
		expectAllowed(t, resp)
	}
	// a key given twice, in the settings' wording (keyTwice)
	resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, `[{"name":"a","name":"b"}]`), "")
	expectRejected(t, resp, taskGroupsNotPlainRefusal(`the key "name" occurs more than once in an object`))
}

func TestRule15_TheAnnotationElsewhereInTaskGroupsIsRefused(t *testing.T) {
	for _, groups := range []string{
		`[{"name":"a","labels":{"` + AnnotationKey + `":"x"}}]`,
		`[{"name":"a","nodeSelector":{"k":"` + AnnotationKey + `"}}]`,
		`[{"name":"a","annotations":{"x":"yunikorn.apache.org\/user.info"}}]`,
		`{"` + AnnotationKey + `":"x"}`,
	} {
		resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), "")
		expectRejected(t, resp, taskGroupsRefusal)
	}
	// in a guard leaf, even as a group's annotations key
	tg := rawjson.Quote(`[{"name":"tg","annotations":{"yunikorn.apache.org\/user.info":"x"}}]`)
	conf := `{"spec":{"sparkConf":{"spark.kubernetes.driver.annotation.` + TaskGroupsKey + `":` + tg + `}}}`
	resp, _ := evaluateReq(t, sparkApp(t, asBob, conf, ""), sparkSettings)
	expectRejected(t, resp, taskGroupsRefusal)
	conf = `{"spec":{"sparkConf":{"spark.kubernetes.driver.annotation.` + TaskGroupsKey + `":` + rawjson.Quote(`[{"name":"a","ANNOTATIONS":{}}]`) + `}}}`
	resp, _ = evaluateReq(t, sparkApp(t, asBob, conf, ""), sparkSettings)
	expectRejected(t, resp, taskGroupsNotPlainRefusal(""))
}

func TestRule15_ApplicationKeysAndTheLegacyLabelInTaskGroupsAreRefused(t *testing.T) {
	for _, key := range []string{"applicationId", "yunikorn.apache.org/app-id", "spark-app-selector", "yunikorn.apache.org/username"} {
		for _, m := range []string{"annotations", "labels"} {
			resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, `[{"name":"a","`+m+`":{"`+key+`":"x"}}]`), "")
			expectRejected(t, resp, taskGroupsKeyRefusal(key))
		}
	}
	// with legacy handling off, the label is an ordinary key
	resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, `[{"name":"a","labels":{"yunikorn.apache.org/username":"x"}}]`), `{"legacyUserLabel":""}`)
	expectAllowed(t, resp)
}

func TestCost_AnObjectTooLargeOnceStampedIsRefused(t *testing.T) {
	groups := "[" + strings.Repeat("{},", 32000) + "{}]" // 96 KB: each group stamped grows by ~100 bytes
	for _, settings := range []string{"", rejectSettings} {
		resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), settings)
		expectRejected(t, resp, "bytes once stamped (32002 annotation maps and task groups), more than the 3 MiB the API server accepts")
	}
}

// Beyond 62,914 task groups in a map that carries a value, a CREATE's answer cannot be under 3 MiB: the
// reading stops there.
func TestCost_ACreateWithTooManyTaskGroupsStopsAtTheBound(t *testing.T) {
	groups := "[" + strings.Repeat("{},", 500000) + "{}]" // 1.5 MB
	for _, settings := range []string{"", rejectSettings} {
		resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), settings)
		expectRejected(t, resp, tooManyGroupsRefusal)
	}
}

// The bound's premise for task groups: each group of a CREATE's answer carries at least minStampBytes.
func TestCost_EveryTaskGroupOfACreatesAnswerTakesAtLeastTheLeastStamp(t *testing.T) {
	const n = 2000
	for _, group := range []string{`{}`, `{"annotations":{}}`, `{"annotations":{"a":"b"}}`, `{"name":"g"}`} {
		groups := "[" + strings.Repeat(group+",", n-1) + group + "]"
		req := podTaskGroups(t, map[string]any{"username": "b"}, groups)
		object := mustJSON(t, req["object"])
		resp, _ := evaluateReq(t, req, "")
		expectAllowed(t, resp)
		if grown := len(resp.MutatedObject) - len(object); grown < n*minStampBytes {
			t.Errorf("%s: the answer grew by %d bytes for %d groups, less than %d each", group, grown, n, minStampBytes)
		}
	}
}

func TestCost_TheAnswersSizeIsKnownBeforeItIsWritten(t *testing.T) {
	for _, groups := range []string{
		`[{"name":"a"},{},{"annotations":null},{"annotations":{}},{"annotations":{"k":"<v>"}}]`,
		`[{"annotations":{"` + AnnotationKey + `":"x\u2028"}}, 1, "s"]`,
		`[]`,
	} {
		for _, value := range []string{aliceValue, `{"user":"<\"é\u2028>"}`} {
			rw := groupsRewrite{text: groups, value: value, over: true}
			size, _, _ := rw.stamp(nil, func(string) bool { return true })
			_, _, text := rw.stamp([]byte{}, func(string) bool { return true })
			if want := len(rawjson.Quote(string(text))); size != want {
				t.Errorf("%s with %s: counted %d, written %d", groups, value, size, want)
			}
		}
	}
}

// expectAllowed checks that a request was accepted, mutated or not.
func expectAllowed(t *testing.T, resp response) {
	t.Helper()
	if !resp.Accepted {
		t.Fatalf("want accepted, got %+v", resp)
	}
}

// A null element is nothing to a strict reader and an empty task group to YuniKorn's: not plain, so an
// untrusted requester cannot give YuniKorn a group that carries no identity (found by FuzzTaskGroups).
func TestRule15_ANullTaskGroupIsNotPlain(t *testing.T) {
	for _, groups := range []string{`[null]`, `[{"name":"a"},null]`} {
		resp, _ := evaluateReq(t, podTaskGroups(t, bobUser, groups), "")
		expectRejected(t, resp, "is not plain JSON task groups: element ")
	}
	if tg := readTaskGroups(`[{"name":"a"},null]`, ""); tg.notPlain != "element 1 is null, which YuniKorn reads as an empty task group" {
		t.Fatalf("%+v", tg)
	}
}

func TestRule15_InvalidUTF8IsNotPlain(t *testing.T) {
	if tg := readTaskGroups("[{\"name\":\"a\xff\"}]", ""); tg.notPlain != "it is not valid UTF-8" {
		t.Fatalf("%+v", tg)
	}
}

func TestCost_AStatusWriteByATrustedControllerReadsNoPath(t *testing.T) {
	// spec is the same bytes in both objects, so no path is walked: not even its bad input is seen
	obj := `{"spec":{"templates":[{"name":"a","metadata":5}]},"status":{"phase":"Running"}}`
	old := `{"spec":{"templates":[{"name":"a","metadata":5}]},"status":{"phase":"Pending"}}`
	argo := []string{"system:serviceaccount:kube-system:argo"}
	resp, _ := evaluateReq(t, workflow(t, argo, obj, old), argoWorkflowSettings)
	expectAccepted(t, resp)
	resp, _ = evaluateReq(t, workflow(t, asBob, obj, old), argoWorkflowSettings)
	expectRejected(t, resp, "metadata")
}

// An UPDATE that changes a top-level member around many templates walks both objects together: a map
// missing from both (an unchanged pair) is not recorded, and the answer is the one walking each object by
// itself gives.
func TestCost_AnUpdateRecordsNoMapMissingFromBothObjects(t *testing.T) {
	const n = 1000
	old := templates(n, `{}`)
	object := `{"spec":{"entrypoint":"b","templates":[{"metadata":{"annotations":{}}},` + old[len(`{"spec":{"templates":[{},`):]
	payload := []byte(`{"request":` + mustJSON(t, workflow(t, asBob, object, old)) + `,"settings":` + argoWorkflowSettings + `}`)
	together := newEvaluator(NewLogger(io.Discard))
	answer := together.evaluate(slices.Clone(payload)).encode()
	apart := newEvaluator(NewLogger(io.Discard))
	e, _ := apart.prepare(slices.Clone(payload))
	now, was, _, _ := e.updateMapsApart(false, false, 0)
	if answerApart := e.updateOver(&now, &was).encode(); !bytes.Equal(answer, answerApart) {
		t.Fatalf("walked together:\n%s\napart:\n%s", answer, answerApart)
	}
	if !strings.Contains(string(answer), `"accepted":true`) || strings.Contains(string(answer), "mutated_object") {
		t.Fatalf("want an acceptance without a change: %s", answer)
	}
	recorded := func(ev *Evaluator) int {
		return len(ev.evaluation.now.targets.Refs) + len(ev.evaluation.was.targets.Refs)
	}
	if got := recorded(together); got != 2 { // the map the new object holds, and its place in the old one
		t.Errorf("walked together, %d targets recorded, want 2", got)
	}
	if got := recorded(apart); got != 2*(n+1) { // and spec.podMetadata's, in each object
		t.Errorf("walked apart, %d targets recorded, want %d", got, 2*(n+1))
	}
}

// Elements an UPDATE adds are stamped as on CREATE: beyond 62,914 maps one path names in the new object
// alone, the walk stops. Maps paired with the old object's count for nothing.
func TestCost_AnUpdateAddingTooManyMapsStopsAtTheBound(t *testing.T) {
	many := templates(maxObjectBytes/minStampBytes+2, `{}`)
	changed := `{"spec":{"entrypoint":"b",` + many[len(`{"spec":{`):]
	for _, who := range [][]string{asBob, {"system:serviceaccount:kube-system:argo"}} {
		resp, _ := evaluateReq(t, workflow(t, who, many, `{"spec":{"templates":[]}}`), argoWorkflowSettings)
		expectRejected(t, resp, tooManyTargetsRefusal)
		resp, _ = evaluateReq(t, workflow(t, who, changed, many), argoWorkflowSettings)
		expectAccepted(t, resp)
	}
}

// templates is a Workflow object of n copies of template.
func templates(n int, template string) string {
	return `{"spec":{"templates":[` + strings.Repeat(template+",", n-1) + template + `]}}`
}

// Beyond 62,914 maps named by one path, a CREATE's answer cannot be under 3 MiB: the walk stops there. A
// system user's CREATE (rule 4) and an UPDATE (nothing changed, nothing stamped) are not bounded by it.
func TestCost_ACreateNamingTooManyMapsStopsAtTheBound(t *testing.T) {
	many := templates(maxObjectBytes/minStampBytes+2, `{}`)
	for _, settings := range []string{argoWorkflowSettings, strings.Replace(argoWorkflowSettings, `{"customWorkloads"`, `{"onUntrustedAnnotation":"reject","customWorkloads"`, 1)} {
		resp, _ := evaluateReq(t, workflow(t, asBob, many, ""), settings)
		expectRejected(t, resp, tooManyTargetsRefusal)
	}
	resp, _ := evaluateReq(t, workflow(t, []string{"system:serviceaccount:kube-system:argo"}, many, ""), argoWorkflowSettings)
	expectAccepted(t, resp)
	resp, _ = evaluateReq(t, workflow(t, asBob, many, many), argoWorkflowSettings)
	expectAccepted(t, resp)
}

// The bound's premise: every map of a CREATE's answer carries at least minStampBytes, however little the
// request gives it (an empty template, an empty annotation map; the requester's stamp, or the shortest
// value a trusted external may name once).
func TestCost_EveryMapOfACreatesAnswerTakesAtLeastTheLeastStamp(t *testing.T) {
	const n = 2000
	for _, template := range []string{`{}`, `{"metadata":{}}`, `{"metadata":{"annotations":{}}}`, `{"metadata":{"annotations":{"a":"b"}}}`} {
		object := templates(n, template)
		external := `{"spec":{"podMetadata":{"annotations":{"` + AnnotationKey + `":"{\"user\":\"x\"}"}},` + object[len(`{"spec":{`):]
		for _, c := range []struct {
			who      []string
			object   string
			settings string
		}{
			{[]string{"b"}, object, argoWorkflowSettings},
			{asAirflow, external, strings.Replace(argoWorkflowSettings, `{"customWorkloads"`, `{"bypassAuth":true,"externalUsers":["^airflow$"],"customWorkloads"`, 1)},
		} {
			resp, _ := evaluateReq(t, workflow(t, c.who, c.object, ""), c.settings)
			expectAllowed(t, resp)
			if grown := len(resp.MutatedObject) - len(c.object); grown < n*minStampBytes {
				t.Errorf("%s by %s: the answer grew by %d bytes for %d maps, less than %d each", template, c.who[0], grown, n, minStampBytes)
			}
		}
	}
}
