/**
 * Internal (broker-to-broker) messages: one codec per body shape, every body starting with
 * its u64 correlation id. Kinds 1–31 (the reference's) and 40 (a Felix extension) are decoded;
 * an unknown kind (or one this build does not implement, 32–37) decodes to `Unknown` carrying
 * the correlation id, so the receiver answers `UnsupportedKind` and carries on. Trailing bytes
 * are an error.
 */
import { assert } from '@felix/common';
import { FieldRangeError, InvalidEnumError, TruncatedError } from '../errors.js';
import { BodyReader, BodyWriter, type ShardRef } from './body.js';
import { FRAME_HEADER_BYTES, INTERNAL_BODY_FIELDS_BYTES_GUESS } from '../limits.js';
import { type InternalFrame, headInternalFrame } from './header.js';

export const INTERNAL_KIND = {
  ForwardPublish: 1,
  ForwardPublishOk: 2,
  ForwardPublishError: 3,
  NotLeader: 4,
  Hello: 5,
  HelloOk: 6,
  ReplicateRecords: 7,
  ReplicateOk: 8,
  ReplicateError: 9,
  ReplicateBootstrap: 10,
  ForwardCacheOp: 11,
  ForwardCacheOk: 12,
  ForwardCacheError: 13,
  ReplicateCacheRecords: 14,
  ReplicateCacheBootstrap: 15,
  ReplicateGroupRecords: 16,
  ReplicateGroupBootstrap: 17,
  ReplicateDeadLetterRecords: 18,
  ReplicateDeadLetterBootstrap: 19,
  ReplicateCounterRecords: 20,
  ReplicateCounterBootstrap: 21,
  AuthorizedForwardPublish: 22,
  AuthorizedForwardCacheOp: 23,
  ReplicateRebuild: 24,
  ReplicateMarkedRecords: 25,
  ReplicateCommittedRecords: 26,
  HelloCapable: 27,
  HelloCapableOk: 28,
  Fence: 29,
  FenceOk: 30,
  ReplicateFetch: 31,
  /** A Felix extension (the reference has no such message): a riding log's follower may delete
   *  whole segments below the leader's base (docs/replication.md, "State that rides with a
   *  shard"). Well clear of the reference's kinds (it uses up to 37). */
  ReplicateTrim: 40,
} as const;
export type InternalKindName = keyof typeof INTERNAL_KIND;

/** `u8 ack` of a forwarded publish. */
export const FORWARD_ACK = { None: 0, OnAccept: 1, OnCommit: 2 } as const;
/** `u8 op` of a forwarded cache op. */
export const CACHE_OP = { Put: 1, Get: 2, Delete: 3, CounterAdd: 4, CounterGet: 5 } as const;
/** `ReplicaLog` (u8). */
export const REPLICA_LOG = {
  Stream: 1,
  Cache: 2,
  GroupCursors: 3,
  GroupDeadLetters: 4,
  Counters: 5,
} as const;

/**
 * The mark byte of each payload of a marked batch (kind 25). This build sends and accepts only
 * `None` and `GenerationStart`; the reference's producer marks (1, 2), commit records (4) and
 * publisher bit (0x80) are refused as malformed.
 */
export const REPLICATE_MARK = { None: 0, GenerationStart: 3 } as const;

/** Internal error codes (u16) of `ForwardPublishError`, `ReplicateError`, `ForwardCacheError`. */
export const INTERNAL_ERROR = {
  StaleRoute: 1,
  Unavailable: 2,
  Unauthorized: 3,
  Overload: 4,
  ProtocolVersion: 5,
  Malformed: 6,
  StorageFailed: 7,
  LogGap: 8,
  LogConflict: 9,
  FencedEpoch: 10,
  UnsupportedKind: 11,
} as const;
/** Codes a sender may retry (LogGap: resume from `expectedOffset`, not resend). */
export const INTERNAL_RETRYABLE_ERRORS: readonly number[] = [1, 2, 4, 8];

