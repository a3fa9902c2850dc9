/**
 * An in-memory Io that can lose power. Every write and truncation stays "unsynced" until its
 * file is fdatasynced; every creation or unlink stays unsynced until its directory is synced.
 * `crash(random)` returns the disk a power loss could leave: synced state, plus any subset of
 * the unsynced operations in order, each write torn at 512-byte sector boundaries (sectors
 * are atomic, as on real devices). Directories themselves are made durable at once (the log
 * syncs each new one into its parent anyway).
 */
import { dirname } from 'node:path';
import type { Io, IoFile, OpenMode } from '../../src/io/io.js';

const SECTOR = 512;
let instances = 0;

type Op =
  | { kind: 'write'; position: number; bytes: Uint8Array }
  | { kind: 'truncate'; length: number };

class Inode {
  live: Uint8Array = new Uint8Array(0);
  durable: Uint8Array = new Uint8Array(0);
  unsynced: Op[] = [];

  write(bytes: Uint8Array, position: number): void {
    this.live = applyWrite(this.live, bytes, position);
    this.unsynced.push({ kind: 'write', position, bytes: bytes.slice() });
  }
  truncate(length: number): void {
    this.live = applyTruncate(this.live, length);
    this.unsynced.push({ kind: 'truncate', length });
  }
  sync(): void {
    // What reaches the disk is what was written since the last sync: bytes a failed sync
    // dropped (clean in the page cache) are not written again.
    for (const op of this.unsynced) {
      this.durable =
        op.kind === 'write'
          ? applyWrite(this.durable, op.bytes, op.position)
          : applyTruncate(this.durable, op.length);
    }
    this.unsynced = [];
  }
  /**
   * A write-back that failed (Linux after EIO on fdatasync): the page cache keeps the new
   * bytes, marked clean, so reads still see them, but they never reach the disk.
   */
  dropUnsynced(): void {
    this.unsynced = [];
  }
  /** What a power loss leaves of this file. */
  crash(random: () => number): Uint8Array {
    let data: Uint8Array = this.durable.slice();
    for (const op of this.unsynced) {
      if (random() < 0.5) continue;
      if (op.kind === 'truncate') {
        data = applyTruncate(data, op.length);
        continue;
      }
      // Keep any subset of the write's sectors; a lost sector past the old end reads as zeros.
      const end = op.position + op.bytes.length;
      const kept = new Uint8Array(Math.max(data.length, end));
      kept.set(data);
      for (let s = Math.floor(op.position / SECTOR) * SECTOR; s < end; s += SECTOR) {
        if (random() < 0.3) continue;
        const from = Math.max(s, op.position);
        const to = Math.min(s + SECTOR, end);
        kept.set(op.bytes.subarray(from - op.position, to - op.position), from);
      }
      data = kept;
    }
    return data;
  }
}

function applyWrite(data: Uint8Array, bytes: Uint8Array, position: number): Uint8Array {
  const end = position + bytes.length;
  const out = end > data.length ? new Uint8Array(end) : data;
  if (out !== data) out.set(data);
  out.set(bytes, position);
  return out;
}

function applyTruncate(data: Uint8Array, length: number): Uint8Array {
  if (length <= data.length) return data.slice(0, length);
  const out = new Uint8Array(length);
  out.set(data);
  return out;
}

function enoent(path: string): Error {
  return Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
}

export class PowerLossIo implements Io {
  /** Set by `failAfter`: the disk as the power loss left it. */
  lost: PowerLossIo | undefined;
  private opsLeft = Number.POSITIVE_INFINITY;
  private lossRandom: () => number = Math.random;
  private dirs = new Set<string>(['/']);
  /** Tells this disk's directories from a crash copy's: a lock copied along is stale there. */
  private readonly instance = ++instances;
  /** Live and durable directory entries: file path -> inode. */
  private live = new Map<string, Inode>();
  private durable = new Map<string, Inode>();

