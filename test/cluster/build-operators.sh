#!/usr/bin/env bash
# build-operators.sh DIR KEY...: the operators of the operator scenarios (operators.bats), from their
# published artifacts at pinned versions, into DIR/KEY (a directory keyed by operator and version, so that a
# second run only checks that they are there). Nothing fetched here is committed. rbac/ holds the operator's
# own ClusterRole (and Argo's namespaced Role), which the scenarios bind to its service account.
#
#   KEY                       artifact                                           what DIR/KEY gets
#   kuberay-v1.4.0, -v1.5.0   Go module github.com/ray-project/kuberay/ray-operator   bin/manager, crds/ (config/crd/bases), rbac/
#   argo-v3.7.9               Go module github.com/argoproj/argo-workflows/v3         bin/workflow-controller, crds/ (manifests/base/crds/minimal)
#   argo-v4.0.7               Go module github.com/argoproj/argo-workflows/v4         bin/workflow-controller, crds/
#   training-operator-v1.9.3  Go module github.com/kubeflow/training-operator         bin/training-operator, crds/ (manifests/base/crds), webhook/
#   spark-operator-v2.4.0     Go module github.com/kubeflow/spark-operator/v2         crds/ only (the operator submits through a JVM)
#   flink-operator-1.10.0     Maven Central org.apache.flink:flink-kubernetes-operator-api, crds/ only (a Java
#                             operator; the jar carries the CRDs its build generates, META-INF/fabric8; Maven Central serves no later one here)
#
# A Go operator is built in a scratch module that requires it at that version and copies its go.mod's
# replace directives (Argo v3 pins olekukonko/tablewriter v0.0.5 that way): a main package cannot be
# `go install`ed at a version the proxy refuses to list, and a module's replaces apply only when it is the
# main module.
#
# CRDS_ONLY=1 fetches the CRDs and manifests without building the controllers (the cluster suite's
# custom-resource scenarios need only the CRDs).
#
# Exit codes: 0 every KEY built or cached; 3 the proxy (or Maven Central) would not serve one of them (the
# others are still built; the caller skips what is missing, loudly); anything else is a real failure.
set -euo pipefail
DIR=$(mkdir -p "${1:?usage: build-operators.sh DIR KEY...}" && cd "$1" && pwd)
shift
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }
refused=0
# shellcheck source=../../hack/lock.bash
source "$(dirname "$0")/../../hack/lock.bash"

# spec KEY: sets MOD VER PKG BIN, CRDS and RBAC (globs inside the module: the CRDs, the controller's roles)
# and WEBHOOK (the operator's own ValidatingWebhookConfiguration) for KEY
spec() {
  VER=${1##*-}
  PKG='' BIN='' RBAC='' WEBHOOK=''
  case $1 in
    kuberay-v*) MOD=github.com/ray-project/kuberay/ray-operator PKG=$MOD BIN=manager CRDS='config/crd/bases/*.yaml'
      RBAC='config/rbac/role.yaml' ;;
    argo-v3.*) MOD=github.com/argoproj/argo-workflows/v3 ;;
    argo-v4.*) MOD=github.com/argoproj/argo-workflows/v4 ;;
    training-operator-v*) MOD=github.com/kubeflow/training-operator PKG=$MOD/cmd/training-operator.v1 BIN=training-operator
      CRDS='manifests/base/crds/kubeflow.org_*.yaml' RBAC='manifests/base/rbac/role.yaml'
      WEBHOOK='manifests/base/webhook/manifests.yaml' ;;
    spark-operator-v*) MOD=github.com/kubeflow/spark-operator/v2 CRDS='config/crd/bases/*.yaml' ;;
    flink-operator-*) MOD=org.apache.flink:flink-kubernetes-operator-api ;;
    *) echo "build-operators.sh: unknown operator $1" >&2; exit 2 ;;
  esac
  case $1 in
    argo-*) PKG=$MOD/cmd/workflow-controller BIN=workflow-controller
      # the minimal CRDs are the ones Argo's install manifests apply (the folder's kustomization.yaml is not a CRD)
      CRDS='manifests/base/crds/minimal/argoproj.io_*.yaml'
      RBAC='manifests/cluster-install-no-crds/workflow-controller-rbac/workflow-controller-*role.yaml' ;;
  esac
}

# contents DIR: what DIR/KEY holds, for the log
contents() { echo "$(find "$1/crds" -type f | wc -l) CRDs$(find "$1/bin" -type f -printf ', bin/%f' 2> /dev/null)"; }