/** Internal capability bits (u64) of `HelloCapable`; unknown bits are kept, never refused. */
export const INTERNAL_CAPABILITY = {
  FENCE: 1n << 0n,
  TAIL_FETCH: 1n << 1n,
  GENERATION_LABELS: 1n << 2n,
  FORWARD_OFFSETS: 1n << 3n,
  CACHE_FENCE: 1n << 4n,
  RECORD_TIMES: 1n << 5n,
  BALLOTS: 1n << 6n,
  /** A Felix extension, well above the reference's bits: this broker answers a stream batch
   *  only once its copy is synced (its `durable.fsync_mode` is `onCommit`), so the offsets it
   *  confirms are on disk; without the bit they may be written only (docs/replication.md,
   *  "Leader and quorum acknowledgement"). */
  SYNCS_BEFORE_ANSWER: 1n << 32n,
} as const;

type Records = 'ReplicateRecords' | 'ReplicateCacheRecords' | 'ReplicateGroupRecords';
type MoreRecords = 'ReplicateDeadLetterRecords' | 'ReplicateCounterRecords';
type Bootstraps = 'ReplicateBootstrap' | 'ReplicateCacheBootstrap' | 'ReplicateGroupBootstrap';
type MoreBootstraps = 'ReplicateDeadLetterBootstrap' | 'ReplicateCounterBootstrap';

interface Base {
  correlationId: number;
}
export interface ForwardPublishBody extends Base {
  kind: 'ForwardPublish' | 'AuthorizedForwardPublish';
  shard: ShardRef;
  ack: number;
  payloads: Uint8Array[];
  /** Client bearer token; required (non-empty) on `AuthorizedForwardPublish`. */
  credential?: Uint8Array;
}
export interface ForwardCacheOpBody extends Base {
  kind: 'ForwardCacheOp' | 'AuthorizedForwardCacheOp';
  shard: ShardRef;
  op: number;
  key: string;
  /** 0 = no TTL. */
  ttlMs: number;
  value: Uint8Array;
  credential?: Uint8Array;
}
export type InternalMessage =
  | ForwardPublishBody
  | ForwardCacheOpBody
  | (Base & { kind: 'ForwardPublishOk'; firstOffset: number; lastOffset: number })
  | (Base & { kind: 'ForwardPublishError' | 'ForwardCacheError'; code: number; detail: string })
  | (Base & { kind: 'NotLeader'; nodeId: string; advertiseAddr: string; generation: number })
  | (Base & { kind: 'Hello' | 'HelloOk'; nodeId: string })
  | (Base & { kind: 'HelloCapable' | 'HelloCapableOk'; nodeId: string; capabilities: bigint })
  | (Base & {
      kind: Records | MoreRecords;
      shard: ShardRef;
      firstOffset: number;
      checksum: number;
      payloads: Uint8Array[];
    })
  /** A stream batch with one mark byte per payload (REPLICATE_MARK): it holds a record that is
   *  not plain (a generation start). */
  | (Base & {
      kind: 'ReplicateMarkedRecords';
      shard: ShardRef;
      firstOffset: number;
      checksum: number;
      payloads: Uint8Array[];
      marks: Uint8Array;
    })
  /** A stream batch that also carries the leader's commit mark (quorum shards); it may hold no
   *  payloads, to carry the mark alone. */
  | (Base & {
      kind: 'ReplicateCommittedRecords';
      shard: ShardRef;
      firstOffset: number;
      checksum: number;
      commitOffset: number;
      payloads: Uint8Array[];
    })
  | (Base & { kind: 'ReplicateOk'; durableOffset: number })
  | (Base & { kind: 'ReplicateError'; code: number; expectedOffset: number; detail: string })
  | (Base & { kind: Bootstraps | MoreBootstraps; shard: ShardRef; baseOffset: number })
  | (Base & { kind: 'ForwardCacheOk'; value?: Uint8Array })
  | (Base & { kind: 'ReplicateRebuild'; shard: ShardRef; log: number; baseOffset: number })
  /** The leader's base of a log riding with the shard (a follower trims whole segments below
   *  it, and below its own durable end); answered ReplicateOk with the follower's durable end. */
  | (Base & { kind: 'ReplicateTrim'; shard: ShardRef; log: number; baseOffset: number })
  | (Base & { kind: 'Fence'; shard: ShardRef; log: number })
  | (Base & { kind: 'FenceOk'; logEnd: number; commitOffset: number; lastGeneration: number })
  | (Base & {
      kind: 'ReplicateFetch';
      shard: ShardRef;
      log: number;
      fromOffset: number;
      maxBytes: number;
    })
  | (Base & { kind: 'Unknown'; code: number });

