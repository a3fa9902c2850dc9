/**
 * The exclusive-writer lock of a directory. Two processes appending to one shard directory
 * would interleave their writes and corrupt the log silently, and Node has no flock, so the
 * lock is a file, `felix.lock`, naming its holder: pid, process start time (field 22 of
 * /proc/<pid>/stat, where there is one), boot id, the directory's device and inode, and a
 * random nonce.
 *
 * - Creation is atomic: the content is written to a uniquely named temp file that is then
 *   hard-linked to the lock name; link fails when the name exists, so the lock name never
 *   shows partial content and exactly one creator wins.
 * - A live holder refuses the opener (DataDirLockedError). A holder is dead when its pid does
 *   not exist or is a zombie, when the pid now belongs to a process with another start time
 *   (pid reuse), or when the lock was written during another boot. A dead holder's lock is
 *   stale and taken over; so is a file that does not parse (only a power loss leaves one,
 *   since the content is complete before the name appears), and one written for another
 *   directory (a copy of a live directory carries its lock along).
 * - Take-over is race-free: to remove a stale lock with nonce N a process must first create
 *   `felix.lock.claim.N` (atomically, as above); only the claim's creator unlinks the lock,
 *   and only after re-reading that it still holds N. A nonce is never reused, so no claim can
 *   remove a newer lock. A claim whose creator died is stale in turn and removed the same way.
 *
 * The liveness check holds within one pid namespace on one host (see docs/durable-storage.md).
 */
import { randomBytes } from 'node:crypto';
import { link, open, readFile, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fnv1a64 } from '@felix/common';
import { DataDirLockBusyError, DataDirLockedError } from '../errors.js';
import { DIR_LOCK_ATTEMPTS_MAX, DIR_LOCK_FILE_BYTES_MAX } from '../limits.js';
import { DIR_LOCK_FILE } from '../log/layout.js';

/** A held directory lock. */
export interface DirLock {
  readonly dir: string;
  /** Removes the lock file if it is still this holder's; later calls do nothing. */
  release(): Promise<void>;
}

interface Holder {
  pid: number;
  /** Start time in clock ticks since boot, as /proc/<pid>/stat field 22 gives it. */
  start: string | null;
  boot: string | null;
  /** `<dev>:<ino>` of the locked directory. */
  dirId: string | null;
  nonce: string;
}

type Seen =
  | { kind: 'missing' }
  | { kind: 'live'; holder: Holder }
  /** `id` is the nonce, or a hash of the bytes when they do not parse. */
  | { kind: 'stale'; id: string };

const VERSION_LINE = 'felix-lock 1';
const NONCE = /^[0-9a-f]{32}$/;
const CLAIM_PREFIX = `${DIR_LOCK_FILE}.claim.`;
const TEMP_PREFIX = `${DIR_LOCK_FILE}.tmp.`;

function newNonce(): string {
  return randomBytes(16).toString('hex');
}

function encode(h: Holder): string {
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

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

async function ignoreMissing(p: Promise<void>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}

/** State and start time of a process from /proc, or null where there is no /proc entry. */
async function procStat(pid: number | 'self'): Promise<{ state: string; start: string } | null> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0];
  const start = rest[19];
  return state === undefined || start === undefined ? null : { state, start };
}

let selfIdentity: Promise<{ start: string | null; boot: string | null }> | undefined;

function identity(): Promise<{ start: string | null; boot: string | null }> {
  selfIdentity ??= (async () => {
    const stat = await procStat('self');
    const boot = await readFile('/proc/sys/kernel/random/boot_id', 'utf8').then(
      (s) => s.trim() || null,
      () => null,
    );
    return { start: stat?.start ?? null, boot };
  })();
  return selfIdentity;
}

async function dirIdOf(dir: string): Promise<string> {
  const st = await stat(dir, { bigint: true });
  return `${st.dev}:${st.ino}`;
}

/** Whether `h` is a running process holding a lock on the directory `dirId`. */
async function isAlive(h: Holder, dirId: string): Promise<boolean> {
  if (h.dirId !== null && h.dirId !== dirId) return false;
  const self = await identity();
  if (h.boot !== null && self.boot !== null && h.boot !== self.boot) return false;
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    // EPERM: the pid exists but belongs to another user; it still counts as alive.
    if (errnoOf(err) === 'ESRCH') return false;
  }
  const stat = await procStat(h.pid);
  if (stat !== null) {
    // A zombie has exited and only waits for its parent to reap it.
    if (stat.state === 'Z' || stat.state === 'X') return false;
    if (h.start !== null && stat.start !== h.start) return false;
  }
  return true;
}

