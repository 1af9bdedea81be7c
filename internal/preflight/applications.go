package preflight

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// The application check reads no policy: it says how YuniKorn groups the pods of the input into applications
// today and whose user each shared application is charged to. YuniKorn reads an application's user once,
// from the first pod it sees with that application ID; every later pod with the same ID joins as a task,
// whatever its own annotation says (docs/yunikorn.md "Limits the measurements show"). A pod that names no
// application joins its namespace's generated one, yunikorn-<namespace>-autogen, unless YuniKorn's
// admissionController.filtering.generateUniqueAppId is true. It also lists the gang applications whose
// placeholder pods carry another user.info than their originator: after a scheduler restart YuniKorn may read
// the application's user from a placeholder (docs/yunikorn.md, scenario 12; docs/rules.md, rule 16).

// GenerateUniqueAppIDKey is YuniKorn's configuration key (in the ConfigMaps yunikorn-defaults and
// yunikorn-configs) that gives every pod without an application ID its own application.
const GenerateUniqueAppIDKey = "admissionController.filtering.generateUniqueAppId"

// The markers of a placeholder pod (k8shim constants).
const (
	// PlaceholderAnnotation marks a placeholder pod since YuniKorn 1.6 (AnnotationPlaceholderFlag, YUNIKORN-2503).
	PlaceholderAnnotation = "internal.yunikorn.apache.org/placeholder"
	// OldPlaceholderAnnotation and OldPlaceholderLabel mark one in YuniKorn 1.4 and 1.5; later versions still
	// read them when the new annotation is absent.
	OldPlaceholderAnnotation = "yunikorn.apache.org/placeholder"
	OldPlaceholderLabel      = "placeholder"
)

// Applications is the application part of a preflight report.
type Applications struct {
	// GenerateUniqueAppID is YuniKorn's setting as the ConfigMaps give it (false when neither sets it).
	GenerateUniqueAppID bool `json:"generateUniqueAppId"`
	// Source says where the setting came from: a ConfigMap's namespace/name, or "default".
	Source string `json:"source"`
	// Shared lists the applications whose pods carry more than one user: all of them are charged to Charged.
	Shared []SharedApplication `json:"sharedApplications"`
	// Gangs lists the gang applications whose placeholders carry another user.info than their originator.
	Gangs []GangApplication `json:"gangApplications"`
}

// GangApplication is a gang application some of whose placeholder pods (created by YuniKorn's scheduler
// under its own account from the originator's task groups) carry another user.info value than the originator
// pod, or none. After a scheduler restart YuniKorn may take the application's user from a placeholder.
type GangApplication struct {
	Namespace     string `json:"namespace"`
	ApplicationID string `json:"applicationId"`
	// OriginatorPod is the application's first pod that is not a placeholder (by creation time), Originator
	// its user.info value ("" for none).
	OriginatorPod string `json:"originatorPod"`
	Originator    string `json:"originator"`
	// Placeholders maps each other value the placeholders carry ("" for none) to how many carry it.
	Placeholders map[string]int `json:"placeholders"`
}

// SharedApplication is an application ID that pods of different users share.
type SharedApplication struct {
	Namespace     string `json:"namespace"`
	ApplicationID string `json:"applicationId"`
	// Generated is true for a namespace's generated application (no ID on the pods).
	Generated bool `json:"generated"`
	// Charged is the user of the first pod (by creation time), whom YuniKorn charges for every pod.
	Charged  string `json:"charged"`
	FirstPod string `json:"firstPod"`
	// Others maps each other user to how many of the application's pods carry them.
	Others map[string]int `json:"others"`
}