const NAMES = new Map<number, InternalKindName>(
  Object.entries(INTERNAL_KIND).map(([name, code]) => [code, name as InternalKindName]),
);

/** Encodes a message as a complete FLXI frame. */
export function encodeInternalMessage(message: InternalMessage): Uint8Array {
  if (message.kind === 'Unknown') {
    throw new InvalidEnumError('internal kind (Unknown cannot be encoded)', message.code);
  }
  // The body is written after room for the header: the frame is the writer's buffer.
  const w = new BodyWriter(FRAME_HEADER_BYTES, bodyBytesGuess(message));
  w.u64(message.correlationId, 'correlation_id');
  writeBody(w, message);
  return headInternalFrame(w.finish(), INTERNAL_KIND[message.kind]);
}

type Encodable = Exclude<InternalMessage, { kind: 'Unknown' }>;

/** Room a body likely needs: its payloads or value and a little for the rest, so a batch's
 *  writer is allocated once at its size instead of growing into it. */
function bodyBytesGuess(m: InternalMessage): number {
  let bytes = INTERNAL_BODY_FIELDS_BYTES_GUESS;
  if ('payloads' in m) for (const p of m.payloads) bytes += 4 + p.length;
  if ('value' in m && m.value !== undefined) bytes += 4 + m.value.length;
  return bytes;
}

function writeBody(w: BodyWriter, m: Encodable): void {
  switch (m.kind) {
    case 'ForwardPublish':
    case 'AuthorizedForwardPublish':
      w.shardRef(m.shard);
      w.u8(m.ack, 'ack');
      w.payloads(m.payloads);
      if (m.kind === 'AuthorizedForwardPublish') w.credential(m.credential ?? new Uint8Array(0));
      return;
    case 'ForwardCacheOp':
    case 'AuthorizedForwardCacheOp':
      w.shardRef(m.shard);
      w.u8(m.op, 'op');
      w.str(m.key, 'key');
      w.u64(m.ttlMs, 'ttl_ms');
      w.blob(m.value, 'value');
      if (m.kind === 'AuthorizedForwardCacheOp') w.credential(m.credential ?? new Uint8Array(0));
      return;
    case 'ForwardPublishOk':
      w.u64(m.firstOffset, 'first_offset');
      w.u64(m.lastOffset, 'last_offset');
      return;
    case 'ForwardPublishError':
    case 'ForwardCacheError':
      w.u16(m.code, 'code');
      w.str(m.detail, 'detail');
      return;
    case 'NotLeader':
      w.str(m.nodeId, 'node_id');
      w.str(m.advertiseAddr, 'advertise_addr');
      w.u64(m.generation, 'generation');
      return;
    case 'Hello':
    case 'HelloOk':
      w.str(m.nodeId, 'node_id');
      return;
    case 'HelloCapable':
    case 'HelloCapableOk':
      w.str(m.nodeId, 'node_id');
      w.u64Big(m.capabilities, 'capabilities');
      return;
    case 'ForwardCacheOk':
      w.u8(m.value === undefined ? 0 : 1, 'present');
      if (m.value !== undefined) w.blob(m.value, 'value');
      return;
    default:
      writeReplicationBody(w, m);
  }
}

