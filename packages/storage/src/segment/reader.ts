/**
 * Reading records out of one segment file: start at an index position, scan forward
 * verifying every header CRC and checksum, skip records below the requested offset, and stop
 * at the byte and record budgets (always returning at least one record when one exists).
 * Payloads are views into the chunk read from disk; nothing is copied per record.
 */
import type { CorruptionKind } from '../errors.js';
import type { IoFile } from '../io/io.js';
import { readFully } from '../io/io.js';
import { READ_CHUNK_BYTES_MAX, READ_CHUNK_FIRST_BYTES, READ_CHUNK_SLACK_BYTES } from '../limits.js';
import {
  type CommitBody,
  FLAG_BATCH_OPEN,
  FLAG_COMMIT,
  FLAG_GENERATION_START,
  FLAG_PUBLISHER,
  HEAD_OK,
  HEAD_SHORT,
  type ProducerTag,
  RECORD_HEADER_BYTES,
  RecordHead,
  decodeCommitBody,
  publisherLength,
  readRecordHead,
  recordChecksumOk,
  viewOf,
} from './format.js';

export interface LogRecord {
  offset: number;
  timestampMicros: number;
  /** The record's flag bits as stored (high five bits of `payload_len`; 0 for plain records). */
  flags: number;
  /** The payload (for a commit record, its event); excludes tag and publisher trailer. */
  payload: Uint8Array;
  /** Present on the record that opens an idempotent producer batch. */
  producer?: ProducerTag;
  /** The publishing principal, when the record carries a publisher trailer. */
  publisher?: Uint8Array;
  /** The key changes of an atomic commit record. */
  commit?: CommitBody;
}

export interface SegmentReadRequest {
  file: IoFile;
  version: number;
  /** A record boundary (index entry or header end) and the offset of the record there. */
  startPosition: number;
  startOffset: number;
  /** Readable bytes of the file: records end at or before this. */
  endPosition: number;
  from: number;
  /** Records at or past this offset are not returned. */
  limitOffset: number;
  maxBytes: number;
  maxRecords: number;
  /** Whether records collected so far (from earlier segments) already count. */
  collectedBytes: number;
  collected: LogRecord[];
  includeGenerationStarts: boolean;
}

export interface SegmentReadResult {
  /** Next offset to read after this call (past skipped generation starts too). */
  next: number;
  /** Byte position of the record at `next`. */
  position: number;
  /** A budget stopped the read before the segment's end. */
  full: boolean;
  collectedBytes: number;
  damage?: { kind: CorruptionKind; position: number; detail: string; atStart: boolean };
}

export async function readSegment(req: SegmentReadRequest): Promise<SegmentReadResult> {
  const head = new RecordHead();
  const out = req.collected;
  let collectedBytes = req.collectedBytes;
  let pos = req.startPosition;
  let offset = req.startOffset;
  let chunk = new Uint8Array(0);
  let view = viewOf(chunk);
  let chunkStart = pos;
  const chunkTarget = Math.min(READ_CHUNK_BYTES_MAX, req.maxBytes + READ_CHUNK_SLACK_BYTES);
  // Start small and grow, so a read that wants one record does not pull megabytes.
  let chunkNext = Math.min(chunkTarget, READ_CHUNK_FIRST_BYTES);
  const load = async (at: number, atLeast: number) => {
    const size = Math.min(req.endPosition - at, Math.max(atLeast, chunkNext));
    chunkNext = Math.min(chunkTarget, chunkNext * 4);
    chunk = new Uint8Array(size);
    view = viewOf(chunk);
    chunkStart = at;
    const n = await readFully(req.file, chunk, 0, size, at);
    if (n < size) chunk = chunk.subarray(0, n);
  };
  const fail = (kind: CorruptionKind, detail: string) => ({
    next: offset,
    position: pos,
    full: false,
    collectedBytes,
    damage: { kind, position: pos, detail, atStart: pos === req.startPosition },
  });

  while (pos < req.endPosition && offset < req.limitOffset) {
    let rel = pos - chunkStart;
    if (rel < 0 || chunk.length - rel < RECORD_HEADER_BYTES) {
      await load(pos, RECORD_HEADER_BYTES);
      rel = 0;
    }
    const verdict = readRecordHead(chunk, view, rel, chunk.length, req.version, head);
    if (verdict === HEAD_SHORT) return fail('Truncated', 'record header past the readable end');
    if (verdict !== HEAD_OK) return fail(verdict, `record header at offset ${offset}`);
    if (head.offset !== offset) {
      return fail('OffsetOutOfOrder', `expected offset ${offset}, found ${head.offset}`);
    }
    const wanted = offset >= req.from;
    const isGenerationStart = (head.flags & FLAG_GENERATION_START) !== 0;
    const delivers = wanted && (!isGenerationStart || req.includeGenerationStarts);
    if (
      delivers &&
      out.length > 0 &&
      (out.length >= req.maxRecords || collectedBytes + head.bodyLength > req.maxBytes)
    ) {
      return { next: offset, position: pos, full: true, collectedBytes };
    }
    if (pos + head.totalBytes > req.endPosition) {
      return fail('Truncated', `record at offset ${offset} runs past the readable end`);
    }
    if (rel + head.totalBytes > chunk.length) {
      await load(pos, head.totalBytes);
      rel = 0;
    }
    if (!recordChecksumOk(chunk, view, rel, head))
      return fail('RecordChecksum', `record at offset ${offset}`);
    if (delivers) {
      const record = toRecord(chunk, view, rel, head);
      if (record === null) return fail('RecordPublisher', `record at offset ${offset}`);
      out.push(record);
      collectedBytes += head.bodyLength;
    }
    pos += head.totalBytes;
    offset++;
  }
  return { next: offset, position: pos, full: false, collectedBytes };
}

/** Builds the record view of verified bytes; null when the publisher trailer lies. */
export function toRecord(
  bytes: Uint8Array,
  view: DataView,
  at: number,
  head: RecordHead,
): LogRecord | null {
  let bodyEnd = at + head.totalBytes;
  const bodyStart = at + head.bodyStart;
  const record: LogRecord = {
    offset: head.offset,
    timestampMicros: head.timestampMicros,
    flags: head.flags,
    payload: bytes.subarray(bodyStart, bodyEnd),
  };
  if (head.flags & FLAG_PUBLISHER) {
    const m = publisherLength(bytes, at, head);
    if (m < 0) return null;
    record.publisher = bytes.subarray(bodyEnd - 1 - m, bodyEnd - 1);
    bodyEnd -= m + 1;
    record.payload = bytes.subarray(bodyStart, bodyEnd);
  }
  if (head.flags & FLAG_BATCH_OPEN) {
    record.producer = {
      producerId: view.getBigUint64(at + RECORD_HEADER_BYTES),
      sequence: view.getBigUint64(at + RECORD_HEADER_BYTES + 8),
      count: view.getUint32(at + RECORD_HEADER_BYTES + 16),
    };
  }
  if (head.flags & FLAG_COMMIT) {
    const commit = decodeCommitBody(record.payload);
    if (commit !== null) {
      record.commit = commit;
      record.payload = commit.event;
    }
  }
  return record;
}
