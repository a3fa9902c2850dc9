/**
 * Adapts SegmentLog to the projections' ProjectionLog. A claim is `stage` (offsets and a
 * CommitSequencer turn, enqueued at the call, so nothing else can claim in between) plus
 * `waitDurable` (the shared flush). Compaction's seal and head trim are the log's own `seal`
 * (roll once everything appended before is written) and `trimBelow` (whole sealed segments,
 * oldest first, a directory sync after each), so projections need no quiescing around them.
 */
import type { Claim, PortReadResult, ProjectionLog } from '../cache/log-port.js';
import { type LogOptions, SegmentLog } from '../log/segment-log.js';

export class SegmentLogPort implements ProjectionLog {
  private constructor(private readonly log: SegmentLog) {}

  static async open(opts: LogOptions): Promise<SegmentLogPort> {
    return new SegmentLogPort(await SegmentLog.open(opts));
  }

  /** The log underneath (replication appends to it directly; the projection catches up). */
  get segmentLog(): SegmentLog {
    return this.log;
  }
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
  get trimWaiting(): boolean {
    return this.log.trimWaiting;
  }
  get poison(): Error | undefined {
    return this.log.poisonError;
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

  seal(): Promise<number> {
    return this.log.seal();
  }

  async trimBelow(cut: number): Promise<void> {
    await this.log.trimBelow(cut);
  }

  close(): Promise<void> {
    return this.log.close();
  }
}
