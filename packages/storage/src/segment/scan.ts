/**
 * Scanning one segment file forward from a record boundary, verifying every header CRC and
 * checksum, until the end or the first damage. The verdict says what the damage is, where,
 * and whether everything from it to the end of the file is a zero-filled tail (lost blocks),
 * so the caller (recovery) can decide between repairing the tail and refusing to open.
 * Reads in large chunks through one reused buffer.
 */
import type { CorruptionKind } from '../errors.js';
import type { IoFile } from '../io/io.js';
import { readFully } from '../io/io.js';
import {
  RECORD_PAYLOAD_BYTES_MAX,
  SCAN_CARRY_BYTES,
  SCAN_CHUNK_BYTES,
  ZERO_TAIL_BLOCK_BYTES,
} from '../limits.js';
import {
  FLAG_PUBLISHER,
  HEAD_OK,
  HEAD_SHORT,
  PRODUCER_TAG_BYTES,
  RECORD_HEADER_BYTES,
  RecordHead,
  publisherLength,
  readRecordHead,
  recordChecksumOk,
  viewOf,
} from './format.js';
import type { SparseIndex } from './sparse-index.js';

export interface ScanDamage {
  kind: CorruptionKind;
  /** Start of the damaged record. */
  position: number;
  detail: string;
  /** Every byte from `position` to the end of the file is a lost-block zero tail. */
  zeroTail: boolean;
  /**
   * Every byte from `position` (a record boundary) to the end of the file is zero: nothing
   * was written there, as past a preallocated segment's data. Implies `zeroTail`.
   */
  allZero: boolean;
}

export interface ScanResult {
  /** Position just past the last good record. */
  endPosition: number;
  /** Offset after the last good record. */
  nextOffset: number;
  records: number;
  /** Largest timestamp seen (-1 when no record was scanned). */
  newestTimestampMicros: number;
  damage?: ScanDamage;
}

export interface ScanOptions {
  position: number;
  expectedOffset: number;
  version: number;
  /** Records found are offered to this index. */
  index?: SparseIndex;
  /** Called for every good record; `bytes` is only valid during the call, `at` indexes it,
   *  `position` is the record's place in the file. */
  onRecord?: (
    bytes: Uint8Array,
    view: DataView,
    at: number,
    head: RecordHead,
    position: number,
  ) => void;
}

const LARGEST_RECORD_BYTES = RECORD_HEADER_BYTES + PRODUCER_TAG_BYTES + RECORD_PAYLOAD_BYTES_MAX;

/**
 * Two chunk buffers, reused across segments: the scan checks records in one while the next
 * chunk is read into the other, so checksum work and disk reads overlap.
 */
export class ScanBuffer {
  bytes: Uint8Array;
  view: DataView;
  spare: Uint8Array;
  spareView: DataView;
  readonly chunk: number;
  constructor(chunk = SCAN_CHUNK_BYTES) {
    this.chunk = chunk;
    this.bytes = new Uint8Array(SCAN_CARRY_BYTES + chunk);
    this.view = viewOf(this.bytes);
    this.spare = new Uint8Array(SCAN_CARRY_BYTES + chunk);
    this.spareView = viewOf(this.spare);
  }
  /** Grows the current buffer (a record larger than a chunk). */
  ensure(size: number): void {
    if (this.bytes.length >= size) return;
    this.bytes = new Uint8Array(size);
    this.view = viewOf(this.bytes);
  }
  swap(): void {
    const b = this.bytes;
    const v = this.view;
    this.bytes = this.spare;
    this.view = this.spareView;
    this.spare = b;
    this.spareView = v;
  }
}

