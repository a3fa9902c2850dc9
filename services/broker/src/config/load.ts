/**
 * Builds the broker config: registry defaults, then FELIX_* environment variables, then the YAML
 * file named by FELIX_BROKER_CONFIG (later wins). Unknown keys, bad values and invalid
 * combinations are startup errors naming the key. Pure apart from reading the file.
 */
import { readFileSync, statSync } from 'node:fs';
import { isName } from '@felix/authz';
import { parse as parseYaml } from 'yaml';
import {
  ConfigFileError,
  ConfigInvalidCombinationError,
  ConfigInvalidValueError,
  ConfigUnknownKeyError,
} from '../errors.js';
import {
  CATALOG_STREAMS_MAX,
  CONFIG_FILE_BYTES_MAX,
  GROUP_CURSOR_FSYNC_INTERVAL_MS_MAX,
  IDENT_BYTES_MAX,
  STREAM_SHARDS_MAX,
} from '../limits.js';
import {
  CACHE_KEYS,
  CONFIG_FILE_ENV,
  CONFIG_VARS,
  type ConfigValue,
  type ConfigVar,
  FSYNC_MODES,
  GROUP_CURSOR_FSYNC_MODES,
  OWNED_ENV_PREFIXES,
  RETENTION_KEYS,
  STREAM_KEYS,
  TOP_KEYS,
} from './registry.js';
import type {
  BrokerConfig,
  CacheConfig,
  FsyncModeName,
  GroupCursorFsyncName,
  StreamConfig,
} from './types.js';

type Flat = Map<string, ConfigValue>;

function parseEnvValue(v: ConfigVar, raw: string, source: string): ConfigValue {
  if (v.type === 'list')
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  if (v.type === 'int') {
    if (!/^-?\d+$/.test(raw.trim()))
      throw new ConfigInvalidValueError(v.key, source, `not an integer: ${raw}`);
    return Number(raw.trim());
  }
  if (v.type === 'bool') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigInvalidValueError(v.key, source, `not a boolean: ${raw}`);
  }
  return raw;
}

function checkValue(v: ConfigVar, value: unknown, source: string): ConfigValue {
  if (value === null) return null;
  switch (v.type) {
    case 'int': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        throw new ConfigInvalidValueError(
          v.key,
          source,
          `expected an integer, got ${JSON.stringify(value)}`,
        );
      }
      if (v.min !== undefined && value < v.min)
        throw new ConfigInvalidValueError(v.key, source, `${value} is below ${v.min}`);
      if (v.max !== undefined && value > v.max)
        throw new ConfigInvalidValueError(v.key, source, `${value} is above ${v.max}`);
      return value;
    }
    case 'bool':
      if (typeof value !== 'boolean')
        throw new ConfigInvalidValueError(v.key, source, 'expected true or false');
      return value;
    case 'string':
      if (typeof value !== 'string')
        throw new ConfigInvalidValueError(v.key, source, 'expected a string');
      if (v.nonEmpty === true && value.trim() === '')
        throw new ConfigInvalidValueError(v.key, source, 'is empty: set it, or leave it unset');
      return checkFormat(v, value, source);
    case 'enum':
      if (typeof value !== 'string' || !v.values?.includes(value)) {
        throw new ConfigInvalidValueError(
          v.key,
          source,
          `expected one of ${v.values?.join(', ')}, got ${JSON.stringify(value)}`,
        );
      }
      return value;
    case 'list': {
      if (
        !Array.isArray(value) ||
        value.some((x) => typeof x !== 'string' || !v.values?.includes(x))
      ) {
        throw new ConfigInvalidValueError(
          v.key,
          source,
          `expected a list of ${v.values?.join(', ')}`,
        );
      }
      return [...new Set(value as string[])];
    }
  }
}

