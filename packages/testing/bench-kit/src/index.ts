export { assertFreshBuild } from './build.js';
export {
  REPO_ROOT,
  brokerArgsFromEnv,
  brokerNodeFlags,
  startBroker,
} from './broker.js';
export type { BenchBroker, BrokerOptions } from './broker.js';
export { barChartSvg } from './chart.js';
export type { ChartBar, ChartOptions } from './chart.js';
export { argValue, serveSelf } from './cli.js';
export {
  BenchKitError,
  BrokerStartError,
  ProcFormatError,
  ServeSelfError,
  StaleBuildError,
} from './errors.js';
export {
  BROKER_LISTEN_DEADLINE_MS,
  BROKER_LISTEN_SCAN_BYTES_MAX,
  FRESHNESS_SCAN_FILES_MAX,
  SERVE_SELF_LINE_BYTES_MAX,
} from './limits.js';
export {
  latencies,
  median,
  opsPerSecond,
  pairedRatios,
  percentile,
  windowPercentiles,
} from './percentiles.js';
export {
  CLOCK_TICKS_PER_SECOND,
  parseProcStat,
  pidNamed,
  procCpuSecs,
  rssMiB,
  statCpuSecs,
  statusField,
  threadCpuSecs,
} from './proc.js';
export type { ProcCpuTicks } from './proc.js';
export { markdownTable, padCells } from './table.js';
export type { Column, TableOptions } from './table.js';