  /** A disk holding exactly the given files, all durable. */
  static fromFiles(dirs: Iterable<string>, files: Map<string, Uint8Array>): PowerLossIo {
    const io = new PowerLossIo();
    for (const d of dirs) io.dirs.add(d);
    for (const [path, bytes] of files) {
      const inode = new Inode();
      inode.live = bytes.slice();
      inode.durable = bytes.slice();
      io.live.set(path, inode);
      io.durable.set(path, inode);
    }
    return io;
  }

  /**
   * Loses power after `ops` more operations: the disk at that moment is kept in `lost`, and
   * every later operation fails as if the machine had stopped.
   */
  failAfter(ops: number, random: () => number): void {
    this.opsLeft = ops;
    this.lossRandom = random;
  }

  /** fdatasyncs still to fail (see `failDatasyncs`). */
  datasyncFaults = 0;

  /**
   * The next `times` fdatasyncs fail with EIO as a failed write-back does on Linux: the unsynced
   * writes stay readable through the page cache but are dropped from what the disk will hold.
   */
  failDatasyncs(times = 1): void {
    this.datasyncFaults += times;
  }

  /** Operations made so far (a test sizes its cut points by a dry run's count). */
  operations = 0;

  /** @internal Counts one operation; throws once the power is gone. */
  tick(): void {
    if (this.lost !== undefined) throw new Error('power lost');
    this.operations++;
    if (this.opsLeft-- > 0) return;
    this.lost = this.crash(this.lossRandom);
    throw new Error('power lost');
  }

  /**
   * The process dies but the machine keeps running: a new Io sees every write (synced or
   * not, the page cache survives), and this one fails every later operation.
   */
  afterProcessCrash(): PowerLossIo {
    const next = new PowerLossIo();
    next.dirs = new Set(this.dirs);
    const copies = new Map<Inode, Inode>();
    const copy = (inode: Inode) => {
      let c = copies.get(inode);
      if (c === undefined) {
        c = new Inode();
        c.live = inode.live.slice();
        c.durable = inode.durable.slice();
        c.unsynced = [...inode.unsynced];
        copies.set(inode, c);
      }
      return c;
    };
    for (const [p, inode] of this.live) next.live.set(p, copy(inode));
    for (const [p, inode] of this.durable) next.durable.set(p, copy(inode));
    this.lost = next;
    return next;
  }

  /** The files a power loss right now could leave behind. */
  crash(random: () => number): PowerLossIo {
    const files = new Map<string, Uint8Array>();
    const names = new Set([...this.live.keys(), ...this.durable.keys()]);
    for (const path of names) {
      const liveInode = this.live.get(path);
      const durableInode = this.durable.get(path);
      // An entry change not yet synced into its directory may or may not have reached disk.
      const inode = liveInode === durableInode || random() < 0.5 ? durableInode : liveInode;
      if (inode !== undefined) files.set(path, inode.crash(random));
    }
    return PowerLossIo.fromFiles(this.dirs, files);
  }