/** A `string` with a `format` must also be of that form (a node id, a control-plane URL). */
function checkFormat(v: ConfigVar, value: string, source: string): string {
  if (v.format === 'name' && !isName(value)) {
    throw new ConfigInvalidValueError(
      v.key,
      source,
      `${JSON.stringify(value.slice(0, 140))} must be 1-128 characters of [A-Za-z0-9_.-], starting alphanumeric`,
    );
  }
  // An empty URL means "unset" (the standalone catalog), as the docs say.
  if (v.format === 'http_url' && value !== '') {
    let url: URL | null = null;
    try {
      url = new URL(value);
    } catch {
      // Not a URL at all: refused below, naming what is expected.
    }
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new ConfigInvalidValueError(
        v.key,
        source,
        `${JSON.stringify(value.slice(0, 200))} is not an http:// or https:// URL (e.g. http://host:8443)`,
      );
    }
  }
  return value;
}

/** The variable an unknown one probably meant: the same name with or without `BROKER_` (some
 *  keys' variables have it, some do not: `FELIX_PUBLISH_QUORUM_TIMEOUT_MS`). */
function envMeant(name: string): string | undefined {
  const bare = (n: string) => n.replace(/^FELIX_(BROKER_)?/, '');
  const tail = bare(name);
  return CONFIG_VARS.find((v) => v.env !== name && bare(v.env) === tail)?.env;
}

function applyEnv(flat: Flat, env: NodeJS.ProcessEnv): void {
  const byEnv = new Map(CONFIG_VARS.map((v) => [v.env, v]));
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined || name === CONFIG_FILE_ENV) continue;
    const v = byEnv.get(name);
    if (!v) {
      if (OWNED_ENV_PREFIXES.some((p) => name.startsWith(p)))
        throw new ConfigUnknownKeyError(name, 'environment', envMeant(name));
      continue;
    }
    const source = `environment ${name}`;
    flat.set(v.key, checkValue(v, parseEnvValue(v, raw, source), source));
  }
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function applyYamlSections(flat: Flat, doc: Record<string, unknown>, source: string): void {
  const byKey = new Map(CONFIG_VARS.map((v) => [v.key, v]));
  for (const [top, section] of Object.entries(doc)) {
    if (!(TOP_KEYS as readonly string[]).includes(top))
      throw new ConfigUnknownKeyError(top, source);
    if (top === 'streams' || top === 'caches') continue;
    if (section === null) continue;
    if (!isObject(section)) throw new ConfigInvalidValueError(top, source, 'expected a mapping');
    for (const [name, value] of Object.entries(section)) {
      const key = `${top}.${name}`;
      const v = byKey.get(key);
      if (!v) throw new ConfigUnknownKeyError(key, source);
      flat.set(key, checkValue(v, value, source));
    }
  }
}

function ident(value: unknown, key: string, source: string): string {
  if (typeof value !== 'string' || value === '' || Buffer.byteLength(value) > IDENT_BYTES_MAX) {
    throw new ConfigInvalidValueError(
      key,
      source,
      `expected a non-empty name of at most ${IDENT_BYTES_MAX} bytes`,
    );
  }
  return value;
}

function optInt(
  value: unknown,
  key: string,
  source: string,
  min: number,
  max: number,
): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigInvalidValueError(key, source, `expected an integer in ${min}..${max}`);
  }
  return value;
}

function checkKeys(
  entry: Record<string, unknown>,
  allowed: readonly string[],
  at: string,
  source: string,
): void {
  for (const k of Object.keys(entry))
    if (!allowed.includes(k)) throw new ConfigUnknownKeyError(`${at}.${k}`, source);
}

