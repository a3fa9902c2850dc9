/**
 * A fault-injecting Io for tests: wraps another Io and, on request, fails or holds fdatasync
 * calls, fails writes with ENOSPC/EIO (optionally after writing part of the buffer, as a
 * real short write before an error would) and fails unlinks. Counts syncs and writes so tests can assert on
 * group commit. Lives in src so other packages' tests can inject the same faults.
 */
import type { Io, IoFile, OpenMode } from './io.js';

export type FaultCode = 'ENOSPC' | 'EIO';

/** An error shaped like the one node:fs raises for the same errno. */
export function systemError(code: FaultCode, syscall: string, path: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: injected fault, ${syscall} '${path}'`) as NodeJS.ErrnoException;
  err.code = code;
  err.syscall = syscall;
  err.path = path;
  return err;
}

type PathMatch = (path: string) => boolean;
const anyLog: PathMatch = (p) => p.endsWith('.log');

interface WriteFault {
  code: FaultCode;
  times: number;
  /** Bytes actually written before the error is raised. */
  partialBytes: number;
  match: PathMatch;
  /** The failing write waits for this before it fails (writes off the calling thread only). */
  until?: Promise<void>;
}

interface SyncFault {
  code: FaultCode;
  times: number;
  match: PathMatch;
}

export class FaultyIo implements Io {
  /** fdatasync calls on matching files that completed or failed (not counting held ones). */
  datasyncs = 0;
  writes = 0;
  /** Of `writes`, those made on the calling thread (`writeNow`). */
  inlineWrites = 0;
  /** The file of each inline write, in order. */
  readonly inlineWritePaths: string[] = [];
  /** Every directory synced, in order. */
  readonly syncedDirs: string[] = [];
  private syncMatch: PathMatch = anyLog;
  private writeFaults: WriteFault[] = [];
  private syncFaults: SyncFault[] = [];
  private truncateFaults = 0;
  private unlinkFaults: SyncFault[] = [];
  private preallocateFaults: Array<'write' | 'sync'> = [];
  /** Preallocation steps that completed (counted apart from data writes and syncs). */
  preallocations = 0;
  private preallocateHold: Promise<void> | undefined;
  /** Preallocation steps currently blocked by `holdPreallocations`. */
  heldPreallocations = 0;
  private preallocationSyncHold: Promise<void> | undefined;
  /** Preallocation steps' fdatasyncs currently blocked by `holdPreallocationSyncs`. */
  heldPreallocationSyncs = 0;
  /** fdatasyncs outside preallocation steps that completed (not failed or running ones). */
  datasyncsDone = 0;
  /** Data writes that overlapped a preallocation step in flight on the same file (a bug). */
  writesIntoPreallocation = 0;
  private readonly preallocating = new Map<string, { from: number; to: number }>();
  private hold: { promise: Promise<void>; release: () => void } | undefined;
  private held = 0;

  /** `noInlineWrites` hides the wrapped files' `writeNow`, so every write is awaited. */
  constructor(
    private readonly inner: Io,
    private readonly opts: { noInlineWrites?: boolean } = {},
  ) {}

  /** Which files `datasyncs` counts (default: segment files). */
  countSyncsOf(match: PathMatch): void {
    this.syncMatch = match;
  }

  /** The next `times` writes to matching files fail with `code` after `partialBytes` bytes land;
   *  with `until`, each waits for it before failing (counted in `heldWrites` meanwhile), which
   *  needs writes off the calling thread (`noInlineWrites`). */
  failWrites(
    code: FaultCode,
    opts: { times?: number; partialBytes?: number; match?: PathMatch; until?: Promise<void> } = {},
  ): void {
    this.writeFaults.push({
      code,
      times: opts.times ?? 1,
      partialBytes: opts.partialBytes ?? 0,
      match: opts.match ?? anyLog,
      ...(opts.until === undefined ? {} : { until: opts.until }),
    });
  }

  /** Failing writes waiting for their `until`. */
  heldWrites = 0;

  /** The next `times` fdatasyncs of matching files fail with `code`. */
  failDatasyncs(code: FaultCode = 'EIO', opts: { times?: number; match?: PathMatch } = {}): void {
    this.syncFaults.push({ code, times: opts.times ?? 1, match: opts.match ?? anyLog });
  }

  /**
   * The next preallocation fails: `write` as if the zeros found no space (it resolves false),
   * `sync` as if the step's fdatasync, the file's next after its zeros, failed with EIO.
   */
  failPreallocation(phase: 'write' | 'sync'): void {
    this.preallocateFaults.push(phase);
  }

  /** Preallocation steps block from now until `release()` (before writing their zeros). */
  holdPreallocations(): { release: () => void } {
    let release!: () => void;
    this.preallocateHold = new Promise<void>((r) => {
      release = r;
    });
    return {
      release: () => {
        this.preallocateHold = undefined;
        release();
      },
    };
  }

  /** A preallocation step's fdatasync blocks from now until `release()` (after its zeros). */
  holdPreallocationSyncs(): { release: () => void } {
    let release!: () => void;
    this.preallocationSyncHold = new Promise<void>((r) => {
      release = r;
    });
    return {
      release: () => {
        this.preallocationSyncHold = undefined;
        release();
      },
    };
  }

  /** @internal */
  async beforePreallocationSync(): Promise<void> {
    if (this.preallocationSyncHold === undefined) return;
    this.heldPreallocationSyncs++;
    try {
      await this.preallocationSyncHold;
    } finally {
      this.heldPreallocationSyncs--;
    }
  }

  /** @internal */
  async beforePreallocate(): Promise<'write' | 'sync' | undefined> {
    if (this.preallocateHold !== undefined) {
      this.heldPreallocations++;
      try {
        await this.preallocateHold;
      } finally {
        this.heldPreallocations--;
      }
    }
    return this.preallocateFaults.shift();
  }

  /** @internal */
  trackPreallocation(path: string, range: { from: number; to: number } | undefined): void {
    if (range === undefined) this.preallocating.delete(path);
    else this.preallocating.set(path, range);
  }

  /** @internal */
  checkWrite(path: string, position: number, length: number): void {
    const r = this.preallocating.get(path);
    if (r !== undefined && position < r.to && position + length > r.from) {
      this.writesIntoPreallocation++;
    }
  }

  /** The next `times` truncations fail with EIO. */
  failTruncates(times = 1): void {
    this.truncateFaults += times;
  }

  /** The next `times` unlinks of matching files (default: segment files) fail with `code`; the
   *  file stays. */
  failUnlinks(code: FaultCode = 'EIO', opts: { times?: number; match?: PathMatch } = {}): void {
    this.unlinkFaults.push({ code, times: opts.times ?? 1, match: opts.match ?? anyLog });
  }

  /** fdatasyncs of counted files block from now until `release()`. */
  holdDatasyncs(): { release: () => void } {
    let release!: () => void;
    const promise = new Promise<void>((r) => {
      release = r;
    });
    this.hold = { promise, release };
    return {
      release: () => {
        this.hold = undefined;
        release();
      },
    };
  }

  /** fdatasyncs currently blocked by `holdDatasyncs`. */
  get heldDatasyncs(): number {
    return this.held;
  }

  /** @internal */
  takeWriteFault(path: string): WriteFault | undefined {
    const f = this.writeFaults.find((w) => w.times > 0 && w.match(path));
    if (f !== undefined) f.times--;
    return f;
  }

  /** @internal */
  async onDatasync(path: string): Promise<void> {
    if (!this.syncMatch(path)) return;
    if (this.hold !== undefined) {
      this.held++;
      try {
        await this.hold.promise;
      } finally {
        this.held--;
      }
    }
    this.datasyncs++;
    const f = this.syncFaults.find((s) => s.times > 0 && s.match(path));
    if (f !== undefined) {
      f.times--;
      throw systemError(f.code, 'fdatasync', path);
    }
  }

  /** @internal */
  takeTruncateFault(): boolean {
    if (this.truncateFaults <= 0) return false;
    this.truncateFaults--;
    return true;
  }

  async open(path: string, mode: OpenMode): Promise<IoFile> {
    return new FaultyFile(
      this,
      await this.inner.open(path, mode),
      this.opts.noInlineWrites !== true,
    );
  }
  readdir(path: string): Promise<string[]> {
    return this.inner.readdir(path);
  }
  mkdir(path: string): Promise<boolean> {
    return this.inner.mkdir(path);
  }
  unlink(path: string): Promise<void> {
    const f = this.unlinkFaults.find((u) => u.times > 0 && u.match(path));
    if (f !== undefined) {
      f.times--;
      return Promise.reject(systemError(f.code, 'unlink', path));
    }
    return this.inner.unlink(path);
  }
  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
  }
  exists(path: string): Promise<boolean> {
    return this.inner.exists(path);
  }
  syncDir(path: string): Promise<void> {
    this.syncedDirs.push(path);
    return this.inner.syncDir(path);
  }
  makeTempDir(parent: string, prefix: string): Promise<string> {
    return this.inner.makeTempDir(parent, prefix);
  }
  removeTree(path: string): Promise<void> {
    return this.inner.removeTree(path);
  }

  link(existing: string, path: string): Promise<void> {
    return this.inner.link(existing, path);
  }
  dirId(path: string): Promise<string> {
    return this.inner.dirId(path);
  }
}

class FaultyFile implements IoFile {
  /** The data write in flight, if any (the log issues one at a time per file). */
  private writing: { from: number; to: number } | undefined;
  /** The next datasync is a preallocation step's (its zeros just landed): how it ends. */
  private preallocationSync: 'ok' | 'fail' | undefined;
  constructor(
    private readonly io: FaultyIo,
    private readonly inner: IoFile,
    inline: boolean,
  ) {
    this.writeNow =
      inner.writeNow === undefined || !inline ? undefined : this.writeInline.bind(this);
  }
  get path(): string {
    return this.inner.path;
  }
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return this.inner.read(buffer, offset, length, position);
  }
  async write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<number> {
    this.io.writes++;
    this.io.checkWrite(this.inner.path, position, length);
    this.writing = { from: position, to: position + length };
    try {
      const fault = this.io.takeWriteFault(this.inner.path);
      if (fault !== undefined) {
        const partial = Math.min(fault.partialBytes, length);
        if (partial > 0) await this.inner.write(buffer, offset, partial, position);
        if (fault.until !== undefined) {
          this.io.heldWrites++;
          await fault.until;
          this.io.heldWrites--;
        }
        throw systemError(fault.code, 'write', this.inner.path);
      }
      return await this.inner.write(buffer, offset, length, position);
    } finally {
      this.writing = undefined;
    }
  }
  /** Present when the wrapped file has it, as the log sees a real file. */
  readonly writeNow:
    | ((buffer: Uint8Array, offset: number, length: number, position: number) => number)
    | undefined;
  private writeInline(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): number {
    this.io.writes++;
    this.io.inlineWrites++;
    this.io.inlineWritePaths.push(this.inner.path);
    this.io.checkWrite(this.inner.path, position, length);
    const fault = this.io.takeWriteFault(this.inner.path);
    if (fault !== undefined) {
      const partial = Math.min(fault.partialBytes, length);
      if (partial > 0) this.inner.writeNow!(buffer, offset, partial, position);
      throw systemError(fault.code, 'write', this.inner.path);
    }
    return this.inner.writeNow!(buffer, offset, length, position);
  }
  async datasync(): Promise<void> {
    const step = this.preallocationSync;
    if (step !== undefined) {
      // A preallocation step's sync: counted and faulted apart from the log's flushes.
      this.preallocationSync = undefined;
      await this.io.beforePreallocationSync();
      if (step === 'fail') throw systemError('EIO', 'fdatasync', this.inner.path);
      await this.inner.datasync();
      this.io.preallocations++;
      return;
    }
    await this.io.onDatasync(this.inner.path);
    await this.inner.datasync();
    this.io.datasyncsDone++;
  }
  async preallocate(position: number, length: number): Promise<boolean> {
    const w = this.writing;
    if (w !== undefined && position < w.to && position + length > w.from) {
      this.io.writesIntoPreallocation++;
    }
    this.io.trackPreallocation(this.inner.path, { from: position, to: position + length });
    let ok: boolean;
    let fault: 'write' | 'sync' | undefined;
    try {
      fault = await this.io.beforePreallocate();
      if (fault === 'write') return false;
      ok = await this.inner.preallocate(position, length);
    } finally {
      this.io.trackPreallocation(this.inner.path, undefined);
    }
    if (ok) this.preallocationSync = fault === 'sync' ? 'fail' : 'ok';
    return ok;
  }
  truncate(length: number): Promise<void> {
    if (this.io.takeTruncateFault()) {
      return Promise.reject(systemError('EIO', 'ftruncate', this.inner.path));
    }
    return this.inner.truncate(length);
  }
  size(): Promise<number> {
    return this.inner.size();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
