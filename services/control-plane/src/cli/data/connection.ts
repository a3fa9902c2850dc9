/**
 * Where the data verbs connect: each setting from its flag, else its FELIX_* variable (the names
 * the client docs use), else the selected context (--context, FELIX_CONTEXT, else the current
 * one). The token is never the control-plane login's: the broker wants a broker-audience token.
 */
import { readFile } from 'node:fs/promises';
import { type ConnectOptions, type FelixClient, connect } from '@felix/client';
import type { Command } from 'commander';
import type { CliIo } from '../api.js';
import { type ContextSettings, contextsPath, readContexts } from './contexts.js';
import { CONNECT_ATTEMPTS_MAX, TIMEOUT_MS_DEFAULT } from './limits.js';
import { UsageError } from './report.js';

/** The global flags that say where and how to connect. */
export interface ConnFlags {
  /** Comma-separated broker addresses. */
  server?: string;
  tenant?: string;
  namespace?: string;
  token?: string;
  fingerprint?: string;
  ca?: string;
  serverName?: string;
  insecure?: boolean;
  context?: string;
  timeout?: string;
}

/**
 * Declares the connection flags on every data verb (after the verb: `felixctl pub --tenant t1`).
 * They are not the program's: `login` and `token` have a `--tenant` of their own.
 */
export function connectionOptions(verb: Command): void {
  verb
    .option(
      '-s, --server <urls>',
      'broker addresses, comma-separated, quic:// or tls:// (FELIX_SERVERS)',
    )
    .option('--tenant <tenant>', 'tenant of the data verbs (FELIX_TENANT)')
    .option('--namespace <ns>', 'namespace of the data verbs (FELIX_NAMESPACE, default "default")')
    .option(
      '--fingerprint <sha256>',
      "broker certificate's SHA-256 fingerprint (FELIX_FINGERPRINT)",
    )
    .option('--ca <file>', 'PEM CA bundle that signed the broker certificate (FELIX_CA)')
    .option('--server-name <name>', 'TLS server name to verify (FELIX_SERVER_NAME)')
    .option('--insecure', 'accept any broker certificate: development only (FELIX_INSECURE=1)')
    .option('--context <name>', 'connection context to use (FELIX_CONTEXT, else the current one)')
    .option('--timeout <ms>', `connect and request timeout in ms (default ${TIMEOUT_MS_DEFAULT})`);
}

/** The settings in force: flags over env over the context. */
export async function resolveSettings(flags: ConnFlags, io: CliIo): Promise<ContextSettings> {
  const ctx = await selectedContext(flags, io);
  const env = io.env;
  const pick = <T>(...vals: (T | undefined | '')[]) =>
    vals.find((v) => v !== undefined && v !== '') as T | undefined;
  const envServers = env.FELIX_SERVERS ? env.FELIX_SERVERS.split(',') : undefined;
  const s: ContextSettings = {};
  const servers = pick(flags.server?.split(','), envServers, ctx.servers);
  if (servers) s.servers = servers;
  const set = <K extends keyof ContextSettings>(k: K, v: ContextSettings[K] | undefined) => {
    if (v !== undefined) s[k] = v;
  };
  set('tenant', pick(flags.tenant, env.FELIX_TENANT, ctx.tenant));
  set('namespace', pick(flags.namespace, env.FELIX_NAMESPACE, ctx.namespace));
  set('token', pick(flags.token, env.FELIX_TOKEN, ctx.token));
  set('fingerprint', pick(flags.fingerprint, env.FELIX_FINGERPRINT, ctx.fingerprint));
  set('ca', pick(flags.ca, env.FELIX_CA, ctx.ca));
  set('serverName', pick(flags.serverName, env.FELIX_SERVER_NAME, ctx.serverName));
  set('insecure', flags.insecure || env.FELIX_INSECURE === '1' || ctx.insecure || undefined);
  return s;
}

async function selectedContext(flags: ConnFlags, io: CliIo): Promise<ContextSettings> {
  const file = await readContexts(contextsPath(io.env));
  const name = flags.context ?? (io.env.FELIX_CONTEXT || undefined) ?? file.current;
  if (name === undefined) return {};
  const ctx = file.contexts[name];
  if (!ctx) throw new UsageError(`no context named ${name}`, 'felixctl context ls');
  return ctx;
}

/** Client options for the settings; a missing server or tenant is a usage error. */
export async function connectOptions(
  s: ContextSettings,
  timeoutMs: number,
): Promise<ConnectOptions> {
  if (!s.servers?.length)
    throw new UsageError('no broker address', 'pass --server, set FELIX_SERVERS or use a context');
  if (!s.tenant)
    throw new UsageError('no tenant', 'pass --tenant, set FELIX_TENANT or use a context');
  const tls: NonNullable<ConnectOptions['tls']> = {};
  if (s.fingerprint) tls.fingerprint = s.fingerprint;
  if (s.ca) tls.ca = await readFile(s.ca, 'utf8');
  if (s.serverName) tls.serverName = s.serverName;
  if (s.insecure) tls.insecure = true;
  return {
    servers: s.servers,
    tenant: s.tenant,
    namespace: s.namespace ?? 'default',
    ...(s.token ? { token: s.token } : {}),
    tls,
    connectTimeoutMs: timeoutMs,
    requestTimeoutMs: timeoutMs,
    reconnect: { attemptsMax: CONNECT_ATTEMPTS_MAX },
  };
}

/** What a data verb gets: a connected client and the process's interrupt signal. */
export interface DataEnv {
  io: DataIo;
  flags: () => ConnFlags & { json: boolean };
}

/** felixctl's io plus what only the data verbs use. */
export interface DataIo extends CliIo {
  /** Standard input, for `pub` without data. */
  stdin?: NodeJS.ReadableStream;
  /** Standard error as a stream, for progress bars (absent: no bar). */
  stderr?: NodeJS.WritableStream;
  /** Aborted on SIGINT / SIGTERM: long verbs stop cleanly. */
  signal?: AbortSignal;
}

export function timeoutOf(flags: ConnFlags): number {
  if (flags.timeout === undefined) return TIMEOUT_MS_DEFAULT;
  const ms = Number(flags.timeout);
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new UsageError(`--timeout ${flags.timeout} is not a positive number of ms`);
  return ms;
}

/** Connects, runs `fn` with the client and closes it whatever happens. */
export async function withClient<T>(env: DataEnv, fn: (c: FelixClient) => Promise<T>): Promise<T> {
  const flags = env.flags();
  const options = await connectOptions(await resolveSettings(flags, env.io), timeoutOf(flags));
  const client = await connect(options);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
