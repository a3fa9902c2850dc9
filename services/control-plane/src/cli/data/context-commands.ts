/**
 * `felixctl context add|use|ls|show|rm`: named connection settings, like `nats context`.
 * `add` takes the global connection flags (--server, --tenant, --token, ...), never the
 * environment, so what is stored is what was typed. Tokens are only ever shown redacted.
 */
import type { Command } from 'commander';
import { table } from '../api.js';
import type { ConnFlags, DataEnv } from './connection.js';
import {
  type ContextFile,
  type ContextSettings,
  contextsPath,
  readContexts,
  redact,
  writeContexts,
} from './contexts.js';
import { UsageError } from './report.js';

function fromFlags(f: ConnFlags): ContextSettings {
  const s: ContextSettings = {};
  if (f.server) s.servers = f.server.split(',');
  for (const k of ['tenant', 'namespace', 'token', 'fingerprint', 'ca', 'serverName'] as const) {
    // An empty value (an unset shell variable: --token "$TOKEN") would be stored as if given,
    // and every verb then fail far from here.
    if (f[k] === '')
      throw new UsageError(`--${flagName(k)} is empty`, 'give it a value or leave it out');
    if (f[k] !== undefined) s[k] = f[k];
  }
  if (f.server === '') throw new UsageError('--server is empty', 'give it a value or leave it out');
  if (f.insecure) s.insecure = true;
  return s;
}

/** The command-line flag of a context setting (`serverName` is `--server-name`). */
function flagName(k: string): string {
  return k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** A context as printed: every setting, the token redacted. */
function shown(name: string, s: ContextSettings, current: boolean) {
  return {
    name,
    current,
    servers: s.servers?.join(',') ?? null,
    tenant: s.tenant ?? null,
    namespace: s.namespace ?? null,
    token: s.token ? redact(s.token) : null,
    fingerprint: s.fingerprint ?? null,
    ca: s.ca ?? null,
    server_name: s.serverName ?? null,
    insecure: s.insecure ?? false,
  };
}

function known(file: ContextFile, name: string): ContextSettings {
  const ctx = file.contexts[name];
  if (!ctx) throw new UsageError(`no context named ${name}`, 'felixctl context ls');
  return ctx;
}

export function contextCommands(program: Command, env: DataEnv): void {
  const path = () => contextsPath(env.io.env);
  const out = (l: string) => env.io.out(l);
  const ctx = program.command('context').description('named broker connection settings');
  ctx
    .command('add <name>')
    .description('store the connection flags given (--server, --tenant, --token, ...) as <name>')
    .option('--select', 'make it the current context')
    .action(async (name: string, o: { select?: boolean }) => {
      const file = await readContexts(path());
      file.contexts[name] = fromFlags(env.flags());
      if (o.select || file.current === undefined) file.current = name;
      await writeContexts(path(), file);
      out(`stored context ${name}${file.current === name ? ' (current)' : ''}`);
    });
  ctx
    .command('use <name>')
    .description('make <name> the current context')
    .action(async (name: string) => {
      const file = await readContexts(path());
      known(file, name);
      file.current = name;
      await writeContexts(path(), file);
      out(`using context ${name}`);
    });
  ctx
    .command('ls')
    .description('list the contexts')
    .action(async () => {
      const file = await readContexts(path());
      const rows = Object.entries(file.contexts).map(([n, s]) => shown(n, s, n === file.current));
      if (env.flags().json) out(JSON.stringify(rows, null, 2));
      else for (const l of table(rows, ['name', 'current', 'servers', 'tenant', 'token'])) out(l);
    });
  ctx
    .command('show [name]')
    .description('show a context (default the current one), its token redacted')
    .action(async (name: string | undefined) => {
      const file = await readContexts(path());
      const n = name ?? file.current;
      if (n === undefined)
        throw new UsageError('no current context', 'felixctl context use <name>');
      const row = shown(n, known(file, n), n === file.current);
      if (env.flags().json) out(JSON.stringify(row, null, 2));
      else for (const [k, v] of Object.entries(row)) out(`${k}: ${v ?? '-'}`);
    });
  ctx
    .command('rm <name>')
    .description('remove a context')
    .action(async (name: string) => {
      const file = await readContexts(path());
      known(file, name);
      delete file.contexts[name];
      if (file.current === name) delete file.current;
      await writeContexts(path(), file);
      out(`removed context ${name}`);
    });
}
