/**
 * Recovery of a shard directory, planned then applied (reference §4.3).
 *
 * Contract:
 * - A torn tail is repaired: in the newest segment, a short final record (`Truncated`), a
 *   zero-filled tail (lost blocks, or the zeros preallocated past its data), or anything past
 *   the durable mark is cut away. In a sealed segment only zeros from a record boundary to
 *   its end are cut (a seal whose cut of the preallocated zeros did not survive a power
 *   loss); the next segment must still start at the offset after its last record.
 * - A zero tail that starts below the durable mark is damage: the mark says data was synced
 *   there.
 * - Committed data is never silently discarded: any other damage (a bad header CRC or
 *   checksum inside the log, an offset gap between segments, a bad segment header) refuses to
 *   open with a CorruptionError naming the shard directory, segment, byte position and kind.
 * - Recovery is idempotent: planning after applying a plan finds nothing more to cut, and the
 *   files it rewrites (the newest index) come out byte-identical.
 * - Indexes are derived, never trusted: one that fails any check is rebuilt from its segment.
 *
 * `planRecovery` only reads (the verify tool runs it alone); `applyRecovery` does the writes.
 * Sealed segments are checked from their last index entry to their end (all of them with
 * `verifyAll`); the newest segment is always scanned in full.
 */
import { join } from 'node:path';
import { CorruptionError, type CorruptionKind } from '../errors.js';
import type { Io, IoFile } from '../io/io.js';
import { readFully, writeFully } from '../io/io.js';
import { SCAN_CHUNK_BYTES, SEGMENTS_PER_LOG_MAX } from '../limits.js';
import { SEGMENT_HEADER_BYTES, decodeSegmentHeader, isHeaderVerdict } from '../segment/format.js';
import { ScanBuffer, type ScanResult, scanSegment } from '../segment/scan.js';
import { SparseIndex } from '../segment/sparse-index.js';
import { type DurableMark, decodeDurableMark } from './durable-mark.js';
import { DURABLE_MARK_FILE, indexPath, listSegmentIds, segmentPath } from './layout.js';

export interface RecoveredSegment {
  id: number;
  baseOffset: number;
  /** Offset after the segment's last record. */
  nextOffset: number;
  /** Valid bytes (after any repair). */
  bytes: number;
  version: number;
  records: number;
  /** Largest record timestamp seen by recovery (-1 when none was scanned). */
  newestTimestampMicros: number;
  index: SparseIndex;
}

export type RecoveryAction =
  | { kind: 'truncate'; segmentId: number; from: number; to: number; reason: string }
  | { kind: 'delete'; segmentId: number; reason: string }
  | { kind: 'rewriteIndex'; segmentId: number };

export interface RecoveryPlan {
  dir: string;
  segments: RecoveredSegment[];
  actions: RecoveryAction[];
  mark: DurableMark | undefined;
}

export interface PlanOptions {
  indexSpacingBytes: number;
  /** Scan every sealed segment in full, not only past its last index entry. */
  verifyAll?: boolean;
}

/** A segment file as planning first sees it: its size and header (no file kept open). */
interface Candidate {
  id: number;
  size: number;
  header: Uint8Array;
}

function isBlank(c: Candidate): boolean {
  return c.size < SEGMENT_HEADER_BYTES || c.header.every((b) => b === 0);
}

export async function planRecovery(io: Io, dir: string, opts: PlanOptions): Promise<RecoveryPlan> {
  const corrupt = (kind: CorruptionKind, segmentId: number, position: number, detail: string) =>
    new CorruptionError(kind, { shardDir: dir, segmentId, position }, detail);
  const names = await io.readdir(dir);
  const { ids, unsafe } = listSegmentIds(names);
  if (unsafe.length > 0) throw corrupt('SegmentName', -1, 0, `segment id too large: ${unsafe[0]}`);
  if (ids.length > SEGMENTS_PER_LOG_MAX) {
    throw corrupt(
      'SegmentName',
      ids[0]!,
      0,
      `${ids.length} segments exceed ${SEGMENTS_PER_LOG_MAX}`,
    );
  }
  const mark = await readMark(io, dir);
  // One file open at a time, here and while scanning: a log may hold more segments than the
  // process may open files.
  const candidates: Candidate[] = [];
  for (const id of ids) candidates.push(await readCandidate(io, dir, id));
  return plan(io, dir, opts, mark, candidates, corrupt);
}

async function readCandidate(io: Io, dir: string, id: number): Promise<Candidate> {
  const file = await io.open(segmentPath(dir, id), 'read');
  try {
    const size = await file.size();
    const header = new Uint8Array(Math.min(size, SEGMENT_HEADER_BYTES));
    await readFully(file, header, 0, header.length, 0);
    return { id, size, header };
  } finally {
    await file.close();
  }
}

