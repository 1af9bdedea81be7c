#!/usr/bin/env bash
# build-kubewarden.sh SRC: builds Kubewarden's kwctl and policy-server (release) from a source tree of the
# Kubewarden monorepo (github.com/kubewarden/kubewarden-controller, crates/kwctl and crates/policy-server) that
# you provide, with cargo, and prints how to hand them to the suites. About 25 minutes on 2 cores.
#
#   hack/build-kubewarden.sh ~/src/kubewarden-controller
#   make e2e-tests KWCTL=.../kwctl
#   make e2e-cluster e2e-kubewarden POLICY_SERVER=.../policy-server KWCTL=.../kwctl   (after make annotated-policy.wasm KWCTL=...)
#   make bench-policy-server POLICY_SERVER=.../policy-server KWCTL=.../kwctl
#
# Without network, both tools fetch Sigstore's trust root at start-up unless given --sigstore-trust-config FILE
# (a Sigstore ClientTrustConfig): pass it as POLICY_SERVER_FLAGS. RUSTUP_TOOLCHAIN picks the toolchain when the
# tree's rust-toolchain.toml asks for components that cannot be installed; JOBS bounds cargo's jobs (default 2).
set -euo pipefail

src=${1:?usage: hack/build-kubewarden.sh SRC (a Kubewarden monorepo source tree)}
if [ ! -f "$src/Cargo.toml" ] || [ ! -d "$src/crates/policy-server" ] || [ ! -d "$src/crates/kwctl" ]; then
  echo "build-kubewarden.sh: $src is not a Kubewarden monorepo tree (no Cargo.toml with crates/kwctl and crates/policy-server)" >&2
  exit 2
fi
command -v cargo > /dev/null || { echo "build-kubewarden.sh: cargo is not installed (https://rustup.rs)" >&2; exit 2; }
(cd "$src" && nice -n 10 cargo build --release --locked -j "${JOBS:-2}" -p kwctl -p policy-server)
bin=$(cd "$src/target/release" && pwd)
"$bin/kwctl" --version
"$bin/policy-server" --version
echo "KWCTL=$bin/kwctl POLICY_SERVER=$bin/policy-server"
