/**
 * The exclusive-writer lock of a directory. Two processes appending to one shard directory
 * would interleave their writes and corrupt the log silently, and Node has no flock, so the
 * lock is a file, `felix.lock`, naming its holder: pid, process start time (field 22 of
 * /proc/<pid>/stat, where there is one), boot id, the directory's identity (device and inode)
 * and a random nonce (holder.ts).
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
 * Every file operation goes through the `Io` seam (holder.ts reads /proc through it too), so
 * a fault injected there reaches the lock as it reaches the log.
 */
import { basename, join } from 'node:path';
import { DataDirLockBusyError, DataDirLockedError } from '../errors.js';
import { type Io, writeFully } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import { DIR_LOCK_ATTEMPTS_MAX, DIR_LOCK_FILE_BYTES_MAX } from '../limits.js';
import { DIR_LOCK_FILE } from '../log/layout.js';
import {
  type Holder,
  decodeHolder,
  encodeHolder,
  errnoOf,
  holderRecord,
  instanceId,
  isAlive,
  newNonce,
  readBounded,
} from './holder.js';

/** A held directory lock. */
export interface DirLock {
  readonly dir: string;
  /** Removes the lock file if it is still this holder's; later calls do nothing. */
  release(): Promise<void>;
}

type Seen =
  | { kind: 'missing' }
  | { kind: 'live'; holder: Holder }
  /** `id` is the nonce, or a hash of the bytes when they do not parse. */
  | { kind: 'stale'; id: string };

const CLAIM_PREFIX = `${DIR_LOCK_FILE}.claim.`;
const TEMP_PREFIX = `${DIR_LOCK_FILE}.tmp.`;

async function ignoreMissing(p: Promise<void>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}

function readLockFile(io: Io, path: string): Promise<Uint8Array | null> {
  return readBounded(io, path, DIR_LOCK_FILE_BYTES_MAX);
}

async function judge(io: Io, path: string, dirId: string): Promise<Seen> {
  const bytes = await readLockFile(io, path);
  if (bytes === null) return { kind: 'missing' };
  const holder = decodeHolder(bytes);
  if (holder !== null && (await isAlive(io, holder, dirId))) return { kind: 'live', holder };
  return { kind: 'stale', id: instanceId(bytes, basename(path)) };
}

/** Creates `path` holding `content`, atomically; false when the name already exists. */
async function createExclusive(
  io: Io,
  dir: string,
  path: string,
  content: string,
): Promise<boolean> {
  const temp = join(dir, `${TEMP_PREFIX}${process.pid}.${newNonce()}`);
  try {
    const file = await io.open(temp, 'create');
    try {
      const bytes = new TextEncoder().encode(content);
      await writeFully(file, bytes, 0, bytes.length, 0);
    } finally {
      await file.close();
    }
    await io.link(temp, path);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return false;
    throw err;
  } finally {
    // The temp name is never read: one left behind is swept by the next holder.
    await io.unlink(temp).catch(() => undefined);
  }
}

function refused(dir: string, pid: number): DataDirLockedError {
  return new DataDirLockedError(dir, { pid, self: pid === process.pid });
}

/** Where one acquisition works: the Io, the directory and its identity. */
interface Site {
  io: Io;
  dir: string;
  dirId: string;
}

/**
 * Removes the stale instance `id` at `target` under the claim `felix.lock.claim.<id>`.
 * Returns having removed it, or having found someone else did; throws when a live process
 * holds the claim (it is taking the lock over) or when the claims nest past the bound.
 */
async function removeStale(site: Site, target: string, id: string, depth: number): Promise<void> {
  const { io, dir, dirId } = site;
  if (depth >= DIR_LOCK_ATTEMPTS_MAX) throw new DataDirLockBusyError(dir, depth);
  const claim = join(dir, `${CLAIM_PREFIX}${id}`);
  if (!(await createExclusive(io, dir, claim, encodeHolder(await holderRecord(io, dirId))))) {
    const seen = await judge(io, claim, dirId);
    if (seen.kind === 'live') throw refused(dir, seen.holder.pid);
    if (seen.kind === 'stale') await removeStale(site, claim, seen.id, depth + 1);
    return;
  }
  try {
    const now = await readLockFile(io, target);
    // Only this claim's creator may remove instance `id`, so it cannot change under us here.
    if (now !== null && instanceId(now, basename(target)) === id) {
      await ignoreMissing(io.unlink(target));
    }
  } finally {
    // Our own claim: one left behind names a gone instance, and the next holder sweeps it.
    await io.unlink(claim).catch(() => undefined);
  }
}

/**
 * While the lock is held every claim is moot (it names an instance that is gone for good),
 * and temp files of dead processes are leftovers of a crash mid-creation: remove both.
 */
async function sweep(io: Io, dir: string): Promise<void> {
  let names: string[];
  try {
    names = await io.readdir(dir);
  } catch {
    // Sweeping is tidying only: the lock is held whether or not it can list the directory.
    return;
  }
  for (const name of names) {
    if (name.startsWith(CLAIM_PREFIX)) {
      // A leftover claim: one that cannot be removed now is tried again by the next holder.
      await io.unlink(join(dir, name)).catch(() => undefined);
    } else if (name.startsWith(TEMP_PREFIX)) {
      const pid = Number(name.slice(TEMP_PREFIX.length).split('.')[0]);
      if (!Number.isSafeInteger(pid) || pid <= 0) continue;
      try {
        process.kill(pid, 0);
      } catch (err) {
        // A dead process's temp file: one that cannot be removed now is tried again later.
        if (errnoOf(err) === 'ESRCH') await io.unlink(join(dir, name)).catch(() => undefined);
      }
    }
  }
}

class HeldLock implements DirLock {
  private released = false;
  constructor(
    private readonly io: Io,
    readonly dir: string,
    private readonly path: string,
    private readonly nonce: string,
  ) {}

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const now = await readLockFile(this.io, this.path);
    // Never remove a lock that is not ours (someone deleted ours by hand and another took it).
    if (now !== null && instanceId(now) === this.nonce)
      await ignoreMissing(this.io.unlink(this.path));
  }
}

export interface LockDirOptions {
  /** The file system the lock lives on; the real one by default. */
  io?: Io;
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
  const io = opts.io ?? nodeIo;
  const path = join(dir, DIR_LOCK_FILE);
  const site: Site = { io, dir, dirId: await io.dirId(dir) };
  const me = await holderRecord(io, site.dirId);
  const content = encodeHolder(me);
  for (let attempt = 0; attempt < DIR_LOCK_ATTEMPTS_MAX; attempt++) {
    if (await createExclusive(io, dir, path, content)) {
      await sweep(io, dir);
      return new HeldLock(io, dir, path, me.nonce);
    }
    const seen = await judge(io, path, site.dirId);
    if (seen.kind === 'live') throw refused(dir, seen.holder.pid);
    if (seen.kind === 'stale') {
      await opts.onStale?.();
      await removeStale(site, path, seen.id, 0);
    }
  }
  throw new DataDirLockBusyError(dir, DIR_LOCK_ATTEMPTS_MAX);
}