/** The position of the first non-zero byte past a segment's header, read in bounded chunks;
 *  undefined when there is none. */
async function firstNonZeroPastHeader(
  io: Io,
  dir: string,
  c: Candidate,
): Promise<number | undefined> {
  if (c.size <= SEGMENT_HEADER_BYTES) return undefined;
  const file = await io.open(segmentPath(dir, c.id), 'read');
  try {
    const chunk = new Uint8Array(Math.min(SCAN_CHUNK_BYTES, c.size - SEGMENT_HEADER_BYTES));
    for (let at = SEGMENT_HEADER_BYTES; at < c.size; at += chunk.length) {
      const n = Math.min(chunk.length, c.size - at);
      await readFully(file, chunk, 0, n, at);
      const i = chunk.subarray(0, n).findIndex((b) => b !== 0);
      if (i >= 0) return at + i;
    }
    return undefined;
  } finally {
    await file.close();
  }
}

async function plan(
  io: Io,
  dir: string,
  opts: PlanOptions,
  mark: DurableMark | undefined,
  candidates: Candidate[],
  corrupt: (
    kind: CorruptionKind,
    segmentId: number,
    position: number,
    detail: string,
  ) => CorruptionError,
): Promise<RecoveryPlan> {
  const actions: RecoveryAction[] = [];
  const segments: RecoveredSegment[] = [];
  const buffer = new ScanBuffer();
  const markCovers = (id: number, position: number) =>
    mark !== undefined && mark.segmentId === id && mark.syncedBytes > position;

  // An unfinished creation or roll leaves a newest segment without a header: discard it,
  // unless the mark says bytes past its header were synced.
  while (candidates.length > 0 && isBlank(candidates[candidates.length - 1]!)) {
    const c = candidates[candidates.length - 1]!;
    const kind: CorruptionKind = c.size < SEGMENT_HEADER_BYTES ? 'Truncated' : 'SegmentMagic';
    if (markCovers(c.id, SEGMENT_HEADER_BYTES)) {
      throw corrupt(kind, c.id, 0, 'blank segment header below the durable mark');
    }
    if (candidates.length === 1 && c.size > SEGMENT_HEADER_BYTES) {
      throw corrupt(kind, c.id, 0, 'zeroed header on a first segment holding data');
    }
    // A header is synced before any record goes in, so an unfinished roll leaves zeros (or
    // preallocated zeros) behind it, never records: bytes past a zeroed header are a lost sector
    // over data that may have been acknowledged, not a creation to undo.
    const data = await firstNonZeroPastHeader(io, dir, c);
    if (data !== undefined) {
      throw corrupt(kind, c.id, data, 'zeroed header on a newest segment holding data');
    }
    actions.push({
      kind: 'delete',
      segmentId: c.id,
      reason: 'blank newest segment (unfinished creation)',
    });
    candidates.pop();
  }

  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    const newest = i === candidates.length - 1;
    const prev = segments[segments.length - 1];
    if (!newest && c.size < SEGMENT_HEADER_BYTES) {
      // An empty segment between two that meet exactly (a lost roll race): the next segment's
      // continuity check refuses the log if they do not meet.
      actions.push({ kind: 'delete', segmentId: c.id, reason: 'empty segment mid-chain' });
      continue;
    }
    const header = decodeSegmentHeader(c.header);
    if (isHeaderVerdict(header)) throw corrupt(header.kind, c.id, header.position, header.detail);
    if (prev !== undefined && header.baseOffset !== prev.nextOffset) {
      throw corrupt(
        'OffsetOutOfOrder',
        c.id,
        8,
        `offset out of order (expected ${prev.nextOffset}, found ${header.baseOffset})`,
      );
    }
    const seg: RecoveredSegment = {
      id: c.id,
      baseOffset: header.baseOffset,
      nextOffset: header.baseOffset,
      bytes: c.size,
      version: header.version,
      records: 0,
      newestTimestampMicros: -1,
      index: new SparseIndex(header.baseOffset, opts.indexSpacingBytes),
    };
    const file = await io.open(segmentPath(dir, c.id), 'read');
    let scan: ScanResult;
    try {
      scan = await scanCandidate(io, dir, opts, { c, file, seg, newest, buffer, actions });
    } finally {
      await file.close();
    }
    seg.nextOffset = scan.nextOffset;
    seg.records = scan.records;
    seg.newestTimestampMicros = scan.newestTimestampMicros;
    const damage = scan.damage;
    if (damage !== undefined) {
      const pastMark =
        mark !== undefined &&
        ((mark.segmentId === c.id && damage.position >= mark.syncedBytes) ||
          (newest && mark.segmentId < c.id));
      const repairable = newest
        ? damage.kind === 'Truncated' || damage.zeroTail || pastMark
        : (pastMark && mark?.segmentId === c.id) || damage.allZero;
      if (!repairable || markCovers(c.id, damage.position)) {
        throw corrupt(damage.kind, c.id, damage.position, damage.detail);
      }
      actions.push({
        kind: 'truncate',
        segmentId: c.id,
        from: c.size,
        to: damage.position,
        reason: `${damage.kind}${damage.zeroTail ? ' (zero-filled tail)' : ''}${pastMark ? ' past the durable mark' : ''}`,
      });
      seg.bytes = damage.position;
      seg.index.truncateAt(damage.position);
    }
    if (newest) actions.push({ kind: 'rewriteIndex', segmentId: c.id });
    segments.push(seg);
  }
  return { dir, segments, actions, mark };
}

