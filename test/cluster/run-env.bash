# run-env.bash: what run.sh and run-operators.sh set first (sourced, with HERE set to this directory): the
# repository's root, a clock for their progress lines, and the Kubernetes version and binaries to run.
# shellcheck shell=bash
ROOT=$(cd "$HERE/../.." && pwd)
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }

export KUBE_VERSION=${KUBE_VERSION:-1.37.2}
export KUBE_BIN=${KUBE_BIN:-$ROOT/.tools/k8s/v$KUBE_VERSION/bin}
