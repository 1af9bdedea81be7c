package policy

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/walk"
)

// CustomWorkload is one entry of the customWorkloads setting: an operator's custom resource whose
// annotation maps the operator copies onto its pods (rules 11-13).
type CustomWorkload struct {
	APIGroup        string
	Kind            string
	AnnotationPaths []string
	GuardPaths      []string
	annotations     []walk.Path
	guards          []walk.Path
}

// customWorkloadKeys are the keys of an entry, in the order messages list them.
var customWorkloadKeys = [...]string{"apiGroup", "kind", "annotationPaths", "guardPaths"}

// CustomWorkloads parses and checks every declared kind; the problems name customWorkloads[i] (and the
// path's list and index).
func (s *Settings) CustomWorkloads() ([]CustomWorkload, []string) {
	return parseCustomWorkloads(string(s.customWorkloads), "", "", false)
}

// customKind returns the declared kind for a request's group and kind, parsing only that entry's paths;
// nil when the kind is not declared.
func (s *Settings) customKind(group, kind string) (*CustomWorkload, string) {
	if s.customWorkloads == "" {
		return nil, ""
	}
	found, problems := parseCustomWorkloads(string(s.customWorkloads), group, kind, true)
	if len(problems) > 0 {
		return nil, strings.Join(problems, "; ")
	}
	if len(found) == 0 {
		return nil, ""
	}
	return &found[0], ""
}

// parseCustomWorkloads reads the setting's text; with only, just the entry of group and kind.
func parseCustomWorkloads(text, group, kind string, only bool) ([]CustomWorkload, []string) {
	if text == "" {
		return nil, nil
	}
	list := gjson.Parse(text)
	if !list.IsArray() {
		return nil, []string{"customWorkloads: must be a list of {apiGroup, kind, annotationPaths, guardPaths} " +
			"objects, not " + jsonTypeName(list)}
	}
	var out []CustomWorkload
	var problems []string
	i := -1
	list.ForEach(func(_, entry gjson.Result) bool {
		i++
		if only {
			g, k := entry.Get("apiGroup"), entry.Get("kind")
			if g.Type != gjson.String || k.Type != gjson.String || g.Str != group || k.Str != kind {
				return true
			}
		}
		at := "customWorkloads[" + strconv.Itoa(i) + "]"
		w, entryProblems := parseCustomWorkload(entry, at)
		problems = append(problems, entryProblems...)
		if len(entryProblems) > 0 {
			return true
		}
		if !only {
			for j := range out {
				if out[j].APIGroup == w.APIGroup && out[j].Kind == w.Kind {
					problems = append(problems, at+": "+groupKind(w.APIGroup, w.Kind)+" is declared twice (first at "+
						"customWorkloads["+strconv.Itoa(j)+"]): give each kind once, with all its paths")
					return true
				}
			}
		}
		out = append(out, w)
		return !only
	})
	return out, problems
}

// parseCustomWorkload reads one entry; at names it in messages.
func parseCustomWorkload(entry gjson.Result, at string) (CustomWorkload, []string) {
	var w CustomWorkload
	var problems []string
	problem := func(key, msg string) { problems = append(problems, key+": "+msg) }
	if !entry.IsObject() {
		problem(at, "must be an object with apiGroup, kind and annotationPaths (and optionally guardPaths), not "+
			jsonTypeName(entry))
		return w, problems
	}
	var seen [len(customWorkloadKeys)]bool
	var values [len(customWorkloadKeys)]gjson.Result
	entry.ForEach(func(key, value gjson.Result) bool {
		for i, name := range customWorkloadKeys {
			if key.Str == name {
				if seen[i] {
					problem(at, keyTwice(name)+": give it once")
					return false
				}
				seen[i], values[i] = true, value
				return true
			}
		}
		problem(at, "unknown key "+strconv.Quote(key.Str)+": valid keys are "+strings.Join(customWorkloadKeys[:], ", "))
		return false
	})
	if len(problems) > 0 {
		return w, problems
	}
	group, kind, annotationPaths, guardPaths := values[0], values[1], values[2], values[3]
	switch {
	case group.Type != gjson.String:
		// "" is the core group (e.g. PodTemplate), so it must be given, but may be empty.
		problem(at+".apiGroup", `must be a string (the custom resource's API group, such as "sparkoperator.k8s.io"), not `+
			jsonTypeName(group))
	default:
		w.APIGroup = group.Str
	}
	switch {
	case kind.Type != gjson.String || kind.Str == "":
		problem(at+".kind", `must be a non-empty string (the custom resource's kind, such as "SparkApplication"), not `+
			jsonTypeName(kind))
	default:
		w.Kind = kind.Str
	}
	if len(problems) == 0 && tableKind(w.APIGroup, w.Kind) != nil {
		problem(at, groupKind(w.APIGroup, w.Kind)+" is handled by the policy itself and may not be declared: "+
			"remove this entry")
	}
	switch {
	case !annotationPaths.IsArray():
		problem(at+".annotationPaths", `must be a non-empty list of paths, such as ["spec.driver>annotations"], not `+
			jsonTypeName(annotationPaths))
	case len(annotationPaths.Array()) == 0:
		problem(at+".annotationPaths", "is empty: name at least one annotations map the operator copies onto its pods")
	default:
		w.AnnotationPaths, w.annotations = parsePaths(annotationPaths, at+".annotationPaths", false, problem)
	}
	if guardPaths.Type != gjson.Null && guardPaths.Exists() && !guardPaths.IsArray() {
		problem(at+".guardPaths", "must be a list of paths, such as [\"spec.sparkConf\"], not "+jsonTypeName(guardPaths))
	}
	w.GuardPaths, w.guards = parsePaths(guardPaths, at+".guardPaths", true, problem)
	nestedPathProblems(&w, at, problem)
	return w, problems
}

