/**
 * An Io driven by a fault file (test only): wraps another Io and, before each fdatasync of a
 * segment file (`*.log`), applies what the file says (fault-file.ts): a delay, a failure with
 * EIO on every call, or one failure after each change of `generation` (the generation of the
 * first reading is the baseline, so a process restarted on an unchanged file does not fail
 * again; `start()` takes that reading at once). The file is read through the
 * wrapped Io on demand, at most once per FAULT_FILE_POLL_MS (no timer: an idle log reads
 * nothing), so a harness can change faults while the process runs. Everything else passes
 * through untouched. A preallocation step's sync is one of those fdatasyncs (the log issues
 * it after the step's zeros): a delay or failure may meet it rather than a flush, and a flush
 * ending beside it waits for it, so a delayed step delays that flush as well.
 */
import { FAULT_FILE_BYTES_MAX, FAULT_FILE_POLL_MS } from '../limits.js';
import { NO_STORAGE_FAULTS, type StorageFaults, parseStorageFaults } from './fault-file.js';
import { systemError } from './faulty-io.js';
import { DelegatingFile, DelegatingIo } from './delegating-io.js';
import type { Io, IoFile, OpenMode } from './io.js';

export interface FaultFileIoOptions {
  /** Milliseconds clock for the read cache (tests inject one). */
  now?: () => number;
  /** Called after each read of the file that had lines it did not understand. */
  onIgnored?: (lines: number) => void;
}

const decoder = new TextDecoder();
const isSegment = (path: string) => path.endsWith('.log');

export class FaultFileIo extends DelegatingIo {
  private cached: StorageFaults = NO_STORAGE_FAULTS;
  private readAtMs = Number.NEGATIVE_INFINITY;
  private reading: Promise<StorageFaults> | null = null;
  /** The generation whose one `fail_once` failure was handed out (or the baseline's). */
  private failedGeneration: number | null = null;
  private readonly now: () => number;
  /** fdatasyncs failed on purpose (tests and logs read it). */
  injectedFailures = 0;

  constructor(
    inner: Io,
    readonly faultFile: string,
    private readonly opts: FaultFileIoOptions = {},
  ) {
    super(inner);
    this.now = opts.now ?? Date.now;
  }

  /** The faults in force: the cached reading, or a fresh one once it is FAULT_FILE_POLL_MS old. */
  faults(): Promise<StorageFaults> {
    if (this.now() - this.readAtMs < FAULT_FILE_POLL_MS) return Promise.resolve(this.cached);
    this.reading ??= this.readFile().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async readFile(): Promise<StorageFaults> {
    let text = '';
    try {
      const file = await this.inner.open(this.faultFile, 'read');
      try {
        const buf = new Uint8Array(FAULT_FILE_BYTES_MAX);
        const n = await file.read(buf, 0, buf.length, 0);
        text = decoder.decode(buf.subarray(0, n));
      } finally {
        await file.close();
      }
    } catch {
      // A missing or unreadable file means no fault (the documented contract).
      text = '';
    }
    const parsed = parseStorageFaults(text);
    if (parsed.ignored > 0) this.opts.onIgnored?.(parsed.ignored);
    // The first reading is the baseline: only a later change of generation arms `fail_once`.
    this.failedGeneration ??= parsed.faults.generation;
    this.cached = parsed.faults;
    this.readAtMs = this.now();
    return parsed.faults;
  }

  /** Takes the baseline reading now (the owner awaits it at start, before any log opens). */
  async start(): Promise<void> {
    await this.faults();
  }

  /** @internal Waits and fails as the file says, before the real fdatasync of `path`. */
  async beforeDatasync(path: string): Promise<void> {
    let f = await this.faults();
    if (f.fsyncDelayMs > 0) {
      // Waited in slices, the file read again between them: a delay the file drops (a test
      // healing a slow disk) releases the fsyncs already waiting on it, not only later ones.
      const until = this.now() + f.fsyncDelayMs;
      for (let left = f.fsyncDelayMs; left > 0; left = until - this.now()) {
        await new Promise<void>((resolve) =>
          setTimeout(resolve, Math.min(left, FAULT_FILE_POLL_MS)),
        );
        f = await this.faults();
        if (f.fsyncDelayMs === 0) break;
      }
    }
    const failOnce = f.fsync === 'fail_once' && this.failedGeneration !== f.generation;
    if (failOnce) this.failedGeneration = f.generation;
    if (f.fsync === 'fail' || failOnce) {
      this.injectedFailures++;
      throw systemError('EIO', 'fdatasync', path);
    }
  }

  override async open(path: string, mode: OpenMode): Promise<IoFile> {
    const file = await this.inner.open(path, mode);
    return isSegment(path) ? new FaultFileFile(this, file) : file;
  }
}

/** A segment file whose fdatasync goes through the fault file first. */
class FaultFileFile extends DelegatingFile {
  constructor(
    private readonly io: FaultFileIo,
    inner: IoFile,
  ) {
    super(inner);
  }
  override async datasync(): Promise<void> {
    await this.io.beforeDatasync(this.inner.path);
    return this.inner.datasync();
  }
}
