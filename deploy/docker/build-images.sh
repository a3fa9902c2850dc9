#!/usr/bin/env bash
# Builds felix-broker:$FELIX_IMAGE_TAG and felix-control-plane:$FELIX_IMAGE_TAG from the built
# workspace (run `pnpm build` first). Each service's production dependencies are staged on the
# host with `pnpm deploy --prod` into deploy/docker/.stage/<service> (gitignored), which becomes
# the build context, so the Dockerfiles need no registry. NODE_IMAGE is, in order: $NODE_IMAGE,
# the official node:20-bookworm-slim when it is present or can be pulled, else the local base
# made by make-base-image.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
export COREPACK_ENABLE_DOWNLOAD_PROMPT=0 TURBO_TELEMETRY_DISABLED=1 npm_config_nodedir=${npm_config_nodedir:-/usr}
DOCKER=${DOCKER:-/usr/bin/docker}
PNPM=${PNPM:-npx --yes pnpm@10.34.9}
TAG=${FELIX_IMAGE_TAG:-local}
OFFICIAL=node:20-bookworm-slim
PULL_TIMEOUT_S=${FELIX_PULL_TIMEOUT_S:-10}

for main in services/broker/dist/main.js services/control-plane/dist/main.js; do
  [ -f "$main" ] || { echo "build-images: $main is missing; run the build first" >&2; exit 1; }
done

pick_node_image() {
  if [ -n "${NODE_IMAGE:-}" ]; then echo "$NODE_IMAGE"; return; fi
  if "$DOCKER" image inspect "$OFFICIAL" >/dev/null 2>&1 \
    || timeout "$PULL_TIMEOUT_S" "$DOCKER" pull -q "$OFFICIAL" >/dev/null 2>&1; then
    echo "$OFFICIAL"
    return
  fi
  bash deploy/docker/make-base-image.sh >&2
  echo "${FELIX_BASE_IMAGE:-felix-node-base:20}"
}

# better-sqlite3 keeps its whole native build tree (objects, a test extension): only the addon runs.
prune_stage() {
  local addon
  for addon in "$1"/node_modules/.pnpm/better-sqlite3@*/node_modules/better-sqlite3/build; do
    [ -f "$addon/Release/better_sqlite3.node" ] || continue
    mv "$addon/Release/better_sqlite3.node" "$addon/../better_sqlite3.node.keep"
    rm -rf "$addon" && mkdir -p "$addon/Release"
    mv "$addon/../better_sqlite3.node.keep" "$addon/Release/better_sqlite3.node"
  done
}

node_image=$(pick_node_image)
echo "build-images: NODE_IMAGE=$node_image, tag $TAG"
for svc in broker control-plane; do
  stage="deploy/docker/.stage/$svc"
  rm -rf "$stage"
  $PNPM --filter "@felix/$svc" deploy --prod --legacy "$stage" >/dev/null
  prune_stage "$stage"
  "$DOCKER" build -q --build-arg "NODE_IMAGE=$node_image" \
    -f "deploy/docker/$svc.Dockerfile" -t "felix-$svc:$TAG" "$stage" >/dev/null
  size=$("$DOCKER" image inspect -f '{{.Size}}' "felix-$svc:$TAG")
  echo "build-images: felix-$svc:$TAG $((size / 1000000)) MB"
done
