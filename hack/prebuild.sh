#!/usr/bin/env bash
# prebuild.sh: builds the tools that make test's later stages build for themselves (Kubernetes, Kubewarden's
# controller, the operators, YuniKorn, the release rehearsal's tools), in the order the stages need them, at
# the lowest CPU priority: hack/stages.sh starts it in the background, so that the builds take what the
# stages leave idle (a cluster suite mostly waits). Each build script locks its directory, so a stage that
# needs a tool waits for the build under way and then finds it cached. A build that fails here is left
# alone: the stage that needs the tool builds it again and reports the failure.
set -uo pipefail
MAKE=${MAKE:-make}
# stages.sh starts it in a session of its own, which the scheduler's autogroups weigh as much as the stages'
# whatever the nice values inside it: the session's own nice makes it yield.
echo 19 > /proc/self/autogroup 2> /dev/null || true
rc=0
for target in kube-binaries kubewarden-binaries operators yunikorn-binaries release-tools; do
  t0=$(date +%s)
  nice -n 19 "$MAKE" --no-print-directory "$target" || rc=$?
  echo "prebuild: $target in $(($(date +%s) - t0)) s"
done
exit "$rc"