// ApplicationsOf reads the ConfigMaps named yunikorn-defaults and yunikorn-configs (the latter wins, as in
// YuniKorn) and the pods scheduled by YuniKorn (schedulerName yunikorn) among items.
func ApplicationsOf(items []Object) Applications {
	out := Applications{}
	out.GenerateUniqueAppID, out.Source = uniqueAppIDSetting(items)
	apps, generated := members(items, out.GenerateUniqueAppID)
	for key, ms := range apps {
		sort.Slice(ms, func(i, j int) bool {
			if ms[i].created != ms[j].created {
				return ms[i].created < ms[j].created
			}
			return ms[i].order < ms[j].order
		})
		if g, ok := gang(key, ms); ok {
			out.Gangs = append(out.Gangs, g)
		}
		others := map[string]int{}
		for _, m := range ms[1:] {
			if m.user != ms[0].user {
				others[m.user]++
			}
		}
		if len(others) == 0 {
			continue
		}
		out.Shared = append(out.Shared, SharedApplication{Namespace: key[0], ApplicationID: key[1], Generated: generated[key],
			Charged: ms[0].user, FirstPod: ms[0].pod, Others: others})
	}
	sort.Slice(out.Shared, func(i, j int) bool {
		a, b := out.Shared[i], out.Shared[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.ApplicationID < b.ApplicationID
	})
	sort.Slice(out.Gangs, func(i, j int) bool {
		a, b := out.Gangs[i], out.Gangs[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.ApplicationID < b.ApplicationID
	})
	return out
}

// gang compares the user.info values of an application's placeholders with its originator's: the first of its
// pods (ms, sorted by creation) that is not a placeholder. No placeholder differs, or no originator: false.
func gang(key [2]string, ms []member) (GangApplication, bool) {
	g := GangApplication{Namespace: key[0], ApplicationID: key[1], Placeholders: map[string]int{}}
	found := false
	for _, m := range ms {
		if !m.placeholder {
			g.OriginatorPod, g.Originator, found = m.pod, m.value, true
			break
		}
	}
	if !found {
		return g, false
	}
	for _, m := range ms {
		if m.placeholder && m.value != g.Originator {
			g.Placeholders[m.value]++
		}
	}
	return g, len(g.Placeholders) > 0
}

// isPlaceholder reads a pod's placeholder marker as YuniKorn 1.8 does (k8shim GetPlaceholderFlagFromPodSpec):
// the annotation internal.yunikorn.apache.org/placeholder (YuniKorn 1.6 and later), else the annotation
// yunikorn.apache.org/placeholder, else the label placeholder (what 1.4 and 1.5 write); the first that parses as
// a boolean decides.
func isPlaceholder(meta object) bool {
	labels, _ := meta["labels"].(object)
	annotations, _ := meta["annotations"].(object)
	for _, v := range []any{annotations[PlaceholderAnnotation], annotations[OldPlaceholderAnnotation], labels[OldPlaceholderLabel]} {
		if b, err := strconv.ParseBool(str(v)); err == nil {
			return b
		}
	}
	return false
}

// uniqueAppIDSetting is generateUniqueAppId as YuniKorn reads it (yunikorn-configs over yunikorn-defaults,
// false when unset or not a boolean) and where it came from.
func uniqueAppIDSetting(items []Object) (on bool, source string) {
	source = "default"
	for _, name := range []string{"yunikorn-defaults", "yunikorn-configs"} {
		for _, it := range items {
			meta, _ := it["metadata"].(object)
			if str(it["kind"]) != "ConfigMap" || str(meta["name"]) != name {
				continue
			}
			data, _ := it["data"].(object)
			if v, ok := data[GenerateUniqueAppIDKey].(string); ok {
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				on, source = err == nil && b, str(meta["namespace"])+"/"+name
			}
		}
	}
	return on, source
}

type member struct {
	pod, user   string
	value       string // the user.info annotation, "" for none
	placeholder bool
	created     int64 // whole seconds, as YuniKorn orders pods on recovery
	order       int
}

// members groups the YuniKorn pods of items by namespace and application ID; generated marks the
// namespaces' generated applications.
func members(items []Object, unique bool) (apps map[[2]string][]member, generated map[[2]string]bool) {
	apps, generated = map[[2]string][]member{}, map[[2]string]bool{}
	for i, it := range items {
		meta, _ := it["metadata"].(object)
		spec, _ := it["spec"].(object)
		if str(it["kind"]) != "Pod" || str(spec["schedulerName"]) != "yunikorn" {
			continue
		}
		ns := str(meta["namespace"])
		id := applicationID(meta)
		if id == "" {
			if unique {
				continue // an application of its own
			}
			id = generatedID(ns)
			generated[[2]string{ns, id}] = true
		}
		key := [2]string{ns, id}
		apps[key] = append(apps[key], member{pod: str(meta["name"]), user: podUser(meta), value: annotation(meta),
			placeholder: isPlaceholder(meta), created: created(meta), order: i})
	}
	return apps, generated
}

// applicationID is the ID YuniKorn reads from a pod, in its order (v1.8: the canonical label first), or "".
func applicationID(meta object) string {
	labels, _ := meta["labels"].(object)
	annotations, _ := meta["annotations"].(object)
	for _, v := range []any{labels["yunikorn.apache.org/app-id"], annotations["yunikorn.apache.org/app-id"],
		labels["applicationId"], labels["spark-app-selector"]} {
		if s := str(v); s != "" {
			return s
		}
	}
	return ""
}

// generatedID is YuniKorn's generated application ID of a namespace (formatted with %.63s).
func generatedID(namespace string) string {
	id := "yunikorn-" + namespace + "-autogen"
	if len(id) > 63 {
		id = id[:63]
	}
	return id
}

// podUser is the user YuniKorn reads from a pod: the annotation's user (invalid JSON: nobody), else the legacy
// label, else nobody.
func podUser(meta object) string {
	if v := annotation(meta); v != "" {
		var ui struct {
			User string `json:"user"`
		}
		if json.Unmarshal([]byte(v), &ui) != nil || ui.User == "" {
			return "nobody"
		}
		return ui.User
	}
	labels, _ := meta["labels"].(object)
	if u := str(labels["yunikorn.apache.org/username"]); u != "" {
		return u
	}
	return "nobody"
}

func created(meta object) int64 {
	s := str(meta["creationTimestamp"])
	// RFC 3339 in UTC, as the API server writes it: comparing the text compares the seconds.
	if len(s) < 19 {
		return 0
	}
	n, _ := strconv.ParseInt(strings.NewReplacer("-", "", "T", "", ":", "").Replace(s[:19]), 10, 64)
	return n
}
