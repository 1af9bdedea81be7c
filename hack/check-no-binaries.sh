#!/usr/bin/env bash
# check-no-binaries.sh: fails when git tracks a compiled program (an ELF file), such as the binary
# `go build ./bench/policyserver` leaves in the current directory. Build outputs belong in build/.
set -euo pipefail
found=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    echo "$f: a compiled program is tracked by git: git rm --cached it and add it to .gitignore" >&2
    found=1
  fi
done < <(git ls-files -z)
exit "$found"
