/**
 * felixctl's context file: named data-plane connection settings (servers, tenant, namespace,
 * token, TLS pin) and which one is current, like `nats context`. It lives at
 * FELIX_CONTEXTS_FILE, else `$XDG_CONFIG_HOME/felix/contexts.json`, else
 * `~/.config/felix/contexts.json`, and is written 0600 in a 0700 directory: it holds tokens.
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { UsageError } from './report.js';

export interface ContextSettings {
  servers?: string[];
  tenant?: string;
  namespace?: string;
  token?: string;
  fingerprint?: string;
  /** Path of a PEM CA bundle. */
  ca?: string;
  serverName?: string;
  insecure?: boolean;
}

export interface ContextFile {
  current?: string;
  contexts: Record<string, ContextSettings>;
}

export function contextsPath(env: Record<string, string | undefined>): string {
  if (env.FELIX_CONTEXTS_FILE) return env.FELIX_CONTEXTS_FILE;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'felix', 'contexts.json');
}

/** The stored contexts; an absent file holds none. */
export async function readContexts(path: string): Promise<ContextFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} };
    throw err;
  }
  const parsed = JSON.parse(text) as Partial<ContextFile>;
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.contexts !== 'object') {
    throw new UsageError(`${path} is not a felixctl context file`, 'remove it or fix its JSON');
  }
  return {
    contexts: parsed.contexts ?? {},
    ...(parsed.current ? { current: parsed.current } : {}),
  };
}

/** Writes through a 0600 temporary file renamed over the old one: the tokens are never exposed. */
export async function writeContexts(path: string, file: ContextFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

/** A token shown without its secret part: its first characters and its length. */
export function redact(token: string | undefined): string {
  if (!token) return '-';
  return `${token.slice(0, 6)}…(${token.length} chars)`;
}
