package preflight

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as yunikorn-user-info-preflight shows it: a table of the findings with the
// count of each outcome, then YuniKorn's applications of the same input (see ApplicationsOf).
func WriteText(w io.Writer, findings []Finding, items []Object) {
	writeFindings(w, findings)
	writeApplications(w, ApplicationsOf(items))
}

// writeApplications says whether namespaces share a generated application and who is charged for whose pods
// today (the input's ConfigMaps yunikorn-defaults and yunikorn-configs, and its pods with schedulerName yunikorn).
func writeApplications(w io.Writer, a Applications) {
	if a.GenerateUniqueAppID {
		fmt.Fprintf(w, "\nYuniKorn: %s is true (%s): a pod that names no application gets one of its own\n", GenerateUniqueAppIDKey, a.Source)
	} else {
		fmt.Fprintf(w, "\nYuniKorn: %s is off (%s): the pods of a namespace that name no application share\n"+
			"  yunikorn-<namespace>-autogen, charged to its first pod's user (add the ConfigMaps to the input to read them)\n",
			GenerateUniqueAppIDKey, a.Source)
	}
	if len(a.Shared) == 0 {
		fmt.Fprintln(w, "no application of the input's YuniKorn pods mixes users")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tAPPLICATION\tCHARGED TO (FIRST POD)\tPODS OF OTHER USERS")
	for _, s := range a.Shared {
		users := make([]string, 0, len(s.Others))
		for u := range s.Others {
			users = append(users, u)
		}
		sort.Strings(users)
		others := make([]string, len(users))
		for i, u := range users {
			others[i] = fmt.Sprintf("%s: %d", u, s.Others[u])
		}
		id := s.ApplicationID
		if s.Generated {
			id += " (generated)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%s\n", s.Namespace, id, s.Charged, s.FirstPod, strings.Join(others, ", "))
	}
	_ = tw.Flush()
}

// writeFindings prints a table of the findings, one object a line, and the count of each outcome.
func writeFindings(w io.Writer, findings []Finding) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tOBJECT\tOUTCOME\tPODS WILL CARRY\tWHY")
	counts := map[Outcome]int{}
	for i := range findings {
		f := &findings[i]
		counts[f.Outcome]++
		carry := f.PodsWillCarry
		if carry == "" {
			carry = "-"
		}
		var why strings.Builder
		why.WriteString(f.Why)
		for _, w := range f.Warnings {
			why.WriteString(" [warning: " + w + "]")
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", f.Namespace, f.Kind, f.Name, f.Outcome, carry, why.String())
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d objects: %d stamp, %d keep, %d refuse, %d leave-alone, %d skip\n", len(findings),
		counts[Stamp], counts[Keep], counts[Refuse], counts[LeaveAlone], counts[Skip])
}
