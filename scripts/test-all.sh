#!/usr/bin/env bash
# npm run test:all: the README's test command for a fresh Debian or Ubuntu machine. It installs the
# Debian packages the suite needs when they are missing, starts PostgreSQL and Redis when they are
# not answering (scripts/test-env.sh prepare), then runs `npm test`: the lint, the type check and
# the whole suite. Arguments go to vitest (`npm run test:all -- test/unit`). Where all of that is
# already there, `npm test` alone does the same (given DATABASE_TEST_URL, when prepare made the
# tests' own database outdial_test: npm test says so).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ]; then
  echo "outdial tests: no node_modules; running npm ci" >&2
  npm ci --no-audit --no-fund
fi

# prepare prints what it does on stderr and the variables for the tests on fd 3.
exports="$(bash scripts/test-env.sh prepare 3>&1 1>&2)"
eval "$exports"
# npm hands .npmrc's onnxruntime-node-install to its children as npm_config_onnxruntime_node_install,
# and npm 11 then warns about it once more; the suite has no use for it.
exec env -u npm_config_onnxruntime_node_install npm test -- "$@"
