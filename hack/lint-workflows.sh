#!/usr/bin/env bash
# lint-workflows.sh [DIR]: actionlint on DIR/.github/workflows (DIR defaults to the current directory).
# actionlint also runs shellcheck on every `run:` script when shellcheck is on PATH.
# The Makefile passes ACTIONLINT (the pinned binary it installed); test/shipcheck runs this script
# on a broken copy of the workflows to prove that `make lint` fails on it.
set -euo pipefail
dir="${1:-.}"
actionlint="${ACTIONLINT:-actionlint}"
cd "$dir"
shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
if [ "${#workflows[@]}" -eq 0 ]; then
  echo "error: no workflows under $dir/.github/workflows" >&2
  exit 1
fi
"$actionlint" -no-color "${workflows[@]}"
