/**
 * Read-only inspection of a shard directory for `felix-log-tool dump` and `verify`: both run
 * recovery's plan only (never its writes), so a directory is never modified, and both read
 * any directory in the segment format (versions 2 to 6), whoever wrote it.
 */
import { CorruptionError } from '../errors.js';
import type { Io } from '../io/io.js';
import { DUMP_CHUNK_BYTES, INDEX_SPACING_BYTES_DEFAULT } from '../limits.js';
import { segmentPath } from '../log/layout.js';
import { type RecoveryAction, planRecovery } from '../log/recovery.js';
import { SEGMENT_HEADER_BYTES } from '../segment/format.js';
import { type LogRecord, readSegment } from '../segment/reader.js';

export interface VerifySummary {
  dir: string;
  segments: number;
  records: number;
  baseOffset: number;
  tailOffset: number;
  bytes: number;
  /** What opening the log would repair (torn tails, blank segments); empty when clean. */
  repairs: RecoveryAction[];
}

/** Scans every segment in full; throws CorruptionError naming the damage. */
export async function verifyShardDir(io: Io, dir: string): Promise<VerifySummary> {
  const plan = await planRecovery(io, dir, {
    indexSpacingBytes: INDEX_SPACING_BYTES_DEFAULT,
    verifyAll: true,
  });
  const segs = plan.segments;
  let records = 0;
  let bytes = 0;
  for (const s of segs) {
    records += s.records;
    bytes += s.bytes;
  }
  return {
    dir,
    segments: segs.length,
    records,
    baseOffset: segs[0]?.baseOffset ?? 0,
    tailOffset: segs.at(-1)?.nextOffset ?? 0,
    bytes,
    repairs: plan.actions.filter((a) => a.kind !== 'rewriteIndex'),
  };
}

/** Every record of the directory in offset order, generation starts included. */
export async function* dumpShardDir(io: Io, dir: string): AsyncGenerator<LogRecord> {
  const plan = await planRecovery(io, dir, { indexSpacingBytes: INDEX_SPACING_BYTES_DEFAULT });
  for (const seg of plan.segments) {
    const file = await io.open(segmentPath(dir, seg.id), 'read');
    try {
      let position = SEGMENT_HEADER_BYTES;
      let offset = seg.baseOffset;
      while (offset < seg.nextOffset) {
        const collected: LogRecord[] = [];
        const res = await readSegment({
          file,
          version: seg.version,
          startPosition: position,
          startOffset: offset,
          endPosition: seg.bytes,
          from: offset,
          limitOffset: seg.nextOffset,
          maxBytes: DUMP_CHUNK_BYTES,
          maxRecords: Number.MAX_SAFE_INTEGER,
          collectedBytes: 0,
          collected,
          includeGenerationStarts: true,
        });
        if (res.damage !== undefined) {
          throw new CorruptionError(
            res.damage.kind,
            { shardDir: dir, segmentId: seg.id, position: res.damage.position },
            res.damage.detail,
          );
        }
        for (const r of collected) yield r;
        offset = res.next;
        position = res.position;
      }
    } finally {
      await file.close();
    }
  }
}

/** The JSON line `dump` prints for a record. */
export function recordJson(r: LogRecord): string {
  const line: Record<string, unknown> = {
    offset: r.offset,
    timestamp_micros: r.timestampMicros,
    flags: r.flags,
    payload: Buffer.from(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength).toString(
      'base64',
    ),
  };
  if (r.producer !== undefined) {
    line.producer = {
      producer_id: r.producer.producerId.toString(),
      sequence: r.producer.sequence.toString(),
      count: r.producer.count,
    };
  }
  if (r.publisher !== undefined) line.publisher = Buffer.from(r.publisher).toString('base64');
  return JSON.stringify(line);
}
