/**
 * felixctl's credentials file: the control-plane URL, the tenant, the Felix token and the
 * refresh token `login` stored. It lives at FELIX_CONFIG, else
 * `$XDG_CONFIG_HOME/felix/credentials.json`, else `~/.config/felix/credentials.json`, and is
 * written with mode 0600 (its directory 0700) because it holds bearer credentials.
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export interface Credentials {
  url?: string;
  tenant?: string;
  token?: string;
  refresh_token?: string;
}

/** Where the credentials file is for this environment. */
export function credentialsPath(env: Record<string, string | undefined>): string {
  if (env.FELIX_CONFIG) return env.FELIX_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'felix', 'credentials.json');
}

/** The stored credentials; an absent file is empty credentials. */
export async function readCredentials(path: string): Promise<Credentials> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${path} does not hold a JSON object`);
  }
  const c = parsed as Record<string, unknown>;
  const str = (k: string) => (typeof c[k] === 'string' ? (c[k] as string) : undefined);
  const out: Credentials = {};
  for (const k of ['url', 'tenant', 'token', 'refresh_token'] as const) {
    const v = str(k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * Writes the credentials with mode 0600: to a temporary file created with that mode, then
 * renamed over the old one, so the secret is never readable by others even for a moment.
 */
export async function writeCredentials(path: string, c: Credentials): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600); // a umask cannot widen it, but an existing tmp file might be wider
  await rename(tmp, path);
}
