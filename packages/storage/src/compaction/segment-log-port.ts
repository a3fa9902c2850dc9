/**
 * Adapts SegmentLog to the projections' ProjectionLog. Claims map onto `stage` (offsets and a
 * CommitSequencer turn, enqueued at the call) plus `waitDurable` (the shared flush). SegmentLog
 * exposes no "roll now" nor "delete segments below an offset", so the two compaction steps that
 * need them run while the projection is quiesced: the log is closed cleanly, the segment files
 * are changed (a new empty segment appended; whole old segments unlinked oldest-first with a
 * directory sync after each), and the log is reopened through its normal recovery. Each step is
 * crash-safe on its own: a new header-only segment is a log right after a roll, and unlinking a
 * prefix oldest-first leaves a shorter contiguous log, never a gap.
 */
import type { Claim, PortReadResult, ProjectionLog } from '../cache/log-port.js';
import { nodeIo } from '../io/node-io.js';
import { type Io, readFully, writeFully } from '../io/io.js';
import { indexPath, listSegmentIds, segmentPath } from '../log/layout.js';
import { type LogOptions, SegmentLog } from '../log/segment-log.js';
import {
  SEGMENT_HEADER_BYTES,
  decodeSegmentHeader,
  encodeSegmentHeader,
  isHeaderVerdict,
} from '../segment/format.js';
import { SparseIndex } from '../segment/sparse-index.js';
import { CorruptionError } from '../errors.js';
import { INDEX_SPACING_BYTES_DEFAULT } from '../limits.js';

export class SegmentLogPort implements ProjectionLog {
  private constructor(
    private log: SegmentLog,
    private readonly opts: LogOptions,
    private readonly io: Io,
  ) {}

  static async open(opts: LogOptions): Promise<SegmentLogPort> {
    return new SegmentLogPort(await SegmentLog.open(opts), opts, opts.io ?? nodeIo);
  }

  /** The log underneath (replication appends to it directly; the projection catches up). */
  get segmentLog(): SegmentLog {
    return this.log;
  }
  readonly quiesceForSegmentChanges = true;

  get dir(): string {
    return this.log.dir;
  }
  get baseOffset(): number {
    return this.log.baseOffset;
  }
  get tailOffset(): number {
    return this.log.tailOffset;
  }
  get sizeBytes(): number {
    return this.log.sizeBytes;
  }

  claim(payloads: Uint8Array[]): Promise<Claim> {
    const log = this.log;
    return log.stage(payloads).then((s) => ({
      first: s.first,
      next: s.next,
      turn: s.turn,
      durable: log.waitDurable(s.next),
    }));
  }

  read(from: number, budget?: { maxBytes?: number; maxRecords?: number }): Promise<PortReadResult> {
    return this.log.read(from, budget);
  }

  flush(): Promise<void> {
    return this.log.flush();
  }

  /** Rolls to a new empty segment at the tail (unless the newest is already empty): the cut. */
  async seal(): Promise<number> {
    const segments = await this.segmentBases();
    const newest = segments[segments.length - 1];
    const tail = this.log.tailOffset;
    if (newest === undefined || newest.base === tail) return tail;
    await this.reopenAround(async () => {
      const id = newest.id + 1;
      const header = encodeSegmentHeader({ baseOffset: tail, createdAtMicros: Date.now() * 1000 });
      const file = await this.io.open(segmentPath(this.dir, id), 'create');
      try {
        await writeFully(file, header, 0, header.length, 0);
        await file.datasync();
      } finally {
        await file.close();
      }
      const spacing = this.opts.indexSpacingBytes ?? INDEX_SPACING_BYTES_DEFAULT;
      const index = new SparseIndex(tail, spacing).encode();
      const indexFile = await this.io.open(indexPath(this.dir, id), 'replace');
      try {
        await writeFully(indexFile, index, 0, index.length, 0);
      } finally {
        await indexFile.close();
      }
      await this.io.syncDir(this.dir);
    });
    return tail;
  }

  /** Unlinks every segment whose successor begins at or below `cut`, oldest first. */
  async trimBelow(cut: number): Promise<void> {
    const segments = await this.segmentBases();
    let doomed = 0;
    while (doomed + 1 < segments.length && segments[doomed + 1]!.base <= cut) doomed++;
    if (doomed === 0) return;
    await this.reopenAround(async () => {
      for (const seg of segments.slice(0, doomed)) {
        await this.io.unlink(segmentPath(this.dir, seg.id));
        await this.io.unlink(indexPath(this.dir, seg.id)).catch(() => undefined);
        await this.io.syncDir(this.dir);
      }
    });
  }

  close(): Promise<void> {
    return this.log.close();
  }

  private async reopenAround(change: () => Promise<void>): Promise<void> {
    await this.log.close();
    try {
      await change();
    } finally {
      this.log = await SegmentLog.open(this.opts);
    }
  }

  /** Segment ids and base offsets on disk, oldest first. */
  private async segmentBases(): Promise<{ id: number; base: number }[]> {
    const { ids } = listSegmentIds(await this.io.readdir(this.dir));
    const out: { id: number; base: number }[] = [];
    const buf = new Uint8Array(SEGMENT_HEADER_BYTES);
    for (const id of ids) {
      const file = await this.io.open(segmentPath(this.dir, id), 'read');
      try {
        const n = await readFully(file, buf, 0, SEGMENT_HEADER_BYTES, 0);
        const h = decodeSegmentHeader(buf.subarray(0, n));
        if (isHeaderVerdict(h)) {
          throw new CorruptionError(
            h.kind,
            { shardDir: this.dir, segmentId: id, position: h.position },
            h.detail,
          );
        }
        out.push({ id, base: h.baseOffset });
      } finally {
        await file.close();
      }
    }
    return out;
  }
}