function parseStream(entry: unknown, i: number, flat: Flat, source: string): StreamConfig {
  const at = `streams[${i}]`;
  if (!isObject(entry)) throw new ConfigInvalidValueError(at, source, 'expected a mapping');
  checkKeys(entry, STREAM_KEYS, at, source);
  const retention = entry.retention ?? {};
  if (!isObject(retention))
    throw new ConfigInvalidValueError(`${at}.retention`, source, 'expected a mapping');
  checkKeys(retention, RETENTION_KEYS, `${at}.retention`, source);
  const fsync = entry.fsync ?? flat.get('durable.fsync_mode');
  if (typeof fsync !== 'string' || !(FSYNC_MODES as readonly string[]).includes(fsync)) {
    throw new ConfigInvalidValueError(
      `${at}.fsync`,
      source,
      `expected one of ${FSYNC_MODES.join(', ')}`,
    );
  }
  const durable = entry.durable ?? false;
  if (typeof durable !== 'boolean')
    throw new ConfigInvalidValueError(`${at}.durable`, source, 'expected true or false');
  const routing = entry.routing ?? 'modulo';
  if (routing !== 'modulo' && routing !== 'jump_hash') {
    throw new ConfigInvalidValueError(`${at}.routing`, source, 'expected modulo or jump_hash');
  }
  return {
    tenant: ident(entry.tenant, `${at}.tenant`, source),
    namespace: ident(entry.namespace ?? 'default', `${at}.namespace`, source),
    name: ident(entry.name, `${at}.name`, source),
    shards: optInt(entry.shards, `${at}.shards`, source, 1, STREAM_SHARDS_MAX) ?? 1,
    durable,
    fsync: fsync as FsyncModeName,
    fsync_interval_ms:
      optInt(entry.fsync_interval_ms, `${at}.fsync_interval_ms`, source, 1, 60_000) ??
      (flat.get('durable.fsync_interval_ms') as number),
    retention: {
      max_bytes: optInt(retention.max_bytes, `${at}.retention.max_bytes`, source, 1, 2 ** 50),
      max_age_seconds: optInt(
        retention.max_age_seconds,
        `${at}.retention.max_age_seconds`,
        source,
        1,
        2 ** 40,
      ),
    },
    routing,
    ...groupCursorOf(entry, at, source),
  };
}

/** A stream entry's own group cursor durability; what it leaves out follows the `groups` section. */
function groupCursorOf(
  entry: Record<string, unknown>,
  at: string,
  source: string,
): Pick<StreamConfig, 'group_cursor_fsync' | 'group_cursor_fsync_interval_ms'> {
  const out: Pick<StreamConfig, 'group_cursor_fsync' | 'group_cursor_fsync_interval_ms'> = {};
  const mode = entry.group_cursor_fsync;
  if (mode !== undefined && mode !== null) {
    if (
      typeof mode !== 'string' ||
      !(GROUP_CURSOR_FSYNC_MODES as readonly string[]).includes(mode)
    ) {
      const allowed = GROUP_CURSOR_FSYNC_MODES.join(', ');
      throw new ConfigInvalidValueError(
        `${at}.group_cursor_fsync`,
        source,
        `expected one of ${allowed}`,
      );
    }
    out.group_cursor_fsync = mode as GroupCursorFsyncName;
  }
  const key = `${at}.group_cursor_fsync_interval_ms`;
  const interval = optInt(
    entry.group_cursor_fsync_interval_ms,
    key,
    source,
    1,
    GROUP_CURSOR_FSYNC_INTERVAL_MS_MAX,
  );
  if (interval !== null) out.group_cursor_fsync_interval_ms = interval;
  return out;
}

function parseCache(entry: unknown, i: number, source: string): CacheConfig {
  const at = `caches[${i}]`;
  if (!isObject(entry)) throw new ConfigInvalidValueError(at, source, 'expected a mapping');
  checkKeys(entry, CACHE_KEYS, at, source);
  const durable = entry.durable ?? false;
  if (typeof durable !== 'boolean')
    throw new ConfigInvalidValueError(`${at}.durable`, source, 'expected true or false');
  return {
    tenant: ident(entry.tenant, `${at}.tenant`, source),
    namespace: ident(entry.namespace ?? 'default', `${at}.namespace`, source),
    name: ident(entry.name, `${at}.name`, source),
    shards: optInt(entry.shards, `${at}.shards`, source, 1, STREAM_SHARDS_MAX) ?? 1,
    durable,
    default_ttl_ms: optInt(entry.default_ttl_ms, `${at}.default_ttl_ms`, source, 1, 2 ** 45),
  };
}

