/**
 * The holder record of a directory lock (`felix.lock`) and whether its holder is alive: pid,
 * process start time (field 22 of /proc/<pid>/stat, where there is one), boot id, the locked
 * directory's identity and a random nonce. /proc is read through the Io like every other file;
 * only the signal-0 probe of a pid goes to the process table directly.
 */
import { randomBytes } from 'node:crypto';
import { fnv1a64 } from '@felix/common';
import { type Io, readFully } from '../io/io.js';
import { DIR_LOCK_FILE_BYTES_MAX, PROC_FILE_BYTES_MAX } from '../limits.js';

export interface Holder {
  pid: number;
  /** Start time in clock ticks since boot, as /proc/<pid>/stat field 22 gives it. */
  start: string | null;
  boot: string | null;
  /** The identity (`Io.dirId`) of the locked directory. */
  dirId: string | null;
  nonce: string;
}

const VERSION_LINE = 'felix-lock 1';
const NONCE = /^[0-9a-f]{32}$/;

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

export function encodeHolder(h: Holder): string {
  const opt = (v: string | null) => v ?? '-';
  return `${VERSION_LINE}\npid ${h.pid}\nstart ${opt(h.start)}\nboot ${opt(h.boot)}\ndir ${opt(h.dirId)}\nnonce ${h.nonce}\n`;
}

/** Lenient on the version (a newer writer's lock is still judged by its pid), strict on pid and nonce. */
function decode(text: string): Holder | null {
  const lines = text.split('\n');
  if (!lines[0]?.startsWith('felix-lock ')) return null;
  const fields = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const space = line.indexOf(' ');
    if (space > 0) fields.set(line.slice(0, space), line.slice(space + 1));
  }
  const pid = Number(fields.get('pid'));
  const nonce = fields.get('nonce') ?? '';
  if (!Number.isSafeInteger(pid) || pid <= 0 || !NONCE.test(nonce)) return null;
  const opt = (k: string) => {
    const v = fields.get(k);
    return v === undefined || v === '-' || v === '' ? null : v;
  };
  return { pid, start: opt('start'), boot: opt('boot'), dirId: opt('dir'), nonce };
}

export function decodeHolder(bytes: Uint8Array): Holder | null {
  return bytes.length > DIR_LOCK_FILE_BYTES_MAX
    ? null
    : decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8'));
}

/** What identifies one lock (or claim) instance: its nonce, else a hash of its bytes. */
export function instanceId(bytes: Uint8Array, name = ''): string {
  const nonce = decodeHolder(bytes)?.nonce;
  if (nonce !== undefined) return nonce;
  // Torn content is named by the file's name too: after a power loss a lock file and its claim
  // can both be empty, and one id for both would make the claim claim itself forever.
  const named = new Uint8Array(name.length + bytes.length);
  for (let i = 0; i < name.length; i++) named[i] = name.charCodeAt(i) & 0xff;
  named.set(bytes, name.length);
  return `x${fnv1a64(named).toString(16)}`;
}

export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** A file's first `max + 1` bytes at most (one past the bound), or null when it does not exist. */
export async function readBounded(io: Io, path: string, max: number): Promise<Uint8Array | null> {
  let file: Awaited<ReturnType<Io['open']>>;
  try {
    file = await io.open(path, 'read');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    const buf = new Uint8Array(max + 1);
    const n = await readFully(file, buf, 0, buf.length, 0);
    return buf.subarray(0, n);
  } finally {
    await file.close();
  }
}

/** A /proc file's text, or null where there is none (no /proc, no such pid, unreadable). */
async function readProc(io: Io, path: string): Promise<string | null> {
  try {
    const bytes = await readBounded(io, path, PROC_FILE_BYTES_MAX);
    return bytes === null ? null : Buffer.from(bytes).toString('utf8');
  } catch {
    // Unreadable counts as absent: liveness then rests on the pid probe alone.
    return null;
  }
}

/** State and start time of a process from /proc, or null where there is no /proc entry. */
async function procStat(
  io: Io,
  pid: number | 'self',
): Promise<{ state: string; start: string } | null> {
  const text = await readProc(io, `/proc/${pid}/stat`);
  if (text === null) return null;
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0];
  const start = rest[19];
  return state === undefined || start === undefined ? null : { state, start };
}

type Identity = { start: string | null; boot: string | null };
/** This process's identity, read once per Io (an in-memory Io has no /proc: both null). */
const identities = new WeakMap<Io, Promise<Identity>>();

function identity(io: Io): Promise<Identity> {
  let known = identities.get(io);
  if (known === undefined) {
    known = (async () => {
      const stat = await procStat(io, 'self');
      const boot = (await readProc(io, '/proc/sys/kernel/random/boot_id'))?.trim() || null;
      return { start: stat?.start ?? null, boot };
    })();
    identities.set(io, known);
  }
  return known;
}

/** A fresh record naming this process as the holder of the directory `dirId`. */
export async function holderRecord(io: Io, dirId: string): Promise<Holder> {
  const me = await identity(io);
  return { pid: process.pid, start: me.start, boot: me.boot, dirId, nonce: newNonce() };
}

/** Whether `h` is a running process holding a lock on the directory `dirId`. */
export async function isAlive(io: Io, h: Holder, dirId: string): Promise<boolean> {
  if (h.dirId !== null && h.dirId !== dirId) return false;
  const self = await identity(io);
  if (h.boot !== null && self.boot !== null && h.boot !== self.boot) return false;
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    // EPERM: the pid exists but belongs to another user; it still counts as alive.
    if (errnoOf(err) === 'ESRCH') return false;
  }
  const stat = await procStat(io, h.pid);
  if (stat !== null) {
    // A zombie has exited and only waits for its parent to reap it.
    if (stat.state === 'Z' || stat.state === 'X') return false;
    if (h.start !== null && stat.start !== h.start) return false;
  }
  return true;
}