  async open(path: string, mode: OpenMode): Promise<IoFile> {
    this.tick();
    let inode = this.live.get(path);
    if (mode === 'create' && inode !== undefined) {
      throw Object.assign(new Error(`EEXIST: ${path}`), { code: 'EEXIST' });
    }
    if ((mode === 'read' || mode === 'write') && inode === undefined) throw enoent(path);
    if (!this.dirs.has(dirname(path))) throw enoent(dirname(path));
    if (inode === undefined) {
      inode = new Inode();
      this.live.set(path, inode);
    } else if (mode === 'replace') {
      inode.truncate(0);
    }
    return new PowerLossFile(this, path, inode);
  }
  async readdir(path: string): Promise<string[]> {
    this.tick();
    if (!this.dirs.has(path)) throw enoent(path);
    const names: string[] = [];
    for (const p of this.live.keys()) if (dirname(p) === path) names.push(p.slice(path.length + 1));
    for (const d of this.dirs)
      if (d !== path && dirname(d) === path) names.push(d.slice(path.length + 1));
    return names;
  }
  async mkdir(path: string): Promise<boolean> {
    this.tick();
    if (this.dirs.has(path)) return false;
    if (!this.dirs.has(dirname(path))) throw enoent(dirname(path));
    this.dirs.add(path);
    return true;
  }
  async unlink(path: string): Promise<void> {
    this.tick();
    if (!this.live.delete(path)) throw enoent(path);
  }
  async rename(from: string, to: string): Promise<void> {
    this.tick();
    const inode = this.live.get(from);
    if (inode === undefined) throw enoent(from);
    if (!this.dirs.has(dirname(to))) throw enoent(dirname(to));
    // Both entry changes stay unsynced until the directory is: a crash keeps either name's
    // old or new entry (crash() picks per path), as a real rename before its dir sync may.
    this.live.set(to, inode);
    this.live.delete(from);
  }
  async exists(path: string): Promise<boolean> {
    this.tick();
    return this.dirs.has(path) || this.live.has(path);
  }
  async syncDir(path: string): Promise<void> {
    this.tick();
    for (const p of [...this.durable.keys()]) {
      if (dirname(p) === path && !this.live.has(p)) this.durable.delete(p);
    }
    for (const [p, inode] of this.live) if (dirname(p) === path) this.durable.set(p, inode);
  }
  async makeTempDir(): Promise<string> {
    throw new Error('not supported');
  }
  async removeTree(): Promise<void> {
    throw new Error('not supported');
  }
  async link(existing: string, path: string): Promise<void> {
    this.tick();
    const inode = this.live.get(existing);
    if (inode === undefined) throw enoent(existing);
    if (this.live.has(path) || this.dirs.has(path)) {
      throw Object.assign(new Error(`EEXIST: ${path}`), { code: 'EEXIST' });
    }
    if (!this.dirs.has(dirname(path))) throw enoent(dirname(path));
    this.live.set(path, inode);
  }
  /**
   * Each disk is its own host's view: a crash copy (and the disk after a process crash) names
   * its directories anew, so the lock a dead writer left there is stale, as it would be once
   * the writer is gone.
   */
  async dirId(path: string): Promise<string> {
    this.tick();
    if (!this.dirs.has(path)) throw enoent(path);
    return `mem${this.instance}:${path}`;
  }
}

class PowerLossFile implements IoFile {
  constructor(
    private readonly io: PowerLossIo,
    readonly path: string,
    private readonly inode: Inode,
  ) {}
  async read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<number> {
    this.io.tick();
    const data = this.inode.live;
    const n = Math.max(0, Math.min(length, data.length - position));
    buffer.set(data.subarray(position, position + n), offset);
    return n;
  }
  async write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<number> {
    this.io.tick();
    this.inode.write(buffer.subarray(offset, offset + length), position);
    return length;
  }
  async datasync(): Promise<void> {
    this.io.tick();
    if (this.io.datasyncFaults > 0) {
      this.io.datasyncFaults--;
      this.inode.dropUnsynced();
      throw Object.assign(new Error(`EIO: fdatasync ${this.path}`), { code: 'EIO' });
    }
    this.inode.sync();
  }
  async preallocate(position: number, length: number): Promise<boolean> {
    // The zeros land unsynced (the log's own datasync follows): a point the power can fail at.
    // The zeros land a turn later, as a thread-pool write would: whatever the log does in the
    // meantime interleaves with the step as it would on a real disk.
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.io.tick();
    this.inode.write(new Uint8Array(length), position);
    return true;
  }
  async truncate(length: number): Promise<void> {
    this.io.tick();
    this.inode.truncate(length);
  }
  async size(): Promise<number> {
    this.io.tick();
    return this.inode.live.length;
  }
  async close(): Promise<void> {}
}
