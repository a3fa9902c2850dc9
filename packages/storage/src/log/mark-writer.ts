/**
 * Writes `durable.mark`, the advisory record of how far the active segment is synced
 * (recovery checks what lies past it; durable-mark.ts has the format). A mark only ever names
 * an extent synced before it was made; marks land in the order they were made; after a flush
 * the write waits for the next turn so that it never delays the woken appenders' answers.
 */
import { join } from 'node:path';
import { type Io, type IoFile, writeFully, writeFullyNow } from '../io/io.js';
import { DURABLE_MARK_BYTES, encodeDurableMark } from './durable-mark.js';
import { DURABLE_MARK_FILE } from './layout.js';
import { closingOnFailure } from './segment-files.js';

export class MarkWriter {
  private chain: Promise<void> = Promise.resolve();
  /** Mark writes queued on the thread pool and not yet done (an inline one waits for none). */
  private queued = 0;
  /** The newest synced extent whose mark write is scheduled (`soon`) and not yet started. */
  private due: { segmentId: number; syncedBytes: number } | undefined;
  private closed = false;

  private constructor(private readonly file: IoFile) {}

  /**
   * Opens (or creates) the mark of `dir` and records the active segment's extent, synced: the
   * caller has synced that extent first. A new mark file is synced into the directory.
   */
  static async open(
    io: Io,
    dir: string,
    active: { id: number; bytes: number },
  ): Promise<MarkWriter> {
    const markPath = join(dir, DURABLE_MARK_FILE);
    const markExisted = await io.exists(markPath);
    const file = await io.open(markPath, markExisted ? 'write' : 'create');
    const mark = encodeDurableMark({ segmentId: active.id, syncedBytes: active.bytes });
    await closingOnFailure([file], async () => {
      await writeFully(file, mark, 0, DURABLE_MARK_BYTES, 0);
      await file.datasync();
      if (!markExisted) await io.syncDir(dir);
    });
    return new MarkWriter(file);
  }

  /**
   * Records a synced extent in the durable mark once this turn is over: the mark is advisory
   * (recovery checks what lies past it), and starting its write before the woken appenders'
   * answers go out would put a thread-pool submission ahead of them.
   */
  soon(segmentId: number, syncedBytes: number): void {
    const scheduled = this.due !== undefined;
    this.due = { segmentId, syncedBytes };
    if (!scheduled) setImmediate(this.writeDue);
  }

  private readonly writeDue = (): void => {
    const due = this.due;
    if (due === undefined || this.closed) return;
    // Advisory: a mark that failed to land leaves recovery checking a longer tail, no more.
    void this.write(due.segmentId, due.syncedBytes).catch(() => undefined);
  };

  /** Writes a mark now (into the page cache; `sync` makes it durable). */
  write(segmentId: number, syncedBytes: number): Promise<void> {
    // Every mark written now is at least as new as one still due, which must not follow it.
    this.due = undefined;
    const bytes = encodeDurableMark({ segmentId, syncedBytes });
    const file = this.file;
    if (file.writeNow !== undefined && this.queued === 0) {
      // A few bytes into the page cache (the mark is not synced here): on the calling thread,
      // not a thread-pool round trip whose two wakeups cost more than the write. Only with no
      // queued write ahead of it, so marks land in the order they were made.
      try {
        writeFullyNow(file, bytes, 0, DURABLE_MARK_BYTES, 0);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    this.queued++;
    const next = this.chain
      .then(() => writeFully(file, bytes, 0, DURABLE_MARK_BYTES, 0))
      .finally(() => {
        this.queued--;
      });
    // The chain only orders writes; each caller sees its own write's failure through `next`.
    this.chain = next.catch(() => undefined);
    return next;
  }

  sync(): Promise<void> {
    return this.file.datasync();
  }

  /** Stops scheduled marks, waits for queued ones, closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    // Closing: the final mark was written and synced before, or the close is failing anyway.
    await this.file.close().catch(() => undefined);
  }
}
