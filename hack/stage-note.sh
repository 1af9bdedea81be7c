#!/usr/bin/env bash
# stage-note.sh skipped|part TEXT: tells hack/stages.sh, which runs each stage of `make test` with
# STAGE_NOTES naming a file, that the running stage did not run (skipped) or left part of its scenarios out
# (part), and why; the table that ends the run shows it. Without STAGE_NOTES (a stage run on its own) it
# does nothing: the stage's own banner says it.
set -euo pipefail
kind="${1:?usage: stage-note.sh skipped|part TEXT}"
text="${2:?usage: stage-note.sh skipped|part TEXT}"
case "$kind" in skipped | part) ;; *) echo "stage-note.sh: unknown kind '$kind'" >&2; exit 2 ;; esac
[ -n "${STAGE_NOTES:-}" ] || exit 0
printf '%s\t%s\n' "$kind" "$(tr '\n' ' ' <<< "$text" | sed 's/ *$//')" >> "$STAGE_NOTES"
