/**
 * Small state files a broker keeps beside its shard directories, one per name
 * (name-markers.ts) or per shard (lineage-markers.ts), in a directory per kind. Each is written
 * aside and renamed (the directory synced), so a crash leaves the old file or the new one; all
 * are read back once, when the broker starts, bounded (the codec's `bytesMax`: a longer file is
 * refused, never cut to a valid prefix) and decoded strictly.
 */
import { closeSync, openSync, readSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Io, ensureDurableDir, replaceFileDurably } from '@felix/storage';

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A marker file's bytes as a JSON object, bounded by `bytesMax` before anything is decoded;
 * anything else throws `refuse(reason)` (the codec's typed error, and only that).
 */
export function markerObject(
  bytes: Uint8Array,
  bytesMax: number,
  refuse: (reason: string, cause?: unknown) => Error,
): Record<string, unknown> {
  if (bytes.length > bytesMax) throw refuse(`${bytes.length} bytes, at most ${bytesMax}`);
  let value: unknown;
  try {
    value = JSON.parse(STRICT_UTF8.decode(bytes));
  } catch (err) {
    throw refuse('not UTF-8 JSON', err);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw refuse('not an object');
  return value as Record<string, unknown>;
}

export interface MarkerCodec<T> {
  /** The largest file read back. */
  bytesMax: number;
  encode(value: T): Uint8Array;
  /** Throws only the codec's typed error. */
  decode(bytes: Uint8Array): T;
}

/** The marker files under some directories, by path. */
export class MarkerFiles<T> {
  private readonly files = new Map<string, T>();

  /**
   * Reads every file of `dirs` (synchronously, once, at start: one small file each).
   * `unreadable` says what a file that does not decode stands for (null: as if absent).
   */
  constructor(
    private readonly io: Io,
    private readonly codec: MarkerCodec<T>,
    dirs: readonly string[],
    unreadable: (path: string, err: unknown) => T | null,
  ) {
    for (const dir of dirs) this.load(dir, unreadable);
  }

  private load(dir: string, unreadable: (path: string, err: unknown) => T | null): void {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // nothing marked yet
      throw err;
    }
    const buf = new Uint8Array(this.codec.bytesMax + 1);
    for (const name of names) {
      if (name.endsWith('.tmp')) continue; // a write a crash cut short: the file it replaces holds
      const path = join(dir, name);
      const fd = openSync(path, 'r');
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, 0);
      } finally {
        closeSync(fd);
      }
      try {
        this.files.set(path, this.codec.decode(buf.subarray(0, n)));
      } catch (err) {
        const instead = unreadable(path, err);
        if (instead !== null) this.files.set(path, instead);
      }
    }
  }

  known(path: string): T | null {
    return this.files.get(path) ?? null;
  }

  async write(dir: string, path: string, value: T): Promise<void> {
    await ensureDurableDir(this.io, dir);
    await replaceFileDurably(this.io, dir, path, this.codec.encode(value));
    this.files.set(path, value);
  }

  /** Removes the file (none: nothing). */
  async remove(dir: string, path: string): Promise<void> {
    if (await this.io.exists(path)) {
      await this.io.unlink(path);
      await this.io.syncDir(dir);
    }
    this.files.delete(path);
  }
}
