#!/usr/bin/env bash
# stages.sh TARGET...: runs `make TARGET` for each stage in turn, stops at the first failure, and ends
# with a table of the stages, their wall-clock times and what became of them (also on failure): ok,
# SKIPPED (the stage did not run: its banner says why) or "ok, in part" (some of its scenarios did not
# run), with the reasons below the table. Stages report a skip through hack/stage-note.sh, which writes to
# the file STAGE_NOTES names. `make test` and `make check` call it.
#
# PREBUILD, when set, is a command started in the background before the first stage (make test:
# hack/prebuild.sh, the tools later stages need) in a process group of its own, stopped by its PID when the
# stages end; its output goes to PREBUILD_LOG, and a line below the table says how it ended.
set -uo pipefail
MAKE=${MAKE:-make}
notes_dir=$(mktemp -d)
prebuild_pid=
# shellcheck disable=SC2317 # called by the EXIT trap
stop_prebuild() { [ -z "$prebuild_pid" ] || kill -- -"$prebuild_pid" 2> /dev/null || true; }
trap 'stop_prebuild; rm -rf "$notes_dir"' EXIT
if [ -n "${PREBUILD:-}" ]; then
  # shellcheck disable=SC2016 # expanded by the background shell
  MAKE=$MAKE setsid bash -c 't0=$(date +%s); '"$PREBUILD"'; echo "$? $(($(date +%s) - t0))" > "$0"' \
    "$notes_dir/prebuild.done" > "${PREBUILD_LOG:-/dev/null}" 2>&1 &
  prebuild_pid=$!
fi
names=() times=() results=()
total0=$(date +%s)
rc=0
for stage in "$@"; do
  t0=$(date +%s)
  echo "==== stage: $stage"
  export STAGE_NOTES="$notes_dir/$stage"
  : > "$STAGE_NOTES"
  if "$MAKE" --no-print-directory "$stage"; then
    if grep -q '^skipped' "$STAGE_NOTES"; then
      result=SKIPPED
    elif [ -s "$STAGE_NOTES" ]; then
      result="ok, in part"
    else
      result=ok
    fi
  else
    rc=$? result="FAILED (exit $rc)"
  fi
  names+=("$stage") times+=("$(($(date +%s) - t0))") results+=("$result")
  [ "$rc" -eq 0 ] || break
done
unset STAGE_NOTES
echo
printf '%-22s %8s  %s\n' stage seconds result
ran=0 skipped=0 partly=0
for i in "${!names[@]}"; do
  printf '%-22s %8s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
  case "${results[$i]}" in
    SKIPPED) skipped=$((skipped + 1)) ;;
    "ok, in part") partly=$((partly + 1)) ran=$((ran + 1)) ;;
    *) ran=$((ran + 1)) ;;
  esac
done
printf '%-22s %8s\n' total "$(($(date +%s) - total0))"
if [ -n "$prebuild_pid" ]; then
  if [ -s "$notes_dir/prebuild.done" ]; then
    read -r prc psec < "$notes_dir/prebuild.done"
    printf '%-22s %8s  %s\n' "(background builds)" "$psec" "$([ "$prc" = 0 ] && echo ok || echo "exit $prc: the stages built what they needed; ${PREBUILD_LOG:-} says why")"
  else
    printf '%-22s %8s  %s\n' "(background builds)" "-" "still running when the stages ended: stopped"
  fi
fi
not_run=$(($# - ${#names[@]}))
echo "$ran of $# stages ran ($partly in part), $skipped skipped$([ "$not_run" -eq 0 ] || echo ", $not_run not reached")"
for i in "${!names[@]}"; do
  while IFS=$'\t' read -r kind text; do
    [ -n "$kind" ] || continue
    printf '  %s %s: %s\n' "${names[$i]}" "$([ "$kind" = skipped ] && echo "skipped" || echo "left out")" "$text"
  done < "$notes_dir/${names[$i]}"
done
exit "$rc"