/** The file's bytes (one past the bound at most), or null when it does not exist. */
async function readBounded(path: string): Promise<Buffer | null> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    const buf = Buffer.alloc(DIR_LOCK_FILE_BYTES_MAX + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function decodeBytes(bytes: Buffer): Holder | null {
  return bytes.length > DIR_LOCK_FILE_BYTES_MAX ? null : decode(bytes.toString('utf8'));
}

/** What identifies one lock (or claim) instance: its nonce, else a hash of its bytes. */
function instanceId(bytes: Buffer): string {
  return decodeBytes(bytes)?.nonce ?? `x${fnv1a64(bytes).toString(16)}`;
}

async function judge(path: string, dirId: string): Promise<Seen> {
  const bytes = await readBounded(path);
  if (bytes === null) return { kind: 'missing' };
  const holder = decodeBytes(bytes);
  if (holder !== null && (await isAlive(holder, dirId))) return { kind: 'live', holder };
  return { kind: 'stale', id: instanceId(bytes) };
}

/** Creates `path` holding `content`, atomically; false when the name already exists. */
async function createExclusive(dir: string, path: string, content: string): Promise<boolean> {
  const temp = join(dir, `${TEMP_PREFIX}${process.pid}.${newNonce()}`);
  try {
    const handle = await open(temp, 'wx');
    try {
      await handle.writeFile(content);
    } finally {
      await handle.close();
    }
    await link(temp, path);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

async function holderRecord(dirId: string): Promise<Holder> {
  const me = await identity();
  return { pid: process.pid, start: me.start, boot: me.boot, dirId, nonce: newNonce() };
}

function refused(dir: string, pid: number): DataDirLockedError {
  return new DataDirLockedError(dir, { pid, self: pid === process.pid });
}

/**
 * Removes the stale instance `id` at `target` under the claim `felix.lock.claim.<id>`.
 * Returns having removed it, or having found someone else did; throws when a live process
 * holds the claim (it is taking the lock over) or when the claims nest past the bound.
 */
async function removeStale(
  dir: string,
  dirId: string,
  target: string,
  id: string,
  depth: number,
): Promise<void> {
  if (depth >= DIR_LOCK_ATTEMPTS_MAX) throw new DataDirLockBusyError(dir, depth);
  const claim = join(dir, `${CLAIM_PREFIX}${id}`);
  if (!(await createExclusive(dir, claim, encode(await holderRecord(dirId))))) {
    const seen = await judge(claim, dirId);
    if (seen.kind === 'live') throw refused(dir, seen.holder.pid);
    if (seen.kind === 'stale') await removeStale(dir, dirId, claim, seen.id, depth + 1);
    return;
  }
  try {
    const now = await readBounded(target);
    // Only this claim's creator may remove instance `id`, so it cannot change under us here.
    if (now !== null && instanceId(now) === id) await ignoreMissing(unlink(target));
  } finally {
    await unlink(claim).catch(() => undefined);
  }
}

/**
 * While the lock is held every claim is moot (it names an instance that is gone for good),
 * and temp files of dead processes are leftovers of a crash mid-creation: remove both.
 */
async function sweep(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(CLAIM_PREFIX)) {
      await unlink(join(dir, name)).catch(() => undefined);
    } else if (name.startsWith(TEMP_PREFIX)) {
      const pid = Number(name.slice(TEMP_PREFIX.length).split('.')[0]);
      if (!Number.isSafeInteger(pid) || pid <= 0) continue;
      try {
        process.kill(pid, 0);
      } catch (err) {
        if (errnoOf(err) === 'ESRCH') await unlink(join(dir, name)).catch(() => undefined);
      }
    }
  }
}

class HeldLock implements DirLock {
  private released = false;
  constructor(
    readonly dir: string,
    private readonly path: string,
    private readonly nonce: string,
  ) {}

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const now = await readBounded(this.path);
    // Never remove a lock that is not ours (someone deleted ours by hand and another took it).
    if (now !== null && instanceId(now) === this.nonce) await ignoreMissing(unlink(this.path));
  }
}

export interface LockDirOptions {
  /**
   * Test hook: awaited after the lock was judged stale and before the take-over starts, so a
   * test can let another process take it over first.
   */
  onStale?: () => Promise<void>;
}

/**
 * Takes the lock of `dir` (which must exist) for this process. Refuses a live holder, this
 * process included, with DataDirLockedError; takes over a dead holder's lock.
 */
export async function lockDir(dir: string, opts: LockDirOptions = {}): Promise<DirLock> {
  const path = join(dir, DIR_LOCK_FILE);
  const dirId = await dirIdOf(dir);
  const me = await holderRecord(dirId);
  const content = encode(me);
  for (let attempt = 0; attempt < DIR_LOCK_ATTEMPTS_MAX; attempt++) {
    if (await createExclusive(dir, path, content)) {
      await sweep(dir);
      return new HeldLock(dir, path, me.nonce);
    }
    const seen = await judge(path, dirId);
    if (seen.kind === 'live') throw refused(dir, seen.holder.pid);
    if (seen.kind === 'stale') {
      await opts.onStale?.();
      await removeStale(dir, dirId, path, seen.id, 0);
    }
  }
  throw new DataDirLockBusyError(dir, DIR_LOCK_ATTEMPTS_MAX);
}