/** Bodies of the replication and fencing kinds. */
function writeReplicationBody(w: BodyWriter, m: Encodable): void {
  switch (m.kind) {
    case 'ReplicateOk':
      w.u64(m.durableOffset, 'durable_offset');
      return;
    case 'ReplicateError':
      w.u16(m.code, 'code');
      w.u64(m.expectedOffset, 'expected_offset');
      w.str(m.detail, 'detail');
      return;
    case 'ReplicateRebuild':
    case 'ReplicateTrim':
      w.shardRef(m.shard);
      w.u8(m.log, 'log');
      w.u64(m.baseOffset, 'base_offset');
      return;
    case 'Fence':
      w.shardRef(m.shard);
      w.u8(m.log, 'log');
      return;
    case 'ReplicateCommittedRecords':
      w.shardRef(m.shard);
      w.u64(m.firstOffset, 'first_offset');
      w.u64(m.checksum, 'checksum');
      w.u64(m.commitOffset, 'commit_offset');
      w.payloads(m.payloads);
      return;
    case 'ReplicateMarkedRecords':
      if (m.marks.length !== m.payloads.length)
        throw new FieldRangeError('marks', 'one mark per payload');
      w.shardRef(m.shard);
      w.u64(m.firstOffset, 'first_offset');
      w.u64(m.checksum, 'checksum');
      w.payloads(m.payloads);
      for (const mark of m.marks) w.u8(mark, 'mark');
      return;
    case 'FenceOk':
      w.u64(m.logEnd, 'log_end');
      w.u64(m.commitOffset, 'commit_offset');
      w.u64(m.lastGeneration, 'last_generation');
      return;
    case 'ReplicateFetch':
      w.shardRef(m.shard);
      w.u8(m.log, 'log');
      w.u64(m.fromOffset, 'from_offset');
      w.u32(m.maxBytes, 'max_bytes');
      return;
    default:
      if ('firstOffset' in m && 'payloads' in m) {
        w.shardRef(m.shard);
        w.u64(m.firstOffset, 'first_offset');
        w.u64(m.checksum, 'checksum');
        w.payloads(m.payloads);
      } else if ('baseOffset' in m) {
        w.shardRef(m.shard);
        w.u64(m.baseOffset, 'base_offset');
      }
  }
}

/** Decodes a frame's body by its kind. Throws only `WireError`. */
export function decodeInternalMessage(frame: InternalFrame): InternalMessage {
  const name = NAMES.get(frame.kind);
  const r = new BodyReader(frame.body, name ?? `internal kind ${frame.kind}`);
  if (r.remaining < 8) {
    throw new TruncatedError('internal body correlation_id', 0, 8, r.remaining);
  }
  const correlationId = r.u64('correlation_id');
  if (name === undefined) return { kind: 'Unknown', code: frame.kind, correlationId };
  const message = readBody(r, name, correlationId);
  r.end();
  return message;
}

function readBody(r: BodyReader, kind: InternalKindName, correlationId: number): InternalMessage {
  switch (kind) {
    case 'ForwardPublish':
    case 'AuthorizedForwardPublish': {
      const shard = r.shardRef();
      const ack = enumByte(r.u8('ack'), 2, 'forward ack');
      const payloads = r.payloads();
      const m: ForwardPublishBody = { kind, correlationId, shard, ack, payloads };
      if (kind === 'AuthorizedForwardPublish') m.credential = r.credential();
      return m;
    }
    case 'ForwardCacheOp':
    case 'AuthorizedForwardCacheOp': {
      const shard = r.shardRef();
      const op = r.u8('op');
      if (op < 1 || op > 5) throw new InvalidEnumError('cache op', op);
      const key = r.str('key');
      const ttlMs = r.u64('ttl_ms');
      const value = r.blob('value');
      const m: ForwardCacheOpBody = { kind, correlationId, shard, op, key, ttlMs, value };
      if (kind === 'AuthorizedForwardCacheOp') m.credential = r.credential();
      return m;
    }
    case 'ForwardPublishOk': {
      const firstOffset = r.u64('first_offset');
      return { kind, correlationId, firstOffset, lastOffset: r.u64('last_offset') };
    }
    case 'ForwardPublishError':
    case 'ForwardCacheError':
      return { kind, correlationId, code: r.u16('code'), detail: r.str('detail') };
    case 'NotLeader': {
      const nodeId = r.str('node_id');
      const advertiseAddr = r.str('advertise_addr');
      return { kind, correlationId, nodeId, advertiseAddr, generation: r.u64('generation') };
    }
    case 'Hello':
    case 'HelloOk':
      return { kind, correlationId, nodeId: r.str('node_id') };
    case 'HelloCapable':
    case 'HelloCapableOk': {
      const nodeId = r.str('node_id');
      return { kind, correlationId, nodeId, capabilities: r.u64Big('capabilities') };
    }
    case 'ForwardCacheOk': {
      const present = enumByte(r.u8('present'), 1, 'present');
      return present ? { kind, correlationId, value: r.blob('value') } : { kind, correlationId };
    }
    default:
      return readReplicationBody(r, kind, correlationId);
  }
}