// nestedPathProblems refuses an annotation path that names a map inside another path's map: both would
// edit the same bytes.
func nestedPathProblems(w *CustomWorkload, at string, problem func(key, msg string)) {
	if len(w.annotations) < 2 {
		return
	}
	first := make(map[string]int, len(w.annotations))
	for k := range w.annotations {
		if key := w.annotations[k].SegmentsKey(len(w.annotations[k].Segments)); first[key] == 0 {
			first[key] = k + 1
		}
	}
	for j := range w.annotations {
		for n := 1; n < len(w.annotations[j].Segments); n++ {
			if k := first[w.annotations[j].SegmentsKey(n)] - 1; k >= 0 {
				problem(at+".annotationPaths["+strconv.Itoa(j)+"]", strconv.Quote(w.AnnotationPaths[j])+
					" lies inside the map of annotationPaths["+strconv.Itoa(k)+"] ("+strconv.Quote(w.AnnotationPaths[k])+
					"): an annotations map holds strings, not other maps")
				break
			}
		}
	}
}

// parsePaths reads a list of path strings (a non-list is reported by the caller).
func parsePaths(list gjson.Result, at string, guard bool, problem func(key, msg string)) ([]string, []walk.Path) {
	if !list.IsArray() {
		return nil, nil
	}
	n := 0
	list.ForEach(func(_, _ gjson.Result) bool {
		n++
		return true
	})
	texts, paths := make([]string, 0, n), make([]walk.Path, 0, n)
	j := -1
	list.ForEach(func(_, item gjson.Result) bool {
		j++
		key := func() string { return at + "[" + strconv.Itoa(j) + "]" }
		if item.Type != gjson.String {
			problem(key(), "must be a string (a path such as spec.driver>annotations), not "+jsonTypeName(item))
			return true
		}
		p, why := walk.Parse(item.Str, guard, false)
		if why != "" {
			problem(key(), strconv.Quote(item.Str)+": "+why)
			return true
		}
		texts, paths = append(texts, item.Str), append(paths, p)
		return true
	})
	return texts, paths
}

func groupKind(group, kind string) string {
	if group == "" {
		return "the core kind " + kind
	}
	return group + " " + kind
}

// jsonTypeName names a JSON value's type for messages.
func jsonTypeName(v gjson.Result) string {
	switch {
	case !v.Exists():
		return "missing"
	case v.Type == gjson.Null:
		return "null"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True || v.Type == gjson.False:
		return "a boolean"
	case v.IsArray():
		return "a list"
	}
	return "an object"
}

// hasCustomWorkloads reports whether a settings object declares any kind, without decoding it.
func hasCustomWorkloads(settings gjson.Result) bool {
	if !settings.IsObject() {
		return false
	}
	found := false
	settings.ForEach(func(key, value gjson.Result) bool {
		if key.Str == "customWorkloads" && value.Type != gjson.Null {
			found = true
		}
		return !found
	})
	return found
}
