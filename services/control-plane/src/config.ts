/**
 * Configuration from FELIX_CONTROLPLANE_* environment variables (documented in
 * docs/control-plane.md and the package README). Parsing is pure: it takes the env object.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isFetchBlockedPort } from '@felix/common';
import pino from 'pino';
import { ConfigInvalidError } from './errors.js';
import {
  BOOTSTRAP_TOKEN_CHARS_MIN,
  CHANGE_RETENTION_ROWS_DEFAULT,
  CHANGES_LIMIT_DEFAULT,
  EXPIRY_SWEEP_INTERVAL_MS_DEFAULT,
  EXPIRY_TIMEOUT_MS_DEFAULT,
  HEARTBEAT_INTERVAL_MS_DEFAULT,
  PAGE_LIMIT_MAX,
  POSTGRES_CONNECT_TIMEOUT_MS_DEFAULT,
  POSTGRES_MAX_CONNECTIONS_DEFAULT,
  LEADER_REBALANCE_DELAY_MS_DEFAULT,
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
  /** How long a quorum shard's preferred broker must have been registered before its
   *  leadership moves back to it (cluster/rebalance.ts); 0 or absent: never. */
  leaderRebalanceDelayMs?: number;
}

/** The bootstrap listener (docs/security.md, "Bootstrap"): off unless enabled. */
export interface BootstrapConfig {
  enabled: boolean;
  host: string;
  port: number;
  /** The static token (FELIX_BOOTSTRAP_TOKEN or the content of FELIX_BOOTSTRAP_TOKEN_FILE). */
  token: string | undefined;
  /** The token being rotated out, still accepted (FELIX_BOOTSTRAP_TOKEN_PREVIOUS). */
  tokenPrevious: string | undefined;
  /** Bind a non-loopback address (FELIX_BOOTSTRAP_ALLOW_NON_LOOPBACK=true); refused otherwise. */
  allowNonLoopback: boolean;
  /** Serve `…/dev-token` (FELIX_BOOTSTRAP_DEV_TOKENS=true; only on a loopback bind). */
  devTokens: boolean;
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
  bootstrap: BootstrapConfig;
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

function bind(raw: string, name = 'FELIX_CONTROLPLANE_BIND'): { host: string; port: number } {
  const at = raw.lastIndexOf(':');
  const digits = raw.slice(at + 1);
  // Decimal digits only: Number() reads '' (a `host:$PORT` with PORT unset) as 0, a random port,
  // and takes hex and exponents. 0 written out still asks for an ephemeral port.
  const port = /^[0-9]{1,5}$/.test(digits) ? Number(digits) : Number.NaN;
  if (at < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigInvalidError(
      `${name}=${raw} must be host:port, the port in decimal digits (0 to 65535)`,
    );
  }
  return { host: raw.slice(0, at).replace(/^\[|\]$/g, ''), port };
}

/** Refuses a listener port that fetch clients (brokers, felixctl, browsers) cannot reach. */
function checkFetchable(name: string, host: string, port: number): void {
  if (isFetchBlockedPort(port)) {
    throw new ConfigInvalidError(
      `${name}=${host}:${port}: port ${port} is one fetch clients refuse ("bad port"), so brokers and felixctl could not reach it; pick another`,
    );
  }
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

function bool(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ConfigInvalidError(`${name}=${raw} must be true or false`);
}

/** True for an address only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Reads and checks the bootstrap settings; an enabled listener needs a strong token and a loopback bind unless allowed. */
export function loadBootstrapConfig(env: Env, readFile: (p: string) => string): BootstrapConfig {
  const { host, port } = bind(
    env.FELIX_BOOTSTRAP_BIND_ADDR || '127.0.0.1:9095',
    'FELIX_BOOTSTRAP_BIND_ADDR',
  );
  const file = env.FELIX_BOOTSTRAP_TOKEN_FILE;
  const enabled = bool(env, 'FELIX_BOOTSTRAP_ENABLED');
  // The file is read only for a listener that runs: a deployment may name it everywhere.
  const token = env.FELIX_BOOTSTRAP_TOKEN || (file && enabled ? readFile(file).trim() : undefined);
  const c: BootstrapConfig = {
    enabled,
    host,
    port,
    token,
    tokenPrevious: env.FELIX_BOOTSTRAP_TOKEN_PREVIOUS || undefined,
    allowNonLoopback: bool(env, 'FELIX_BOOTSTRAP_ALLOW_NON_LOOPBACK'),
    devTokens: bool(env, 'FELIX_BOOTSTRAP_DEV_TOKENS'),
  };
  if (!c.enabled) return c;
  checkFetchable('FELIX_BOOTSTRAP_BIND_ADDR', host, port);
  for (const [name, t] of [
    ['FELIX_BOOTSTRAP_TOKEN', c.token],
    ['FELIX_BOOTSTRAP_TOKEN_PREVIOUS', c.tokenPrevious],
  ] as const) {
    if (name === 'FELIX_BOOTSTRAP_TOKEN' && t === undefined)
      throw new ConfigInvalidError(
        'FELIX_BOOTSTRAP_ENABLED=true needs FELIX_BOOTSTRAP_TOKEN[_FILE]',
      );
    if (t !== undefined && t.length < BOOTSTRAP_TOKEN_CHARS_MIN)
      throw new ConfigInvalidError(
        `${name} must be at least ${BOOTSTRAP_TOKEN_CHARS_MIN} characters`,
      );
  }
  if (!isLoopback(host) && !c.allowNonLoopback)
    throw new ConfigInvalidError(
      `FELIX_BOOTSTRAP_BIND_ADDR=${host}:${port} is not loopback; set FELIX_BOOTSTRAP_ALLOW_NON_LOOPBACK=true to allow it`,
    );
  if (c.devTokens && !isLoopback(host))
    throw new ConfigInvalidError(
      'FELIX_BOOTSTRAP_DEV_TOKENS needs a loopback FELIX_BOOTSTRAP_BIND_ADDR',
    );
  return c;
}

function feedLimits(env: Env): Pick<ControlPlaneConfig, 'changesLimit' | 'changeRetentionRows'> {
  return {
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
  };
}

/** pino's levels (trace … fatal) and `silent`: anything else would make pino throw at start. */
const LOG_LEVELS = [...Object.keys(pino.levels.values), 'silent'];

function logLevel(raw: string): string {
  if (!LOG_LEVELS.includes(raw)) {
    throw new ConfigInvalidError(
      `FELIX_CONTROLPLANE_LOG_LEVEL=${raw} must be one of ${LOG_LEVELS.join(', ')}`,
    );
  }
  return raw;
}

export function loadConfig(
  env: Env = process.env,
  readFile: (p: string) => string = (p) => readFileSync(p, 'utf8'),
): ControlPlaneConfig {
  const { host, port } = bind(env.FELIX_CONTROLPLANE_BIND ?? '0.0.0.0:8443');
  checkFetchable('FELIX_CONTROLPLANE_BIND', host, port);
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
    leaderRebalanceDelayMs: int(
      env,
      'FELIX_CONTROLPLANE_LEADER_REBALANCE_DELAY_MS',
      LEADER_REBALANCE_DELAY_MS_DEFAULT,
      0,
      86_400_000,
    ),
  });
  return {
    host,
    port,
    regionId: env.FELIX_CONTROLPLANE_REGION_ID || 'local',
    logLevel: logLevel(env.FELIX_CONTROLPLANE_LOG_LEVEL || 'info'),
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
    ...feedLimits(env),
    liveness,
    bootstrap: loadBootstrapConfig(env, readFile),
  };
}
