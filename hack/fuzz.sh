#!/usr/bin/env bash
# fuzz.sh FUZZTIME TARGET...: fuzz each target (a Fuzz function of ./policy or a package below it) for
# FUZZTIME; fail on a finding only.
#
# A finding is a failing input Go writes to <package>/testdata/fuzz/TARGET/: the script prints its path and
# fails. Go's fuzzing coordinator (Go 1.26 and older, go.dev/issue/75804, fixed in Go 1.27) can also end a
# run that found nothing with a bare "context deadline exceeded" when its time runs out on a busy machine.
# Such a run wrote no input; the script then replays the target's seeds and saved inputs (`go test -run`)
# and counts the run as passed when they pass. Any other failure fails.
set -euo pipefail
if [ "$#" -lt 2 ]; then
  echo "usage: $0 FUZZTIME TARGET..." >&2
  exit 2
fi
fuzztime="$1"
shift
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

inputs() { # the saved inputs of one target, one per line (none when it has no directory yet)
  if [ -d "$corpus/$1" ]; then find "$corpus/$1" -type f | sort; fi
}

for target in "$@"; do
  # The package whose tests define the target.
  file="$(grep -rl --include='*_test.go' "^func $target(" policy | head -n 1)"
  if [ -z "$file" ]; then
    echo "== $target: no such fuzz target under policy/" >&2
    exit 1
  fi
  pkg="./$(dirname "$file")"
  corpus="$pkg/testdata/fuzz"
  echo "== $target in $pkg ($fuzztime)"
  before="$(inputs "$target")"
  status=0
  go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" 2>&1 | tee "$log" || status=$?
  [ "$status" -eq 0 ] && continue
  found="$(comm -13 <(printf '%s\n' "$before") <(inputs "$target") | sed '/^$/d')"
  if [ -n "$found" ]; then
    echo "== $target: a failing input, kept as a regression case (rerun: go test $pkg -run '$target/<name>'):" >&2
    printf '%s\n' "$found" >&2
    exit 1
  fi
  if ! tail -n 5 "$log" | grep -q 'context deadline exceeded'; then
    echo "== $target failed without writing an input (see above)" >&2
    exit 1
  fi
  echo "== $target: Go's fuzzing coordinator ended with 'context deadline exceeded' and wrote no input" \
    "(go.dev/issue/75804); replaying the target's seeds and saved inputs"
  go test "$pkg" -count=1 -run "^$target\$"
done
