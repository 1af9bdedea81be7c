#!/usr/bin/env bash
# changelog-section.sh VERSION [CHANGELOG]: print the CHANGELOG.md section of VERSION (a Keep a Changelog
# "## [VERSION] - YYYY-MM-DD" heading), without its heading, up to the next "## " heading or the link
# references at the end. The release workflow uses it as the GitHub release notes.
# Fails when the section is missing or empty (nothing but headings counts as empty): a release must say
# what it changes.
set -euo pipefail

version="${1:?usage: changelog-section.sh VERSION [CHANGELOG]}"
version="${version#v}"
changelog="${2:-CHANGELOG.md}"

notes="$(awk -v heading="## [${version}] - " '
  index($0, heading) == 1 { inside = 1; next }
  inside && /^## / { exit }
  inside && /^\[[^]]+\]: / { exit }
  inside { print }
' "$changelog")"
# Drop the blank lines around the section.
notes="$(printf '%s\n' "$notes" | sed -e '/./,$!d' | sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}')"

if [ -z "$notes" ] || ! grep -qv -e '^#' -e '^[[:space:]]*$' <<< "$notes"; then
  echo "error: $changelog has no (or an empty) section \"## [${version}] - YYYY-MM-DD\"" >&2
  exit 1
fi
printf '%s\n' "$notes"
