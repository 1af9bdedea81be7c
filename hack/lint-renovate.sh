#!/usr/bin/env bash
# lint-renovate.sh [FILE...]: validate the Renovate configuration with renovate-config-validator
# (--strict: a configuration Renovate would have to migrate fails too). Without arguments it validates
# the configuration files of the current directory. The Makefile passes RENOVATE_CONFIG_VALIDATOR (the
# pinned copy it installed under .tools/) and NODE (a node binary recent enough for it).
set -euo pipefail
validator="${RENOVATE_CONFIG_VALIDATOR:-renovate-config-validator}"
if [ -n "${NODE:-}" ]; then
  PATH="$(dirname "$NODE"):$PATH"
  export PATH
fi
# The validator reads no global configuration and needs no token; keep it from looking for either.
export RENOVATE_CONFIG_FILE=/dev/null LOG_LEVEL="${LOG_LEVEL:-warn}"
"$validator" --strict "$@"
