#!/usr/bin/env bash
# install-tinygo.sh: make a TinyGo that can build policy.wasm available, and print its path on stdout.
#
# 1. A `tinygo` on PATH of version >= 0.39 is used as it is.
# 2. Otherwise TinyGo $TINYGO_VERSION is built from the Go module proxy against Debian's LLVM into
#    $TINYGO_PREFIX (the Makefile passes a directory inside the checkout). Nothing is installed
#    outside that directory except Debian packages.
#
# Why the build needs help: TinyGo's release binaries cannot be downloaded here, and the module zip lacks
# TinyGo's git submodules. We replace them with Debian's prebuilt wasi-libc and compiler-rt (wired in
# through a patched targets/wasip1.json) and with TinyGo v0.30.0's in-tree src/net (easyjson's writer buffer
# imports package net).
#
# Idempotent: a second run only checks a stamp file (well under a second).
# Knobs: TINYGO_VERSION (0.41.0), LLVM_VERSION (19), TINYGO_PREFIX (required), TINYGO_FORCE_BUILD=1.
set -euo pipefail

TINYGO_VERSION="${TINYGO_VERSION:-0.41.0}"
LLVM_VERSION="${LLVM_VERSION:-19}"
: "${TINYGO_PREFIX:?set TINYGO_PREFIX to the directory TinyGo should be installed into}"
MIN_TINYGO="0.39"
NET_SOURCE_VERSION="0.30.0" # last TinyGo whose module zip still contains src/net
SCRIPT_REV="1"