interface ScanTarget {
  c: Candidate;
  /** The segment's file, open for this scan only. */
  file: IoFile;
  seg: RecoveredSegment;
  newest: boolean;
  buffer: ScanBuffer;
  actions: RecoveryAction[];
}

/**
 * Scans a segment: a sealed one from its last index entry when its index holds up (else it is
 * rebuilt), the newest one (or any, with `verifyAll`) in full.
 */
async function scanCandidate(
  io: Io,
  dir: string,
  opts: PlanOptions,
  t: ScanTarget,
): Promise<ScanResult> {
  const { c, file, seg, buffer } = t;
  if (!t.newest && opts.verifyAll !== true) {
    const loaded = await readIndex(io, dir, c, seg.baseOffset, opts.indexSpacingBytes);
    const last = loaded?.last();
    if (loaded !== null && last !== undefined) {
      const tail = await scanSegment(
        file,
        c.size,
        { position: last.position, expectedOffset: last.offset, version: seg.version },
        buffer,
      );
      if (tail.damage === undefined) {
        seg.index = loaded;
        return tail;
      }
    }
    t.actions.push({ kind: 'rewriteIndex', segmentId: c.id });
  }
  return scanSegment(
    file,
    c.size,
    {
      position: SEGMENT_HEADER_BYTES,
      expectedOffset: seg.baseOffset,
      version: seg.version,
      index: seg.index,
    },
    buffer,
  );
}

async function readMark(io: Io, dir: string): Promise<DurableMark | undefined> {
  const path = join(dir, DURABLE_MARK_FILE);
  if (!(await io.exists(path))) return undefined;
  const file = await io.open(path, 'read');
  try {
    const bytes = new Uint8Array(64);
    const n = await readFully(file, bytes, 0, bytes.length, 0);
    return decodeDurableMark(bytes.subarray(0, n));
  } finally {
    await file.close();
  }
}

/** Index bytes bounded by what a segment of this size can need, so a huge file is not read. */
async function readIndex(
  io: Io,
  dir: string,
  c: Candidate,
  baseOffset: number,
  spacing: number,
): Promise<SparseIndex | null> {
  const path = indexPath(dir, c.id);
  if (!(await io.exists(path))) return null;
  const file = await io.open(path, 'read');
  try {
    const size = await file.size();
    // One entry per record at most: an index longer than its segment could need is bogus.
    if (size > 24 + 16 * Math.ceil(c.size / 28)) return null;
    const bytes = new Uint8Array(size);
    const n = await readFully(file, bytes, 0, size, 0);
    return SparseIndex.decode(bytes.subarray(0, n), baseOffset, c.size, spacing);
  } finally {
    await file.close();
  }
}

/** Carries out a plan's writes. Each step is durable before the next starts. */
export async function applyRecovery(io: Io, plan: RecoveryPlan): Promise<void> {
  for (const action of plan.actions) {
    if (action.kind === 'delete') {
      await io.unlink(segmentPath(plan.dir, action.segmentId));
      if (await io.exists(indexPath(plan.dir, action.segmentId))) {
        await io.unlink(indexPath(plan.dir, action.segmentId));
      }
      await io.syncDir(plan.dir);
    } else if (action.kind === 'truncate') {
      const file = await io.open(segmentPath(plan.dir, action.segmentId), 'write');
      try {
        await file.truncate(action.to);
        await file.datasync();
      } finally {
        await file.close();
      }
    } else {
      const seg = plan.segments.find((s) => s.id === action.segmentId);
      if (seg === undefined) continue;
      const bytes = seg.index.encode();
      const file = await io.open(indexPath(plan.dir, seg.id), 'replace');
      try {
        await writeFully(file, bytes, 0, bytes.length, 0);
        await file.datasync();
      } finally {
        await file.close();
      }
    }
  }
}
