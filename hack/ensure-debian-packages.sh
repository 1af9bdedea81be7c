#!/usr/bin/env bash
# ensure-debian-packages.sh CMD:PACKAGE...: installs PACKAGE from Debian when CMD is not on PATH.
# Used by the Makefile for test tools (bats, jq); explains what to do when it cannot install.
set -euo pipefail
missing=()
for pair in "$@"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing ${missing[*]} and this is not a Debian-based system: install them yourself" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "error: missing ${missing[*]}: run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
