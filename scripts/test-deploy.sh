#!/usr/bin/env bash
# `pnpm test:deploy`: the container tests. Makes sure Docker is there (scripts/ensure-docker.sh),
# builds the workspace and both images (a local Node base when no registry is reachable), then
# runs deploy/docker/test/ with its own vitest config, and always removes the test's compose
# project (containers and volumes), even when a test or the build failed. Ends with the plain
# `N passed, M failed` line (scripts/run-tests.mjs prints it).
set -uo pipefail
cd "$(dirname "$0")/.."
export COREPACK_ENABLE_DOWNLOAD_PROMPT=0 TURBO_TELEMETRY_DISABLED=1 npm_config_nodedir=${npm_config_nodedir:-/usr}
PROJECT=felix-deploy-test
started=$(date +%s)

teardown() {
  docker-compose -p "$PROJECT" -f deploy/compose/compose.yaml down -v --remove-orphans -t 25 \
    >/dev/null 2>&1 || true
}
trap teardown EXIT

fail_setup() {
  echo "test:deploy: $1" >&2
  printf '\n0 passed, 1 failed\n'
  exit 1
}

bash scripts/ensure-docker.sh || fail_setup "Docker is not usable"
npx --yes pnpm@10.34.9 run build >/dev/null || fail_setup "the workspace build failed"
bash deploy/docker/build-images.sh || fail_setup "the image build failed"
teardown # a project left over from an interrupted run would hold the ports
echo "test:deploy: Docker, build and images ready after $(($(date +%s) - started)) s"
# Last, so its `N passed, M failed` line is the last line of the run.
node scripts/run-tests.mjs --config deploy/docker/test/vitest.config.ts