export async function scanSegment(
  file: IoFile,
  fileSize: number,
  opts: ScanOptions,
  buffer: ScanBuffer = new ScanBuffer(),
): Promise<ScanResult> {
  const head = new RecordHead();
  let pos = opts.position;
  let offset = opts.expectedOffset;
  let records = 0;
  let newest = -1;
  // buffer.bytes[origin..end) holds the file bytes from bufStart on.
  let bufStart = pos;
  let origin = 0;
  let end = 0;
  let pending: Promise<number> | undefined;
  let pendingAt = -1;

  const prefetch = () => {
    const at = bufStart + (end - origin);
    if (pending !== undefined || at >= fileSize) return;
    pendingAt = at;
    pending = readFully(
      file,
      buffer.spare,
      SCAN_CARRY_BYTES,
      Math.min(buffer.chunk, fileSize - at),
      at,
    );
  };
  const settle = async () => {
    if (pending !== undefined) await pending.catch(() => 0);
    pending = undefined;
  };
  /** Makes the record at `pos` (at least `need` bytes) addressable in the buffer. */
  const refill = async (need: number) => {
    const available = end - (origin + pos - bufStart);
    const contiguous = pending !== undefined && pendingAt === bufStart + (end - origin);
    if (contiguous && available <= SCAN_CARRY_BYTES) {
      const n = await pending!;
      pending = undefined;
      const from = origin + pos - bufStart;
      buffer.spare.set(buffer.bytes.subarray(from, end), SCAN_CARRY_BYTES - available);
      buffer.swap();
      origin = SCAN_CARRY_BYTES - available;
      end = SCAN_CARRY_BYTES + n;
      bufStart = pos;
      prefetch();
      if (end - origin >= Math.min(need, fileSize - pos)) return;
    }
    await settle();
    buffer.ensure(Math.max(need, buffer.chunk));
    const want = Math.min(buffer.bytes.length, fileSize - pos);
    end = await readFully(file, buffer.bytes, 0, want, pos);
    origin = 0;
    bufStart = pos;
    prefetch();
  };
  const result = (damage?: ScanDamage): ScanResult => ({
    endPosition: pos,
    nextOffset: offset,
    records,
    newestTimestampMicros: newest,
    ...(damage !== undefined ? { damage } : {}),
  });
  const damaged = async (kind: CorruptionKind, detail: string, recordEnd: number | undefined) => {
    await settle();
    const zeros = await zeroTailKind(file, fileSize, pos, recordEnd, buffer);
    return result({
      kind,
      position: pos,
      detail,
      zeroTail: zeros !== 'none',
      allZero: zeros === 'all',
    });
  };

  await refill(0);
  while (pos < fileSize) {
    let rel = origin + pos - bufStart;
    if (end - rel < RECORD_HEADER_BYTES) {
      if (fileSize - pos < RECORD_HEADER_BYTES) {
        return damaged(
          'Truncated',
          `needed ${RECORD_HEADER_BYTES} header bytes, available ${fileSize - pos}`,
          undefined,
        );
      }
      await refill(RECORD_HEADER_BYTES);
      rel = origin;
      if (end - rel < RECORD_HEADER_BYTES) {
        return damaged(
          'Truncated',
          `file shorter than its size (${end - rel} bytes read)`,
          undefined,
        );
      }
    }
    const verdict = readRecordHead(buffer.bytes, buffer.view, rel, end, opts.version, head);
    if (verdict === HEAD_SHORT) throw new Error('unreachable: header bytes were loaded');
    if (verdict !== HEAD_OK)
      return damaged(verdict, `record header at offset ${offset}`, undefined);
    const recordEnd = pos + head.totalBytes;
    if (head.offset !== offset) {
      return damaged(
        'OffsetOutOfOrder',
        `expected offset ${offset}, found ${head.offset}`,
        recordEnd,
      );
    }
    if (recordEnd > fileSize) {
      return damaged(
        'Truncated',
        `needed ${head.totalBytes} record bytes, available ${fileSize - pos}`,
        recordEnd,
      );
    }
    if (rel + head.totalBytes > end) {
      await refill(Math.min(head.totalBytes, LARGEST_RECORD_BYTES));
      rel = origin;
      if (end - rel < head.totalBytes) {
        return damaged(
          'Truncated',
          `file shorter than its size (${end - rel} bytes read)`,
          recordEnd,
        );
      }
    }
    if (!recordChecksumOk(buffer.bytes, buffer.view, rel, head)) {
      return damaged('RecordChecksum', `record at offset ${offset}`, recordEnd);
    }
    if (head.flags & FLAG_PUBLISHER && publisherLength(buffer.bytes, rel, head) < 0) {
      return damaged(
        'RecordPublisher',
        `publisher length exceeds body at offset ${offset}`,
        recordEnd,
      );
    }
    opts.index?.offer(offset, pos);
    opts.onRecord?.(buffer.bytes, buffer.view, rel, head, pos);
    if (head.timestampMicros > newest) newest = head.timestampMicros;
    pos = recordEnd;
    offset++;
    records++;
  }
  await settle();
  return result();
}

/**
 * Whether the bytes from `from` to the end of the file are a lost-block tail: `all` zero, or
 * zero from a `block` boundary inside the damaged record onwards (power loss with the size on
 * disk but the blocks not). Zeros followed by anything non-zero are `none`.
 */
async function zeroTailKind(
  file: IoFile,
  fileSize: number,
  from: number,
  recordEnd: number | undefined,
  buffer: ScanBuffer,
): Promise<'all' | 'block' | 'none'> {
  // Find where the final run of zeros starts, reading backwards from the end.
  let zeroStart = fileSize;
  let end = fileSize;
  while (end > from) {
    const start = Math.max(from, end - buffer.bytes.length);
    const n = await readFully(file, buffer.bytes, 0, end - start, start);
    if (n < end - start) return 'none';
    let i = n - 1;
    while (i >= 0 && buffer.bytes[i] === 0) i--;
    if (i >= 0) {
      zeroStart = start + i + 1;
      break;
    }
    zeroStart = start;
    end = start;
  }
  if (zeroStart === from) return 'all';
  if (zeroStart >= fileSize || zeroStart % ZERO_TAIL_BLOCK_BYTES !== 0) return 'none';
  const damagedEnd = recordEnd ?? from + RECORD_HEADER_BYTES;
  return zeroStart > from && zeroStart < damagedEnd ? 'block' : 'none';
}
