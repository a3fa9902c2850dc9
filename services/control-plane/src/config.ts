/**
 * Configuration from FELIX_CONTROLPLANE_* environment variables (documented in
 * docs/control-plane.md and the package README). Parsing is pure: it takes the env object.
 */
import { join } from 'node:path';
import { ConfigInvalidError } from './errors.js';
import {
  CHANGE_RETENTION_ROWS_DEFAULT,
  CHANGES_LIMIT_DEFAULT,
  EXPIRY_SWEEP_INTERVAL_MS_DEFAULT,
  EXPIRY_TIMEOUT_MS_DEFAULT,
  HEARTBEAT_INTERVAL_MS_DEFAULT,
  PAGE_LIMIT_MAX,
  POSTGRES_CONNECT_TIMEOUT_MS_DEFAULT,
  POSTGRES_MAX_CONNECTIONS_DEFAULT,
  RECONCILE_INTERVAL_MS_DEFAULT,
} from './limits.js';

export interface LivenessConfig {
  heartbeatIntervalMs: number;
  /** L: the lease length brokers receive. */
  expiryTimeoutMs: number;
  /** Extra silence past L before a node is marked down; at least L/4. */
  regrantMarginMs: number;
  sweepIntervalMs: number;
  reconcileIntervalMs: number;
}

export interface ControlPlaneConfig {
  host: string;
  port: number;
  regionId: string;
  logLevel: string;
  backend: 'sqlite' | 'postgres';
  dataDir: string;
  sqlitePath: string;
  postgresUrl: string | undefined;
  postgresSchema: string | undefined;
  postgresMaxConnections: number;
  postgresConnectTimeoutMs: number;
  changesLimit: number;
  changeRetentionRows: number;
  liveness: LivenessConfig;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigInvalidError(`${name}=${raw} must be an integer in ${min}..${max}`);
  }
  return n;
}

function bind(raw: string): { host: string; port: number } {
  const at = raw.lastIndexOf(':');
  const port = Number(raw.slice(at + 1));
  if (at < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigInvalidError(`FELIX_CONTROLPLANE_BIND=${raw} must be host:port`);
  }
  return { host: raw.slice(0, at).replace(/^\[|\]$/g, ''), port };
}

/** Validates liveness timing: expiry must exceed the heartbeat interval; the margin is at least L/4. */
export function checkLiveness(l: LivenessConfig): LivenessConfig {
  if (l.expiryTimeoutMs <= l.heartbeatIntervalMs) {
    throw new ConfigInvalidError(
      'FELIX_CONTROLPLANE_EXPIRY_TIMEOUT_MS must exceed the heartbeat interval',
    );
  }
  if (l.regrantMarginMs * 4 < l.expiryTimeoutMs) {
    throw new ConfigInvalidError(
      'FELIX_CONTROLPLANE_REGRANT_MARGIN_MS may not be below a quarter of the expiry timeout',
    );
  }
  return l;
}

export function loadConfig(env: Env = process.env): ControlPlaneConfig {
  const { host, port } = bind(env.FELIX_CONTROLPLANE_BIND ?? '0.0.0.0:8443');
  const postgresUrl = env.FELIX_CONTROLPLANE_POSTGRES_URL || undefined;
  const declared = env.FELIX_CONTROLPLANE_STORAGE_BACKEND;
  if (
    declared !== undefined &&
    declared !== '' &&
    declared !== 'sqlite' &&
    declared !== 'postgres'
  ) {
    throw new ConfigInvalidError(
      `FELIX_CONTROLPLANE_STORAGE_BACKEND=${declared} must be sqlite or postgres`,
    );
  }
  const backend = declared
    ? (declared as 'sqlite' | 'postgres')
    : postgresUrl
      ? 'postgres'
      : 'sqlite';
  if (backend === 'postgres' && !postgresUrl) {
    throw new ConfigInvalidError('the postgres backend needs FELIX_CONTROLPLANE_POSTGRES_URL');
  }
  const dataDir = env.FELIX_CONTROLPLANE_DATA_DIR || join('.felix', 'controlplane');
  const expiryTimeoutMs = int(
    env,
    'FELIX_CONTROLPLANE_EXPIRY_TIMEOUT_MS',
    EXPIRY_TIMEOUT_MS_DEFAULT,
    2,
    3_600_000,
  );
  const liveness = checkLiveness({
    heartbeatIntervalMs: int(
      env,
      'FELIX_CONTROLPLANE_HEARTBEAT_INTERVAL_MS',
      HEARTBEAT_INTERVAL_MS_DEFAULT,
      1,
      3_600_000,
    ),
    expiryTimeoutMs,
    regrantMarginMs: int(
      env,
      'FELIX_CONTROLPLANE_REGRANT_MARGIN_MS',
      Math.ceil(expiryTimeoutMs / 4),
      1,
      3_600_000,
    ),
    sweepIntervalMs: int(
      env,
      'FELIX_CONTROLPLANE_EXPIRY_SWEEP_INTERVAL_MS',
      EXPIRY_SWEEP_INTERVAL_MS_DEFAULT,
      10,
      600_000,
    ),
    reconcileIntervalMs: int(
      env,
      'FELIX_CONTROLPLANE_RECONCILE_INTERVAL_MS',
      RECONCILE_INTERVAL_MS_DEFAULT,
      10,
      600_000,
    ),
  });
  return {
    host,
    port,
    regionId: env.FELIX_CONTROLPLANE_REGION_ID || 'local',
    logLevel: env.FELIX_CONTROLPLANE_LOG_LEVEL || 'info',
    backend,
    dataDir,
    sqlitePath: join(dataDir, 'controlplane.sqlite'),
    postgresUrl,
    postgresSchema: env.FELIX_CONTROLPLANE_POSTGRES_SCHEMA || undefined,
    postgresMaxConnections: int(
      env,
      'FELIX_CONTROLPLANE_POSTGRES_MAX_CONNECTIONS',
      POSTGRES_MAX_CONNECTIONS_DEFAULT,
      1,
      1000,
    ),
    postgresConnectTimeoutMs: int(
      env,
      'FELIX_CONTROLPLANE_POSTGRES_CONNECT_TIMEOUT_MS',
      POSTGRES_CONNECT_TIMEOUT_MS_DEFAULT,
      1,
      600_000,
    ),
    changesLimit: int(
      env,
      'FELIX_CONTROLPLANE_CHANGES_LIMIT',
      CHANGES_LIMIT_DEFAULT,
      1,
      PAGE_LIMIT_MAX,
    ),
    changeRetentionRows: int(
      env,
      'FELIX_CONTROLPLANE_CHANGE_RETENTION_MAX_ROWS',
      CHANGE_RETENTION_ROWS_DEFAULT,
      1,
      100_000_000,
    ),
    liveness,
  };
}
