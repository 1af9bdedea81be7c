#!/usr/bin/env bash
# stages.sh TARGET...: runs `make TARGET` for each stage in turn, stops at the first failure, and ends
# with a table of the stages and their wall-clock times (also on failure), so that a slow or failing
# stage is visible at a glance. `make test` and `make check` call it.
set -uo pipefail
MAKE=${MAKE:-make}
names=() times=() results=()
total0=$(date +%s)
rc=0
for stage in "$@"; do
  t0=$(date +%s)
  echo "==== stage: $stage"
  if "$MAKE" --no-print-directory "$stage"; then
    result=ok
  else
    rc=$? result="FAILED (exit $rc)"
  fi
  names+=("$stage") times+=("$(($(date +%s) - t0))") results+=("$result")
  [ "$rc" -eq 0 ] || break
done
echo
printf '%-22s %8s  %s\n' stage seconds result
for i in "${!names[@]}"; do
  printf '%-22s %8s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
done
printf '%-22s %8s\n' total "$(($(date +%s) - total0))"
exit "$rc"