function readYaml(path: string): Record<string, unknown> {
  let text: string;
  try {
    if (statSync(path).size > CONFIG_FILE_BYTES_MAX)
      throw new Error(`larger than ${CONFIG_FILE_BYTES_MAX} bytes`);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigFileError(path, (err as Error).message, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigFileError(path, `not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  if (doc === null || doc === undefined) return {};
  if (!isObject(doc)) throw new ConfigFileError(path, 'the top level must be a mapping');
  return doc;
}

function nest(flat: Flat): Record<string, Record<string, ConfigValue>> {
  const out: Record<string, Record<string, ConfigValue>> = {};
  for (const v of CONFIG_VARS) {
    const [section, name] = v.key.split('.') as [string, string];
    out[section] ??= {};
    out[section][name] = flat.get(v.key) ?? null;
  }
  return out;
}

function validateCombinations(cfg: BrokerConfig): void {
  const b = cfg.broker;
  if ((b.tls_cert === null) !== (b.tls_key === null)) {
    throw new ConfigInvalidCombinationError(
      ['broker.tls_cert', 'broker.tls_key'],
      'set both or neither',
    );
  }
  if (b.transports.length === 0)
    throw new ConfigInvalidCombinationError(['broker.transports'], 'at least one transport');
  if (b.preauth_max_frame_bytes > b.max_frame_bytes) {
    throw new ConfigInvalidCombinationError(
      ['broker.preauth_max_frame_bytes', 'broker.max_frame_bytes'],
      'the pre-auth bound cannot exceed the frame bound',
    );
  }
  validateAuth(cfg);
  validateInternal(cfg);
  const seen = new Set<string>();
  cfg.streams.forEach((s, i) => {
    const id = `${s.tenant}/${s.namespace}/${s.name}`;
    if (seen.has(id))
      throw new ConfigInvalidCombinationError([`streams[${i}]`], `stream ${id} is declared twice`);
    seen.add(id);
    if (s.durable && cfg.durable.data_dir === null) {
      throw new ConfigInvalidCombinationError(
        [`streams[${i}].durable`, 'durable.data_dir'],
        `durable stream ${id} needs durable.data_dir (FELIX_DURABLE_STORAGE_DIR)`,
      );
    }
    if (!s.durable && (s.retention.max_bytes !== null || s.retention.max_age_seconds !== null)) {
      throw new ConfigInvalidCombinationError(
        [`streams[${i}].retention`, `streams[${i}].durable`],
        'retention applies to durable streams; an in-memory stream is bounded by memory.ring_*',
      );
    }
  });
  if (cfg.streams.length > CATALOG_STREAMS_MAX) {
    throw new ConfigInvalidCombinationError(['streams'], `at most ${CATALOG_STREAMS_MAX} streams`);
  }
  const caches = new Set<string>();
  cfg.caches.forEach((c, i) => {
    const id = `${c.tenant}/${c.namespace}/${c.name}`;
    if (caches.has(id))
      throw new ConfigInvalidCombinationError([`caches[${i}]`], `cache ${id} is declared twice`);
    caches.add(id);
    if (c.durable && cfg.durable.data_dir === null) {
      throw new ConfigInvalidCombinationError(
        [`caches[${i}].durable`, 'durable.data_dir'],
        `durable cache ${id} needs durable.data_dir`,
      );
    }
  });
}

/**
 * Dev mode is never what a clustered broker gets by accident (`dev_mode_is_never_the_default`):
 * with a control-plane URL it needs its own explicit setting. Whether `tokens` has a key source
 * is checked when the broker starts (session/key-source.ts), so the config loads for printing.
 */
function validateAuth(cfg: BrokerConfig): void {
  if (cfg.auth.mode === 'dev' && cfg.cluster.controlplane_url && !cfg.auth.dev_with_controlplane) {
    throw new ConfigInvalidCombinationError(
      ['auth.mode', 'cluster.controlplane_url', 'auth.dev_with_controlplane'],
      'auth.mode dev (tokens accepted as given) with a control plane needs ' +
        'auth.dev_with_controlplane: true; a clustered broker verifies tokens by default',
    );
  }
  if (cfg.cluster.node_token !== null && cfg.cluster.node_token_file !== null) {
    throw new ConfigInvalidCombinationError(
      ['cluster.node_token', 'cluster.node_token_file'],
      'set one or neither',
    );
  }
}

/**
 * A broker joins a cluster's internal network only with the cluster certificate (all three
 * files), unless running unauthenticated was asked for by name:
 * `a_broker_configured_for_a_cluster_without_the_certificate_refuses_to_start`.
 */
function validateInternal(cfg: BrokerConfig): void {
  const c = cfg.cluster;
  const files = [c.internal_tls_cert, c.internal_tls_key, c.internal_tls_ca];
  const keys = ['cluster.internal_tls_cert', 'cluster.internal_tls_key', 'cluster.internal_tls_ca'];
  const given = files.filter((f) => f !== null).length;
  if (given !== 0 && given !== 3)
    throw new ConfigInvalidCombinationError(
      keys,
      'set all three cluster certificate files or none',
    );
  if (c.internal_bind !== null && given === 0 && !c.internal_allow_unauthenticated)
    throw new ConfigInvalidCombinationError(
      ['cluster.internal_bind', ...keys, 'cluster.internal_allow_unauthenticated'],
      'refusing to join a cluster without the cluster certificate: set the three ' +
        'FELIX_INTERNAL_TLS_* files, or FELIX_INTERNAL_ALLOW_UNAUTHENTICATED=true to run ' +
        'unauthenticated (any host that reaches the port could act as a peer)',
    );
}

/** The request-edge budgets nest: a frame fits a connection's budgets, which fit the broker's. */
function validateBudgets(cfg: BrokerConfig): void {
  const b = cfg.broker;
  for (const key of ['connection_partial_frame_bytes', 'connection_answer_bytes'] as const) {
    if (b[key] < b.max_frame_bytes) {
      throw new ConfigInvalidCombinationError(
        [`broker.${key}`, 'broker.max_frame_bytes'],
        'a connection budget must hold at least one whole frame',
      );
    }
    if (b.inflight_request_bytes < b[key]) {
      throw new ConfigInvalidCombinationError(
        ['broker.inflight_request_bytes', `broker.${key}`],
        'the broker-wide budget must hold at least one connection budget',
      );
    }
  }
}

/** Loads and validates the config from `env` (and the file it names). Throws a BrokerError. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): BrokerConfig {
  const flat: Flat = new Map(CONFIG_VARS.map((v) => [v.key, v.default]));
  applyEnv(flat, env);
  const file = env[CONFIG_FILE_ENV];
  let doc: Record<string, unknown> = {};
  if (file !== undefined && file !== '') {
    doc = readYaml(file);
    applyYamlSections(flat, doc, `file ${file}`);
  }
  const source = file ? `file ${file}` : 'defaults';
  const streamsRaw = doc.streams ?? [];
  const cachesRaw = doc.caches ?? [];
  if (!Array.isArray(streamsRaw))
    throw new ConfigInvalidValueError('streams', source, 'expected a list');
  if (!Array.isArray(cachesRaw))
    throw new ConfigInvalidValueError('caches', source, 'expected a list');
  const cfg = {
    ...nest(flat),
    streams: streamsRaw.map((e, i) => parseStream(e, i, flat, source)),
    caches: cachesRaw.map((e, i) => parseCache(e, i, source)),
  } as unknown as BrokerConfig;
  validateCombinations(cfg);
  validateBudgets(cfg);
  return cfg;
}