/** Bodies of the replication and fencing kinds. */
function readReplicationBody(
  r: BodyReader,
  kind: InternalKindName,
  correlationId: number,
): InternalMessage {
  switch (kind) {
    case 'ReplicateOk':
      return { kind, correlationId, durableOffset: r.u64('durable_offset') };
    case 'ReplicateError': {
      const code = r.u16('code');
      const expectedOffset = r.u64('expected_offset');
      return { kind, correlationId, code, expectedOffset, detail: r.str('detail') };
    }
    case 'ReplicateRebuild':
    case 'ReplicateTrim': {
      const shard = r.shardRef();
      const log = readLog(r);
      return { kind, correlationId, shard, log, baseOffset: r.u64('base_offset') };
    }
    case 'Fence':
      return { kind, correlationId, shard: r.shardRef(), log: readLog(r) };
    case 'FenceOk': {
      const logEnd = r.u64('log_end');
      const commitOffset = r.u64('commit_offset');
      return {
        kind,
        correlationId,
        logEnd,
        commitOffset,
        lastGeneration: r.u64('last_generation'),
      };
    }
    case 'ReplicateFetch': {
      const shard = r.shardRef();
      const log = readLog(r);
      const fromOffset = r.u64('from_offset');
      return { kind, correlationId, shard, log, fromOffset, maxBytes: r.u32('max_bytes') };
    }
    case 'ReplicateCommittedRecords': {
      const shard = r.shardRef();
      const firstOffset = r.u64('first_offset');
      const checksum = r.u64('checksum');
      const commitOffset = r.u64('commit_offset');
      const payloads = r.payloads();
      return { kind, correlationId, shard, firstOffset, checksum, commitOffset, payloads };
    }
    case 'ReplicateMarkedRecords':
      return readMarkedRecords(r, correlationId);
    case 'ReplicateRecords':
    case 'ReplicateCacheRecords':
    case 'ReplicateGroupRecords':
    case 'ReplicateDeadLetterRecords':
    case 'ReplicateCounterRecords': {
      const shard = r.shardRef();
      const firstOffset = r.u64('first_offset');
      const checksum = r.u64('checksum');
      return { kind, correlationId, shard, firstOffset, checksum, payloads: r.payloads() };
    }
    case 'ReplicateBootstrap':
    case 'ReplicateCacheBootstrap':
    case 'ReplicateGroupBootstrap':
    case 'ReplicateDeadLetterBootstrap':
    case 'ReplicateCounterBootstrap':
      return { kind, correlationId, shard: r.shardRef(), baseOffset: r.u64('base_offset') };
    default:
      // Every other name is handled by readBody; reaching here is a bug in this file.
      return assertNever(kind);
  }
}

function assertNever(kind: string): never {
  assert(false, `internal kind ${kind} has no reader`);
}

function enumByte(value: number, max: number, what: string): number {
  if (value > max) throw new InvalidEnumError(what, value);
  return value;
}

/** Kind 25: a records body, then one known mark byte per payload. */
function readMarkedRecords(r: BodyReader, correlationId: number): InternalMessage {
  const shard = r.shardRef();
  const firstOffset = r.u64('first_offset');
  const checksum = r.u64('checksum');
  const payloads = r.payloads();
  const marks = new Uint8Array(payloads.length);
  for (let i = 0; i < marks.length; i++) marks[i] = markByte(r.u8('mark'));
  const kind = 'ReplicateMarkedRecords';
  return { kind, correlationId, shard, firstOffset, checksum, payloads, marks };
}

function markByte(mark: number): number {
  if (mark !== REPLICATE_MARK.None && mark !== REPLICATE_MARK.GenerationStart)
    throw new InvalidEnumError('replicate mark', mark);
  return mark;
}

function readLog(r: BodyReader): number {
  const log = r.u8('log');
  if (log < 1 || log > 5) throw new InvalidEnumError('replica log', log);
  return log;
}
