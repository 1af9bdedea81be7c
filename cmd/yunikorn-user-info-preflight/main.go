// Command yunikorn-user-info-preflight tells a cluster operator, before the policy is installed, what it
// will do to each workload already in the cluster on that workload's next rollout or pod creation: stamp
// the pods with the requester, keep the template's value, refuse the creation (the rollout stalls), or
// leave it alone, and why. It reads what kubectl prints and runs the policy module itself on the requests
// the controllers and owners will send (package internal/preflight); it talks to no cluster.
//
//	kubectl get pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,replicationcontrollers,configmaps -A -o json |
//	  yunikorn-user-info-preflight --policy policy.wasm [--settings-json JSON | --settings-path|-s FILE]
//
// The text report also says what the policy does to the placeholder pods YuniKorn's scheduler creates for gang
// applications, and which gangs' placeholders carry another identity than their originator.
//
// Exit codes: 0 the report was printed, 1 the policy refused the settings, 2 a bad command line or an
// unreadable input, 3 the module could not start.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/kwctl"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/host/wapchost"
	"github.com/seed-a6d343df/yunikorn-user-info-policy/internal/preflight"
)

// version is the release's, stamped by the release build (-ldflags "-X main.version=...").
var version = "dev"

const usage = `usage:
  kubectl get pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,replicationcontrollers,configmaps -A -o json |
    yunikorn-user-info-preflight --policy policy.wasm [--settings-json JSON | --settings-path|-s FILE]
      [--controllers sa|single] [--scheduler-account NAMESPACE/NAME] [--output|-o text|json] [-f FILE]
  yunikorn-user-info-preflight --version

Reads a List of objects (-f FILE, or stdin) and prints, per object, what the policy will do on its next
rollout or pod creation (stamp, keep, refuse, leave-alone) and why, found by running the policy module
(--policy: the policy.wasm of the release) on the requests the controllers and owners will send. The
settings are those the ClusterAdmissionPolicy will give it, as kwctl takes them. --controllers single
when kube-controller-manager runs without --use-service-account-credentials. The text output ends with
YuniKorn's applications: whether generateUniqueAppId is on (from the ConfigMaps yunikorn-defaults and
yunikorn-configs in the input) and which applications of the input's YuniKorn pods mix users, charged
to whom; then what the policy does to the placeholder pods YuniKorn's scheduler creates for gang
applications (keep their originator's user.info, stamp the scheduler's own, or refuse them all), for the
service account of each scheduler Deployment in the input (pod template labelled component:
yunikorn-scheduler), of --scheduler-account, or else the Helm chart's yunikorn/yunikorn-admin; and the gang
applications whose placeholders carry another identity than their originator pod. Leave out the
namespaces the policy will not see (its namespaceSelector).

exit codes: 0 the report was printed, 1 the policy refused the settings,
            2 bad command line or unreadable input, 3 the module could not start
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: tests call it with their own streams.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
		fmt.Fprint(stdout, usage)
		return kwctl.ExitOK
	}
	if slices.Equal(args, []string{"--version"}) {
		fmt.Fprintf(stdout, "yunikorn-user-info-preflight %s\n", version)
		return kwctl.ExitOK
	}
	var policy, output, controllers, input, schedulerAccount string
	var settingsFlags kwctl.SettingsFlags
	fs := flag.NewFlagSet("yunikorn-user-info-preflight", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, with the usage
	fs.StringVar(&policy, "policy", "", "")
	settingsFlags.Register(fs)
	fs.StringVar(&controllers, "controllers", string(preflight.ServiceAccounts), "")
	fs.StringVar(&schedulerAccount, "scheduler-account", "", "")
	fs.StringVar(&output, "output", "text", "")
	fs.StringVar(&output, "o", "text", "")
	fs.StringVar(&input, "f", "-", "")
	usageError := func(err error) int {
		fmt.Fprintf(stderr, "yunikorn-user-info-preflight: %v\n\n%s", err, usage)
		return kwctl.ExitUsage
	}
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fmt.Errorf("unexpected argument %q (the module goes in --policy)", fs.Arg(0)))
	case policy == "":
		return usageError(errors.New("--policy is required (the policy.wasm of the release)"))
	case settingsFlags.Conflict() != nil:
		return usageError(settingsFlags.Conflict())
	case controllers != string(preflight.ServiceAccounts) && controllers != string(preflight.SingleIdentity):
		return usageError(fmt.Errorf("--controllers %q: want sa or single", controllers))
	case output != "text" && output != "json":
		return usageError(fmt.Errorf("--output %q: want text or json", output))
	}
	if schedulerAccount != "" {
		if _, _, err := preflight.ParseAccount(schedulerAccount); err != nil {
			return usageError(fmt.Errorf("--scheduler-account: %w", err))
		}
	}
	fail := kwctl.Failer(stderr, "yunikorn-user-info-preflight")
	settings, err := settingsFlags.Settings()
	if err != nil {
		return fail(kwctl.ExitUsage, err)
	}
	data, err := kwctl.ReadInput(input, stdin)
	if err != nil {
		return fail(kwctl.ExitUsage, err)
	}
	items, err := preflight.Items(data)
	if err != nil {
		return fail(kwctl.ExitUsage, err)
	}
	wasm, err := os.ReadFile(policy)
	if err != nil {
		return fail(kwctl.ExitUsage, err)
	}

	ctx := context.Background()
	// The policy's logs are not the report: they are discarded.
	host, err := wapchost.Load(ctx, wasm, wapchost.Options{})
	if err != nil {
		return fail(kwctl.ExitStart, fmt.Errorf("cannot load policy %s: %w", policy, err))
	}
	defer host.Close(ctx)
	opts := preflight.Options{Evaluator: host, Settings: settings, Controllers: preflight.Controllers(controllers),
		SchedulerAccount: schedulerAccount}
	findings, err := preflight.Report(ctx, items, opts)
	var settingsErr *kwctl.SettingsError
	switch {
	case errors.As(err, &settingsErr):
		fmt.Fprintln(stderr, settingsErr) // kwctl's words, as kwctl run prints them
		return kwctl.ExitSettings
	case err != nil:
		return fail(kwctl.ExitStart, err)
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(findings); err != nil {
			return fail(kwctl.ExitUsage, err)
		}
		return kwctl.ExitOK
	}
	schedulers, err := preflight.Schedulers(ctx, items, opts)
	if err != nil {
		return fail(kwctl.ExitStart, err)
	}
	preflight.WriteText(stdout, findings, items, schedulers)
	return kwctl.ExitOK
}
