package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
	return exitOK
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
