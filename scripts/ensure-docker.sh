#!/usr/bin/env bash
# Makes sure Docker and docker-compose are usable for `pnpm test:deploy`: installs Debian's
# docker.io and docker-compose when missing (CI starts on a fresh machine that reaches only the
# Debian and npm registries) and starts dockerd when it is not answering. Never stops anything.
set -euo pipefail
DOCKER=/usr/bin/docker
WAIT_S=60

if [ ! -x "$DOCKER" ] || ! command -v docker-compose >/dev/null 2>&1; then
  echo "ensure-docker: installing docker.io and docker-compose"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io docker-compose >/dev/null
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "ensure-docker: starting dockerd (log in /tmp/dockerd.log)"
  nohup dockerd >/tmp/dockerd.log 2>&1 &
  for _ in $(seq 1 "$((WAIT_S * 2))"); do
    "$DOCKER" info >/dev/null 2>&1 && break
    sleep 0.5
  done
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "ensure-docker: dockerd did not answer within ${WAIT_S} s; see /tmp/dockerd.log" >&2
  exit 1
fi
echo "ensure-docker: $("$DOCKER" version -f '{{.Server.Version}}') and $(docker-compose version --short)"