# proxy_refused LOG: the failure in LOG is the module proxy (or the network) saying no
proxy_refused() { grep -qE '(403|404|410) |Forbidden|Not Found|Gone|dial tcp|no such host|could not resolve' "$1"; }

build_go() { # KEY OUT
  local key=$1 out=$2 info dir gomod
  mkdir -p "$out/src" "$out/crds" "$out/bin"
  if ! info=$(cd "$out/src" && GOFLAGS=-mod=mod GOWORK=off go mod download -json "$MOD@$VER" 2> "$out/download.log"); then
    cat "$out/download.log" >&2
    jq -r '.Error // empty' <<< "$info" >&2 || true
    echo "$key: $MOD@$VER is not served by the module proxy ($(go env GOPROXY))" >&2
    return 3
  fi
  dir=$(jq -r .Dir <<< "$info") gomod=$(jq -r .GoMod <<< "$info")
  # shellcheck disable=SC2086 # CRDS is a glob
  cp $dir/$CRDS "$out/crds/"
  if [ -n "$RBAC" ]; then
    mkdir -p "$out/rbac"
    # shellcheck disable=SC2086 # RBAC is a glob
    cp $dir/$RBAC "$out/rbac/"
  fi
  if [ -n "$WEBHOOK" ]; then
    mkdir -p "$out/webhook"
    cp "$dir/$WEBHOOK" "$out/webhook/"
  fi
  chmod -R u+w "$out/crds" "$out/rbac" "$out/webhook" 2> /dev/null || true
  [ -n "$PKG" ] && [ "${CRDS_ONLY:-0}" != 1 ] || return 0
  {
    echo "module example.com/operatorbuild"
    echo
    awk '/^go /{print; exit}' "$gomod"
    echo
    echo "require $MOD $VER"
    echo
    # the operator's replace directives, except those pointing into its own tree
    awk '/^replace \($/ {b=1; next} b && /^\)/ {b=0; next}
         b && !/=> *\.\.?\// {print "replace " $0} /^replace [^(]/ && !/=> *\.\.?\// {print}' "$gomod"
  } > "$out/src/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$PKG" > "$out/src/tools.go"
  echo "  $key: resolving modules [$(el)]"
  if ! (cd "$out/src" && GOFLAGS=-buildvcs=false GOWORK=off go mod tidy > tidy.log 2>&1); then
    cat "$out/src/tidy.log" >&2
    if proxy_refused "$out/src/tidy.log"; then return 3; fi
    return 1
  fi
  echo "  $key: compiling $PKG [$(el)]"
  (cd "$out/src" && GOFLAGS=-buildvcs=false GOWORK=off nice -n 10 go build -trimpath -ldflags='-s -w' -o "$out/bin/$BIN" "$PKG")
}

build_maven() { # KEY OUT: the CRDs inside the operator's API jar
  local key=$1 out=$2 jar
  mkdir -p "$out/crds" "$out/m2"
  command -v mvn > /dev/null || "$(dirname "$0")/../../hack/ensure-debian-packages.sh" mvn:maven
  if ! mvn -q -B -Dmaven.repo.local="$out/m2" dependency:copy -Dartifact="$MOD:$VER" -Dtransitive=false \
    -DoutputDirectory="$out" > "$out/mvn.log" 2>&1; then
    cat "$out/mvn.log" >&2
    echo "$key: $MOD:$VER is not served by Maven Central" >&2
    return 3
  fi
  jar=$out/${MOD#*:}-$VER.jar
  (cd "$out/crds" && unzip -q -o -j "$jar" 'META-INF/fabric8/*-v1.yml')
  rm -rf "$out/m2"
}

for key in "$@"; do
  out=$DIR/$key
  lock "$out.lock" 1200 # one build of a key at a time: a second caller waits, then finds it built
  if [ -f "$out/.complete" ] || { [ "${CRDS_ONLY:-0}" = 1 ] && [ -f "$out/.crds" ]; }; then
    echo "$key: cached in $out ($(contents "$out"))"
    continue
  fi
  spec "$key"
  rm -rf "$out"
  echo "$key: building from $MOD $VER"
  rc=0
  case $key in
    flink-*) build_maven "$key" "$out" || rc=$? ;;
    *) build_go "$key" "$out" || rc=$? ;;
  esac
  case $rc in
    0) if [ -n "$PKG" ] && [ "${CRDS_ONLY:-0}" = 1 ]; then touch "$out/.crds"; else touch "$out/.complete"; fi
       echo "$key: built in $(el) ($(contents "$out"))" ;;
    3) refused=1 ;;
    *) echo "$key: build failed (exit $rc)" >&2; exit "$rc" ;;
  esac
done
if [ "$refused" = 1 ]; then exit 3; fi
