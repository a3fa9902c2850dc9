/**
 * The I/O seam of the segment log. Everything the log does to the disk goes through `Io`, so
 * tests can inject fsync failures and delays and write errors (ENOSPC, EIO) without root or
 * real disk faults. The directory lock (lock/dir-lock.ts) works through it too. Only
 * node-io.ts touches node:fs.
 */

/** An open file. Positions are absolute byte positions; nothing uses a file cursor. */
export interface IoFile {
  readonly path: string;
  /** Reads up to `length` bytes into `buffer[offset..]`; returns how many were read. */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /** Writes up to `length` bytes; returns how many were written (may be short). */
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /**
   * `write` on the calling thread, for small writes into the page cache that are about to be
   * synced: no thread-pool round trip before the sync. Optional; the log falls back to `write`.
   */
  writeNow?(buffer: Uint8Array, offset: number, length: number, position: number): number;
  /** fdatasync: data and the size needed to read it back, not other metadata. */
  datasync(): Promise<void>;
  /**
   * Writes zeros over `[position, position + length)`, so later writes there change no file
   * size once the caller's `datasync` has made them durable. Only ever called past the last
   * byte of data. Resolves false when the zeros could not be written (some may exist past
   * `position`). The sync is the caller's, so the log knows while it runs: of two concurrent
   * syncs of a file Linux reports a write-back error to one only.
   */
  preallocate(position: number, length: number): Promise<boolean>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  close(): Promise<void>;
}

export type OpenMode =
  /** Read only; fails when missing. */
  | 'read'
  /** Read and write an existing file. */
  | 'write'
  /** Create a new file (fails when it exists), read and write. */
  | 'create'
  /** Create or empty a file, read and write. */
  | 'replace';

export interface Io {
  open(path: string, mode: OpenMode): Promise<IoFile>;
  /** Names in a directory (not paths), in no particular order. */
  readdir(path: string): Promise<string[]>;
  /** Creates one directory level; returns false when it already existed. */
  mkdir(path: string): Promise<boolean>;
  unlink(path: string): Promise<void>;
  /** Replaces `to` with `from` in one step (a crash leaves one or the other); durable once the
   *  directory is synced. Small state files are saved this way (written aside, then renamed). */
  rename(from: string, to: string): Promise<void>;
  exists(path: string): Promise<boolean>;
  /** Makes the directory's entries (creations, unlinks) durable. */
  syncDir(path: string): Promise<void>;
  /** Creates a fresh uniquely named directory under `parent` (benchmarks, tools). */
  makeTempDir(parent: string, prefix: string): Promise<string>;
  /** Removes a directory tree (benchmark scratch space; a deleted shard's tree set aside). */
  removeTree(path: string): Promise<void>;
  /**
   * Gives the file `existing` the second name `path`; fails with EEXIST when `path` exists.
   * The directory lock creates its file atomically this way (written under a temp name, then
   * linked).
   */
  link(existing: string, path: string): Promise<void>;
  /**
   * The identity of a directory on this host (device and inode on a real disk): a copy of the
   * directory has another, so a lock copied along with it is not taken for the original's.
   */
  dirId(path: string): Promise<string>;
}

/** Writes all of `buffer[offset, offset+length)` at `position`, looping over short writes. */
export async function writeFully(
  file: IoFile,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
): Promise<void> {
  let done = 0;
  while (done < length) {
    const n = await file.write(buffer, offset + done, length - done, position + done);
    if (n <= 0) throw new Error(`write to ${file.path} made no progress`);
    done += n;
  }
}

/** `writeFully` through `writeNow` (the caller checked the file has it). */
export function writeFullyNow(
  file: IoFile,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
): void {
  let done = 0;
  while (done < length) {
    const n = file.writeNow!(buffer, offset + done, length - done, position + done);
    if (n <= 0) throw new Error(`write to ${file.path} made no progress`);
    done += n;
  }
}

/** Reads `length` bytes at `position`, looping over short reads; returns how many exist. */
export async function readFully(
  file: IoFile,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
): Promise<number> {
  let done = 0;
  while (done < length) {
    const n = await file.read(buffer, offset + done, length - done, position + done);
    if (n <= 0) break;
    done += n;
  }
  return done;
}

/**
 * Replaces the small file `path` (in directory `dir`) so a crash leaves the old contents or the
 * new ones whole, never a torn mix: written aside as `<path>.tmp`, fdatasynced, renamed over
 * `path`, and the directory synced so the rename itself is durable.
 */
export async function replaceFileDurably(
  io: Io,
  dir: string,
  path: string,
  bytes: Uint8Array,
): Promise<void> {
  const tmp = `${path}.tmp`;
  const file = await io.open(tmp, 'replace');
  try {
    await writeFully(file, bytes, 0, bytes.length, 0);
    await file.datasync();
  } finally {
    await file.close();
  }
  await io.rename(tmp, path);
  await io.syncDir(dir);
}
