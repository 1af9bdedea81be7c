package preflight

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as yunikorn-user-info-preflight shows it: a table of the findings with the
// count of each outcome, then YuniKorn's applications of the same input (see ApplicationsOf), then what the
// policy does to the placeholders of each scheduler account (see Schedulers) and which gang applications'
// placeholders carry another identity than their originator.
func WriteText(w io.Writer, findings []Finding, items []Object, schedulers []Scheduler) {
	writeFindings(w, findings)
	apps := ApplicationsOf(items)
	writeApplications(w, apps)
	writeGangs(w, schedulers, apps.Gangs)
}

// writeGangs says whether the policy lets each scheduler account give placeholders their originator's identity,
// and lists the gang applications whose placeholders carry another one today.
func writeGangs(w io.Writer, schedulers []Scheduler, gangs []GangApplication) {
	fmt.Fprintln(w)
	for _, s := range schedulers {
		fmt.Fprintf(w, "YuniKorn's scheduler: %s (%s)\n  its placeholders: %s: %s", s.Account, s.Source, s.Outcome, s.Why)
		if s.PlaceholdersWillCarry != "" {
			fmt.Fprintf(w, "; they will carry %s", s.PlaceholdersWillCarry)
		}
		fmt.Fprintln(w)
	}
	if len(gangs) == 0 {
		fmt.Fprintln(w, "no gang application of the input's YuniKorn pods has placeholders with another identity than its originator")
		return
	}
	fmt.Fprintln(w, "gang applications whose placeholders carry another identity than their originator:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tAPPLICATION\tORIGINATOR (POD)\tPLACEHOLDERS")
	for _, g := range gangs {
		values := make([]string, 0, len(g.Placeholders))
		for v := range g.Placeholders {
			values = append(values, v)
		}
		sort.Strings(values)
		// users, unless one of them is the originator's (the values differ elsewhere): then the values
		name := identity
		for _, v := range values {
			if identity(v) == identity(g.Originator) {
				name = rawIdentity
			}
		}
		others := make([]string, len(values))
		for i, v := range values {
			others[i] = fmt.Sprintf("%s: %d", name(v), g.Placeholders[v])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%s\n", g.Namespace, g.ApplicationID, name(g.Originator), g.OriginatorPod, strings.Join(others, ", "))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  after a scheduler restart YuniKorn may take such an application's user from a placeholder: trust the scheduler's\n"+
		"  account in systemUsers (above) so that new placeholders carry their originator's user.info; existing placeholders\n"+
		"  keep their value until the gang is recreated (its originator pod created again through the policy)")
}

// identity is the user a user.info value names, "none" for no value, the value itself when it names none.
// rawIdentity is the value itself, "none" for no value.
func identity(v string) string {
	if v == "" {
		return "none"
	}
	if u := valueUser(v); u != "" {
		return u
	}
	return rawIdentity(v)
}

func rawIdentity(v string) string {
	if v == "" {
		return "none"
	}
	return v
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
