#!/usr/bin/env bash
# build-k8s.sh DIR: kube-apiserver, kube-controller-manager and kubectl for the cluster suite, built from the
# Go module proxy into DIR (a directory keyed by version, so a second run only checks that they are there).
#
# Kubernetes is not a library: k8s.io/kubernetes replaces its k8s.io/* staging modules with ./staging,
# which a module download does not carry. A scratch module that requires k8s.io/kubernetes and replaces
# every staging module with its published v0.Y.Z twin builds the real commands. kubectl is built from the
# same module because Debian ships none that is current (bookworm's kubernetes-client is 1.20). The version
# (KUBE_VERSION) must be one the module proxy serves: 1.37.2 and 1.35.4 were built here (test/cluster/README.md).
#
# Exit codes: 0 built or cached; 3 the module proxy would not serve what the build needs (the caller
# skips loudly); anything else is a real failure.
set -euo pipefail
KV=${KUBE_VERSION:-1.37.2}
BIN=${1:?usage: build-k8s.sh BIN_DIR}
WORK=${K8S_BUILD_DIR:-$(dirname "$BIN")/src}
T0=$(date +%s)
el() { echo "$(( $(date +%s) - T0 ))s"; }

built() { [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/kubectl" ] && [ -f "$BIN/.complete" ]; }
if built; then
  echo "kube binaries v$KV: cached in $BIN"
  exit 0
fi
# shellcheck source=../../hack/lock.bash
source "$(dirname "$0")/../../hack/lock.bash"
lock "$BIN.lock" 2700 # one build per directory at a time: a second caller waits, then finds them built
if built; then
  echo "kube binaries v$KV: built meanwhile in $BIN"
  exit 0
fi

echo "building kube-apiserver, kube-controller-manager and kubectl v$KV from the Go module proxy"
echo "  (cold: ~8 min and ~3 GB of Go caches on 2 cores; cached afterwards in $BIN)"
mkdir -p "$WORK"
cd "$WORK"
INFO=$(go mod download -json "k8s.io/kubernetes@v$KV" 2>&1) || true
GOMOD_FILE=$(jq -r '.GoMod // empty' <<< "$INFO" 2>/dev/null) || true
if [ -z "$GOMOD_FILE" ]; then
  echo "k8s.io/kubernetes@v$KV is not available from the module proxy ($(go env GOPROXY)):" >&2
  { jq -r '.Error // empty' <<< "$INFO" 2>/dev/null || echo "$INFO"; } | sed 's/^/  /' >&2
  exit 3
fi
SV=v0.${KV#1.}
{
  echo "module example.com/k8sbuild"
  echo
  echo "go $(awk '/^go /{print $2}' "$GOMOD_FILE")"
  echo
  echo "require k8s.io/kubernetes v$KV"
  echo
  echo "replace ("
  grep -oE '^\s*k8s.io/[a-z0-9-]+ => \./staging' "$GOMOD_FILE" | awk -v sv="$SV" '{print "\t" $1 " => " $1 " " sv}'
  echo ")"
} > go.mod
cat > tools.go <<'G'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
G
echo "  resolving modules... [$(el)]"
# GOFLAGS from the project (e.g. -mod=...) must not leak into the scratch module.
if ! GOFLAGS=-buildvcs=false GOWORK=off go mod tidy > tidy.log 2>&1; then
  cat tidy.log >&2
  if grep -qE '(403|404|410) |Forbidden|Not Found|Gone|dial tcp|no such host' tidy.log; then exit 3; fi
  exit 1
fi
echo "  modules resolved [$(el)]; compiling (the long part)..."
MINOR=$(echo "$KV" | cut -d. -f2)
LD="-s -w -X k8s.io/component-base/version.gitVersion=v$KV -X k8s.io/component-base/version.gitMajor=1"
LD="$LD -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean"
mkdir -p "$BIN"
(
  # a heartbeat, so a CI log shows the build is alive
  while sleep 60; do echo "  still compiling... [$(el)]"; done
) &
HB=$!
trap 'kill $HB 2>/dev/null || true' EXIT
GOFLAGS=-buildvcs=false GOWORK=off go build -trimpath -ldflags="$LD" -o "$BIN/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
"$BIN/kubectl" version --client > /dev/null
kill $HB 2>/dev/null || true
"$BIN/kube-apiserver" --version > /dev/null
touch "$BIN/.complete"
echo "kube binaries v$KV built in $(el): $BIN"
