#!/usr/bin/env bash
# lint-shell.sh [DIR]: shellcheck on every shell script tracked by git in DIR (the current directory by
# default): *.sh and *.bash files, and files whose first line is a bash or sh shebang (.ci/run).
# Without git (a copy outside a checkout) every file under DIR is considered.
set -euo pipefail
dir="${1:-.}"
cd "$dir"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
  mapfile -t files < <(find . -path ./.tools -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||')
fi
scripts=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  case "$f" in
    .tools/* | node_modules/*) continue ;;
  esac
  case "${f##*/}" in
    *.sh | *.bash) scripts+=("$f") ;;
    *.*) ;; # another language
    *) head -n 1 "$f" | grep -Eq '^#!(/usr/bin/env )?(/bin/|/usr/bin/)?(ba)?sh( |$)' && scripts+=("$f") ;;
  esac
done
if [ "${#scripts[@]}" -eq 0 ]; then
  echo "error: no shell scripts found under $dir" >&2
  exit 1
fi
echo "shellcheck: ${#scripts[@]} scripts"
# -x follows `source` lines to files shellcheck can find from the script's own directory.
shellcheck -x -P SCRIPTDIR "${scripts[@]}"
