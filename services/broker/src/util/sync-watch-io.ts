/**
 * The Io every log of the broker opens through: it passes every call on, and says when an
 * fdatasync (of a file or a directory) fails. A failed sync poisons the log it belongs to
 * (@felix/storage: the log refuses writes until it is reopened, and records acknowledged but
 * not yet synced may be lost), which the log itself cannot tell anyone: without this the first
 * sign was the next append's refusal, and a quiet `periodic` stream or a cache never showed one.
 */
import { dirname } from 'node:path';
import { DelegatingFile, DelegatingIo, type Io, type IoFile, type OpenMode } from '@felix/storage';
import type { Logger } from 'pino';
import { SYNC_FAILURE_DIRS_MAX, SYNC_FAILURE_LOG_EVERY_MS } from '../limits.js';

export interface SyncFailureSink {
  log: Logger;
  /** Counts every failed sync (felix_broker_storage_sync_failures_total). */
  counted: () => void;
  now?: () => number;
}

export class SyncWatchIo extends DelegatingIo {
  /** Per directory: when its last line was logged and the failures since. */
  private readonly logged = new Map<string, { atMs: number; since: number }>();

  constructor(
    inner: Io,
    private readonly sink: SyncFailureSink,
  ) {
    super(inner);
  }

  override async open(path: string, mode: OpenMode): Promise<IoFile> {
    return new SyncWatchFile(await this.inner.open(path, mode), this);
  }

  override async syncDir(path: string): Promise<void> {
    try {
      await this.inner.syncDir(path);
    } catch (err) {
      this.failed(path, path, err);
      throw err;
    }
  }

  /** A sync of `path` (in `dir`) failed: counted always, logged once per directory a while. */
  failed(dir: string, path: string, err: unknown): void {
    this.sink.counted();
    const now = (this.sink.now ?? Date.now)();
    const last = this.logged.get(dir);
    if (last !== undefined && now - last.atMs < SYNC_FAILURE_LOG_EVERY_MS) {
      last.since++;
      return;
    }
    if (last === undefined && this.logged.size >= SYNC_FAILURE_DIRS_MAX) {
      // The oldest entry goes: at worst that directory is logged again sooner.
      const oldest = this.logged.keys().next().value;
      if (oldest !== undefined) this.logged.delete(oldest);
    }
    this.logged.delete(dir);
    this.logged.set(dir, { atMs: now, since: 0 });
    this.sink.log.error(
      { err, path, ...(last !== undefined ? { failures_since_last_line: last.since } : {}) },
      'fsync failed: the log in this directory refuses writes until it is reopened (a broker restart), and records acknowledged but not yet synced may be lost; check the disk',
    );
  }
}

class SyncWatchFile extends DelegatingFile {
  constructor(
    inner: IoFile,
    private readonly watch: SyncWatchIo,
  ) {
    super(inner);
  }

  override async datasync(): Promise<void> {
    try {
      await this.inner.datasync();
    } catch (err) {
      this.watch.failed(dirname(this.inner.path), this.inner.path, err);
      throw err;
    }
  }
}
