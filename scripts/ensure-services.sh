#!/usr/bin/env bash
# Makes sure the services the test suite talks to are up: PostgreSQL (the control plane's HA
# store is tested against the real server). Starts it when it is down; never stops anything.
set -uo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

if ! command -v pg_isready >/dev/null 2>&1; then
  echo "ensure-services: pg_isready not found; PostgreSQL tests will fail" >&2
  exit 0
fi
if ! pg_up; then
  echo "ensure-services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  for _ in $(seq 1 60); do pg_up && break; sleep 0.5; done
fi
if pg_up; then
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" postgres | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test" postgres
  echo "ensure-services: PostgreSQL is up"
else
  echo "ensure-services: PostgreSQL did not come up" >&2
fi
