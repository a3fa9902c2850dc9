/**
 * Encodes one write's group of queued batches into one buffer: assigns offsets, stamps each
 * batch's records with its time, and notes the sparse-index entries the group crosses. One
 * write is in flight at a time, so the buffer is reused: no allocation (and no garbage) per
 * write unless a group outgrows the coalescing bound.
 */
import { assert } from '@felix/common';
import { WRITE_COALESCE_BYTES_MAX } from '../limits.js';
import { SEGMENT_HEADER_BYTES, encodeRecordInto, viewOf } from '../segment/format.js';
import type { Segment } from './segment-files.js';

/** What the encoder reads of a queued batch. */
export interface EncodableBatch {
  payloads: Uint8Array[] | null;
  timestampMicros: number;
  /** Each record's flag bits, when any is set (a generation-start record). */
  flags?: readonly number[];
}

/** One encoded group: `buffer[0, bytes)` holds offsets `[first, next)`. */
export interface Encoded {
  buffer: Uint8Array;
  bytes: number;
  next: number;
  newestMicros: number;
  /** Index entries to offer once written: offsets and their positions in the segment. */
  indexOffsets: number[];
  indexPositions: number[];
}

export class GroupEncoder {
  private buffer = new Uint8Array(0);
  private view = viewOf(this.buffer);

  /** Encodes `group` (`total` bytes) to go at the end of `segment`, from offset `first`. */
  encode(
    group: readonly EncodableBatch[],
    total: number,
    at: { segment: Segment; first: number; indexSpacingBytes: number },
  ): Encoded {
    let buffer = this.buffer;
    let view = this.view;
    if (buffer.length < total) {
      buffer = new Uint8Array(
        Math.max(total, Math.min(WRITE_COALESCE_BYTES_MAX, buffer.length * 2)),
      );
      view = viewOf(buffer);
      // A group past the coalescing bound gets a buffer of its own, not kept.
      if (buffer.length <= WRITE_COALESCE_BYTES_MAX) {
        this.buffer = buffer;
        this.view = view;
      }
    }
    const basePos = at.segment.bytes;
    const indexOffsets: number[] = [];
    const indexPositions: number[] = [];
    const lastEntry = at.segment.index.last();
    let nextIndexAt =
      lastEntry === undefined ? SEGMENT_HEADER_BYTES : lastEntry.position + at.indexSpacingBytes;
    let offset = at.first;
    let pos = 0;
    let newest = at.segment.newestTimestampMicros;
    for (const p of group) {
      const ts = p.timestampMicros;
      if (ts > newest) newest = ts;
      const flags = p.flags;
      let k = 0;
      for (const payload of p.payloads!) {
        if (basePos + pos >= nextIndexAt) {
          indexOffsets.push(offset);
          indexPositions.push(basePos + pos);
          nextIndexAt = basePos + pos + at.indexSpacingBytes;
        }
        const f = flags === undefined ? 0 : flags[k]!;
        pos =
          f === 0
            ? encodeRecordInto(buffer, view, pos, offset, ts, payload)
            : encodeRecordInto(buffer, view, pos, offset, ts, payload, { flags: f });
        offset++;
        k++;
      }
    }
    assert(pos === total, 'encoded size matches the planned size');
    return {
      buffer,
      bytes: total,
      next: offset,
      newestMicros: newest,
      indexOffsets,
      indexPositions,
    };
  }
}
