#!/usr/bin/env bash
# build-release-tool.sh DIR MODULE VERSION PACKAGE: builds one command of a Go module, downloaded from the Go
# module proxy at exactly VERSION, into DIR (a directory keyed by name and version, e.g.
# .tools/release/cosign-v3.1.3), so that a second run only checks that it is there. make release-rehearsal
# builds its registry (distribution), cosign and syft this way.
#
# The module's own go.mod and go.sum decide every dependency (as `go install MODULE/cmd@VERSION` would),
# but the build runs in a writable copy of the module: `go install` refuses modules with replace directives
# and needs version lists the proxy here often refuses.
#
# Exit codes: 0 built or cached; 3 the module proxy would not serve what the build needs (the caller
# skips loudly); anything else is a real failure.
set -euo pipefail
DIR=${1:?usage: build-release-tool.sh DIR MODULE VERSION PACKAGE}
MODULE=${2:?} VERSION=${3:?} PACKAGE=${4:?}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd) # the build runs in another directory
NAME=$(basename "$PACKAGE")
BIN=$DIR/$NAME
T0=$(date +%s)
el() { echo "$(( $(date +%s) - T0 ))s"; }

if [ -x "$BIN" ] && [ -f "$DIR/.complete" ]; then
  echo "$NAME $VERSION: cached in $DIR"
  exit 0
fi
# shellcheck source=lock.bash
source "$(dirname "$0")/lock.bash"
lock "$DIR.lock" 1800 # one build per directory at a time: a second caller waits, then finds the tool built
if [ -x "$BIN" ] && [ -f "$DIR/.complete" ]; then
  echo "$NAME $VERSION: built meanwhile in $DIR"
  exit 0
fi

refused() { grep -qE '(403|404|410) |Forbidden|Not Found|Gone|dial tcp|no such host|i/o timeout' "$1"; }

echo "building $NAME $VERSION ($MODULE) from the Go module proxy into $DIR"
LOG=$DIR/build.log
: > "$LOG"
INFO=$(GOFLAGS='' GOWORK=off go mod download -json "$MODULE@$VERSION" 2>>"$LOG") || true
SRC=$(jq -r '.Dir // empty' <<< "$INFO" 2>/dev/null) || true
if [ -z "$SRC" ]; then
  echo "$MODULE@$VERSION is not available from the module proxy ($(go env GOPROXY)):" >&2
  { jq -r '.Error // empty' <<< "$INFO" 2>/dev/null || true; cat "$LOG"; } | sed 's/^/  /' >&2
  exit 3
fi
WORK=$DIR/src
rm -rf "$WORK"
cp -r "$SRC" "$WORK"
chmod -R u+w "$WORK"
(
  # a heartbeat, so that a CI log shows the build is alive
  while sleep 60; do echo "  still compiling $NAME... [$(el)]"; done
) &
HB=$!
trap 'kill "$HB" 2>/dev/null || true' EXIT
# The project's GOFLAGS must not leak into the tool's module; -mod=mod lets go.sum gain the lines a
# module zip sometimes lacks.
if ! (cd "$WORK" && GOFLAGS='-buildvcs=false -mod=mod' GOWORK=off CGO_ENABLED=0 \
      go build -trimpath -ldflags="-s -w ${LDFLAGS:-}" -o "$BIN" "./$PACKAGE") >>"$LOG" 2>&1; then
  tail -n 40 "$LOG" >&2
  if refused "$LOG"; then exit 3; fi
  exit 1
fi
[ -x "$BIN" ] || { echo "the build of $NAME wrote no $BIN" >&2; exit 1; }
"$BIN" --help > /dev/null 2>&1 || "$BIN" version > /dev/null 2>&1 ||
  { echo "$BIN does not run" >&2; exit 1; }
rm -rf "$WORK"
touch "$DIR/.complete"
echo "$NAME $VERSION built in $(el): $BIN"