log() { printf '[install-tinygo %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

version_ge() { # version_ge A B: A >= B (dotted numbers)
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# ------------------------------------------------------------ 1. a usable tinygo on PATH?
if [ "${TINYGO_FORCE_BUILD:-0}" != 1 ] && command -v tinygo >/dev/null 2>&1; then
  have="$(tinygo version 2>/dev/null | sed -n 's/^tinygo version \([0-9.]*\).*/\1/p')"
  if [ -n "$have" ] && version_ge "$have" "$MIN_TINYGO"; then
    log "using tinygo $have from PATH ($(command -v tinygo))"
    command -v tinygo
    exit 0
  fi
  log "tinygo on PATH is ${have:-of unknown version}, need >= $MIN_TINYGO: building $TINYGO_VERSION"
fi

STAMP="tinygo=${TINYGO_VERSION} llvm=${LLVM_VERSION} rev=${SCRIPT_REV}"
if [ -x "$TINYGO_PREFIX/bin/tinygo" ] && [ "$(cat "$TINYGO_PREFIX/.install-stamp" 2>/dev/null)" = "$STAMP" ]; then
  echo "$TINYGO_PREFIX/bin/tinygo"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "go is not on PATH: install Go >= 1.25 first"

# ------------------------------------------------------------ 2. Debian packages
PKGS=(
  "llvm-${LLVM_VERSION}-dev" "libclang-${LLVM_VERSION}-dev" "clang-${LLVM_VERSION}" "lld-${LLVM_VERSION}"
  "libclang-rt-${LLVM_VERSION}-dev-wasm32" "wasi-libc" "binaryen" "jq" "g++"
)
command -v dpkg-query >/dev/null 2>&1 ||
  die "this is not a Debian-based system. Install TinyGo >= $MIN_TINYGO yourself (https://tinygo.org/getting-started/install/) and put it on PATH."
missing=()
for p in "${PKGS[@]}"; do
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
      die "need root to install Debian packages: ${missing[*]}. Run as root, or: sudo apt-get install ${missing[*]}"
    fi
  fi
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || die "apt-get update failed"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed (LLVM ${LLVM_VERSION} packages are in Debian 12 bookworm and later)"
fi

CLANG="clang-${LLVM_VERSION}"
RTLIB="$($CLANG --target=wasm32-unknown-wasi -rtlib=compiler-rt -print-libgcc-file-name)"
WASI_INC=/usr/include/wasm32-wasi
WASI_LIBC=/usr/lib/wasm32-wasi/libc.a
for f in "$RTLIB" "$WASI_INC/stdlib.h" "$WASI_LIBC" "/usr/bin/wasm-ld-${LLVM_VERSION}" /usr/bin/wasm-opt; do
  [ -e "$f" ] || die "missing $f after installing packages"
done

# ------------------------------------------------------------ 3. build TinyGo
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS="-buildvcs=false -mod=mod" GOWORK=off CGO_ENABLED=1
log "downloading github.com/tinygo-org/tinygo@v${TINYGO_VERSION} from the Go module proxy"
src_dir="$(cd "$work" && go mod download -json "github.com/tinygo-org/tinygo@v${TINYGO_VERSION}" | jq -r .Dir)"
[ -d "$src_dir" ] || die "could not download tinygo v${TINYGO_VERSION} from the Go module proxy"
cp -r "$src_dir" "$work/tinygo"
chmod -R u+w "$work/tinygo"
log "building TinyGo (go build -tags llvm${LLVM_VERSION}); takes 1-2 minutes"
(cd "$work/tinygo" && go build -tags "llvm${LLVM_VERSION}" \
  -ldflags "-X github.com/tinygo-org/tinygo/goenv.TINYGOROOT=${TINYGO_PREFIX}" -o "$work/tinygo.bin" .)

# ------------------------------------------------------------ 4. assemble TINYGOROOT
root="${TINYGO_PREFIX}.tmp.$$"
rm -rf "$root"
mkdir -p "$root/bin"
cp -r "$work/tinygo/src" "$work/tinygo/targets" "$work/tinygo/lib" "$root/"
cp "$work/tinygo.bin" "$root/bin/tinygo"
chmod -R u+w "$root"

if [ ! -e "$root/src/net/net.go" ]; then
  net_dir="$(cd "$work" && go mod download -json "github.com/tinygo-org/tinygo@v${NET_SOURCE_VERSION}" | jq -r .Dir)"
  mkdir -p "$root/src/net"
  for f in "$net_dir"/src/net/*.go; do
    case "$f" in *_test.go) ;; *) cp "$f" "$root/src/net/" ;; esac
  done
  chmod -R u+w "$root/src/net"
fi

# LLVM < 20 does not know the bulk-memory-opt / call-indirect-overlong features.
jq --arg inc "$WASI_INC" --arg libc "$WASI_LIBC" --arg rt "$RTLIB" --argjson llvm "$LLVM_VERSION" '
    .libc = "" | .rtlib = ""
    | (if $llvm < 20 then .features |= (split(",")
          | map(select(. != "+bulk-memory-opt" and . != "+call-indirect-overlong")) | join(","))
       else . end)
    | .cflags = (["-nostdlibinc", "-isystem", $inc] + (.cflags // []))
    | .ldflags = ((.ldflags // []) + [$libc, $rt])' \
  "$work/tinygo/targets/wasip1.json" >"$root/targets/wasip1.json"

# ------------------------------------------------------------ 5. smoke test, then move into place
mkdir -p "$work/smoke"
printf 'package main\n\nfunc main() { println("ok") }\n' >"$work/smoke/main.go"
printf 'module smoke\n\ngo 1.21\n' >"$work/smoke/go.mod"
(cd "$work/smoke" && TINYGOROOT="$root" GOFLAGS=-buildvcs=false "$root/bin/tinygo" build -o smoke.wasm -target=wasi -no-debug .) ||
  die "the freshly built TinyGo cannot compile a hello-world wasm"
echo "$STAMP" >"$root/.install-stamp"
rm -rf "$TINYGO_PREFIX"
mkdir -p "$(dirname "$TINYGO_PREFIX")"
mv "$root" "$TINYGO_PREFIX"
log "installed $("$TINYGO_PREFIX/bin/tinygo" version) into $TINYGO_PREFIX"
echo "$TINYGO_PREFIX/bin/tinygo"
