/**
 * Reads of a SegmentLog: records from an offset under byte and record budgets, across
 * segments, stopping at the readable bound (`trimmed` below the retained base, distinct from an
 * empty range at the tail), and `offsetForTime`'s bounded binary search. Sealed segments'
 * files are shared through SegmentFiles' open-file set; a read holds a segment's file while
 * it reads it, so retention may drop the segment but not close the file under the read.
 */
import { assert } from '@felix/common';
import { CorruptionError } from '../errors.js';
import type { IoFile } from '../io/io.js';
import {
  OFFSET_FOR_TIME_PROBES_MAX,
  READ_BYTES_MAX_DEFAULT,
  READ_RECORDS_MAX_DEFAULT,
} from '../limits.js';
import { SEGMENT_HEADER_BYTES } from '../segment/format.js';
import { type LogRecord, readSegment } from '../segment/reader.js';
import type { Segment, SegmentFiles } from './segment-files.js';

export type ReadResult =
  | { kind: 'records'; records: LogRecord[]; next: number }
  | { kind: 'trimmed'; requested: number; oldest: number };

export interface ReadBudget {
  maxBytes?: number;
  maxRecords?: number;
  /** Return generation-start records too (replication); readers leave them out. */
  includeGenerationStarts?: boolean;
}

/** A read in progress: where it is and what it has collected. */
interface ReadState {
  includeGenerationStarts: boolean;
  from: number;
  next: number;
  limit: number;
  maxBytes: number;
  maxRecords: number;
  records: LogRecord[];
  collectedBytes: number;
}

export class LogReader {
  constructor(
    private readonly dir: string,
    private readonly files: SegmentFiles,
    /** The readable bound at the moment a read starts. */
    private readonly readableOffset: () => number,
    /** Throws once the log is closing (offsetForTime's probes check it each time). */
    private readonly checkOpen: () => void,
  ) {}

  /**
   * Reads from `from`: at least one record when one is readable, then up to the budgets.
   * Generation-start records are skipped (they still consume an offset). `limit` replaces the
   * readable bound (a leader's shipper reads up to the written offset).
   */
  async read(from: number, budget: ReadBudget, limit?: number): Promise<ReadResult> {
    this.checkOpen();
    const files = this.files;
    if (from < files.baseOffset)
      return { kind: 'trimmed', requested: from, oldest: files.baseOffset };
    const s: ReadState = {
      includeGenerationStarts: budget.includeGenerationStarts === true,
      from,
      next: from,
      limit: limit ?? this.readableOffset(),
      maxBytes: budget.maxBytes ?? READ_BYTES_MAX_DEFAULT,
      maxRecords: budget.maxRecords ?? READ_RECORDS_MAX_DEFAULT,
      records: [],
      collectedBytes: 0,
    };
    while (s.next < s.limit) {
      // Looked up by offset each time: retention may drop head segments while we await.
      if (s.next < files.baseOffset) {
        if (s.records.length > 0) break;
        return { kind: 'trimmed', requested: from, oldest: files.baseOffset };
      }
      const seg = files.list[files.indexFor(s.next)]!;
      let file: IoFile;
      try {
        file = await files.acquire(seg);
      } catch (err) {
        if (seg.deleted && s.records.length === 0) {
          return { kind: 'trimmed', requested: from, oldest: files.baseOffset };
        }
        if (seg.deleted) break;
        throw err;
      }
      let full: boolean;
      try {
        full = await this.readSegmentInto(seg, file, s);
      } finally {
        files.release(seg);
      }
      if (full) return { kind: 'records', records: s.records, next: s.next };
      if (s.next < seg.nextOffset || seg === files.active) break;
    }
    return { kind: 'records', records: s.records, next: s.next };
  }

  /** Reads `seg` from `s.next` into `s`; true when a budget is full. */
  private async readSegmentInto(seg: Segment, file: IoFile, s: ReadState): Promise<boolean> {
    let start = seg.index.lookup(s.next);
    for (;;) {
      const res = await readSegment({
        file,
        version: seg.version,
        startPosition: start.position,
        startOffset: start.offset,
        endPosition: seg.bytes,
        from: s.next,
        limitOffset: s.limit,
        maxBytes: s.maxBytes,
        maxRecords: s.maxRecords,
        collectedBytes: s.collectedBytes,
        collected: s.records,
        includeGenerationStarts: s.includeGenerationStarts,
      });
      if (res.damage !== undefined) {
        if (res.damage.atStart && start.position !== SEGMENT_HEADER_BYTES) {
          // An index entry that does not point at its record: scan from the header instead.
          start = { offset: seg.baseOffset, position: SEGMENT_HEADER_BYTES };
          continue;
        }
        throw new CorruptionError(
          res.damage.kind,
          { shardDir: this.dir, segmentId: seg.id, position: res.damage.position },
          res.damage.detail,
        );
      }
      s.collectedBytes = res.collectedBytes;
      s.next = res.next;
      return res.full;
    }
  }

  /**
   * The first readable offset whose record was appended at or after `atMicros`, or undefined
   * (see SegmentLog.offsetForTime): a binary search over the segments by their newest time (no
   * I/O), then over the offsets of one segment, one record read per probe.
   */
  async offsetForTime(atMicros: number): Promise<number | undefined> {
    const list = this.files.list;
    const limit = this.readableOffset();
    let first = 0;
    let end = list.length;
    while (first < end) {
      const mid = (first + end) >>> 1;
      if (list[mid]!.newestTimestampMicros >= atMicros) end = mid;
      else first = mid + 1;
    }
    const seg = list[first];
    if (seg === undefined) return undefined;
    let lo = Math.max(seg.baseOffset, this.files.baseOffset);
    let hi = Math.min(seg.nextOffset, limit);
    let found: number | undefined;
    let probes = 0;
    while (lo < hi) {
      probes++;
      assert(probes <= OFFSET_FOR_TIME_PROBES_MAX, 'offsetForTime probes stay bounded');
      const mid = lo + Math.floor((hi - lo) / 2);
      const r = await this.read(mid, { maxRecords: 1 });
      if (r.kind === 'trimmed') {
        lo = Math.max(mid + 1, r.oldest);
        continue;
      }
      const rec = r.records[0];
      if (rec === undefined || rec.offset >= hi) hi = mid;
      else if (rec.timestampMicros >= atMicros) {
        found = rec.offset;
        hi = mid;
      } else lo = rec.offset + 1;
    }
    return found;
  }
}
