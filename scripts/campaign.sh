#!/usr/bin/env bash
# The long fault campaign (issue 22): 10 minutes of every nemesis against a real cluster, every
# workload recorded and checked. Builds first (turbo's cache makes that seconds when nothing
# changed), so a campaign never runs a stale checker or broker; SKIP_BUILD=1 skips it.
# Output: .campaign/<seed>/ (history.jsonl, report.txt, timeline.svg, faults.json, logs/).
# Exit code: 0 valid, 1 a violation, 2 a harness failure.
#
# Environment overrides:
#   SEED          the seed (default: random, printed; rerun with it to replay the faults)
#   DURATION      default 10m
#   BROKERS       default 1; 3 or more replicate every shard (RF 3, quorum streams), e.g.
#                 BROKERS=3 FSYNC_FAILURES=0 WORKLOAD=streams,groups scripts/campaign.sh
#   NEMESIS       default kill,pause,partition,fsync
#   WORKLOAD      default streams,caches,counters,groups
#   CONTROLPLANE  sqlite (default) or postgres
#   FSYNC_FAILURES  1 (default): the fsync nemesis may fail an fsync; 0: it only slows them
#   OUT           default .campaign/<seed>
#   SKIP_BUILD=1  run what is built without building first
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export COREPACK_ENABLE_DOWNLOAD_PROMPT=0 TURBO_TELEMETRY_DISABLED=1 npm_config_nodedir=/usr

cli="packages/testing/cluster/dist/campaign-cli.js"
if [[ "${SKIP_BUILD:-0}" != "1" || ! -f "$cli" || ! -f services/broker/dist/main.js ]]; then
  echo "campaign: building"
  npx --yes pnpm@10.34.9 run build >/dev/null
fi

seed="${SEED:-$(node -e 'console.log(Math.floor(Math.random() * 0x7fffffff))')}"
out="${OUT:-.campaign/$seed}"
mkdir -p "$out"
fsync_flag=()
if [[ "${FSYNC_FAILURES:-1}" == "0" ]]; then fsync_flag=(--no-fsync-failures); fi

exec node "$cli" \
  --seed "$seed" \
  --duration "${DURATION:-10m}" \
  --brokers "${BROKERS:-1}" \
  --nemesis "${NEMESIS:-kill,pause,partition,fsync}" \
  --workload "${WORKLOAD:-streams,caches,counters,groups}" \
  --controlplane "${CONTROLPLANE:-sqlite}" \
  "${fsync_flag[@]}" \
  --out "$out"
