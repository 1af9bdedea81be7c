package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/preflight"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/webhook"
)

// preflightCommand reads the cluster's objects (kubectl get ... -o json) and prints what the policy
// will do to each on its next rollout or pod creation (see package internal/preflight).
func preflightCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var policy, output, controllers, input string
	f := &flags{}
	fs := flag.NewFlagSet("kwhost preflight", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&policy, "policy", "", "")
	f.addSettingsFlags(fs)
	fs.StringVar(&controllers, "controllers", string(preflight.ServiceAccounts), "")
	fs.StringVar(&output, "output", "text", "")
	fs.StringVar(&output, "o", "text", "")
	fs.StringVar(&input, "f", "-", "")
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, "preflight", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stderr, "preflight", fmt.Errorf("unexpected argument %q (the module goes in --policy)", fs.Arg(0)))
	case policy == "":
		return usageError(stderr, "preflight", errors.New("--policy is required"))
	case f.settingsConflict() != nil:
		return usageError(stderr, "preflight", f.settingsConflict())
	case controllers != string(preflight.ServiceAccounts) && controllers != string(preflight.SingleIdentity):
		return usageError(stderr, "preflight", fmt.Errorf("--controllers %q: want sa or single", controllers))
	case output != "text" && output != "json":
		return usageError(stderr, "preflight", fmt.Errorf("--output %q: want text or json", output))
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "kwhost preflight: %v\n", err)
		return code
	}
	settings, err := f.settings()
	if err != nil {
		return fail(exitUsage, err)
	}
	data, err := readInput(input, stdin)
	if err != nil {
		return fail(exitUsage, err)
	}
	items, err := preflight.Items(data)
	if err != nil {
		return fail(exitUsage, err)
	}

	ctx := context.Background()
	problems := &logProblems{}
	host, err := loadPolicy(ctx, policy, io.Discard, problems, webhook.DefaultEvalTimeout)
	if err != nil {
		return fail(exitStart, err)
	}
	defer host.Close(ctx)
	findings, err := preflight.Report(ctx, items, preflight.Options{Evaluator: host, Settings: settings,
		Controllers: preflight.Controllers(controllers)})
	var settingsErr *kwctl.SettingsError
	switch {
	case errors.As(err, &settingsErr):
		fmt.Fprintln(stderr, settingsErr)
		return exitSettings
	case err != nil:
		return fail(exitStart, err)
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(findings); err != nil {
			return fail(exitUsage, err)
		}
		return exitOK
	}
	printFindings(stdout, findings)
	printApplications(stdout, preflight.ApplicationsOf(items))
	return exitOK
}

// printApplications says whether namespaces share a generated application and who is charged for whose pods
// today (the input's ConfigMaps yunikorn-defaults and yunikorn-configs, and its pods with schedulerName yunikorn).
func printApplications(w io.Writer, a preflight.Applications) {
	if a.GenerateUniqueAppID {
		fmt.Fprintf(w, "\nYuniKorn: %s is true (%s): a pod that names no application gets one of its own\n", preflight.GenerateUniqueAppIDKey, a.Source)
	} else {
		fmt.Fprintf(w, "\nYuniKorn: %s is off (%s): the pods of a namespace that name no application share\n"+
			"  yunikorn-<namespace>-autogen, charged to its first pod's user (add the ConfigMaps to the input to read them)\n",
			preflight.GenerateUniqueAppIDKey, a.Source)
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

func printFindings(w io.Writer, findings []preflight.Finding) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tOBJECT\tOUTCOME\tPODS WILL CARRY\tWHY")
	counts := map[preflight.Outcome]int{}
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
		counts[preflight.Stamp], counts[preflight.Keep], counts[preflight.Refuse], counts[preflight.LeaveAlone], counts[preflight.Skip])
}
