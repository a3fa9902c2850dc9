/** The FLXI request frames a leader ships (one place builds them: the shipper and its tests),
 *  each under the kinds of the log it carries (a stream's records by default). */
import { FLAG_GENERATION_START } from '@felix/storage';
import {
  type InternalMessage,
  REPLICATE_MARK,
  type ShardRef,
  encodeInternalMessage,
} from '@felix/wire';
import { replicaBatchChecksum } from './checksum.js';
import { REPLICA_LOGS, type ReplicaLogKind } from './log-kind.js';

type RecordsMessage = Exclude<
  Extract<InternalMessage, { checksum: number }>,
  { kind: 'ReplicateCommittedRecords' | 'ReplicateMarkedRecords' }
>;
type BootstrapMessage = Extract<InternalMessage, { baseOffset: number; log?: never }>;

/** Records `payloads` of `log` at the leader's offsets from `first`, with their batch checksum. */
export function recordsFrame(
  correlationId: number,
  shard: ShardRef,
  first: number,
  payloads: Uint8Array[],
  log: ReplicaLogKind = 'stream',
): Uint8Array {
  return encodeInternalMessage({
    kind: REPLICA_LOGS[log].records as RecordsMessage['kind'],
    correlationId,
    shard,
    firstOffset: first,
    checksum: replicaBatchChecksum(payloads),
    payloads,
  });
}

/** Records `payloads` at the leader's offsets from `first` (none: the mark alone), with the
 *  leader's commit mark (a quorum shard). */
export function committedFrame(
  correlationId: number,
  shard: ShardRef,
  first: number,
  payloads: Uint8Array[],
  commitOffset: number,
): Uint8Array {
  return encodeInternalMessage({
    kind: 'ReplicateCommittedRecords',
    correlationId,
    shard,
    firstOffset: first,
    checksum: replicaBatchChecksum(payloads),
    commitOffset,
    payloads,
  });
}

/** Stream records `payloads` from `first` with one mark byte each (REPLICATE_MARK): a batch
 *  holding a generation-start record travels this way (kind 25), without the commit mark. */
export function markedFrame(
  correlationId: number,
  shard: ShardRef,
  first: number,
  payloads: Uint8Array[],
  marks: Uint8Array,
): Uint8Array {
  return encodeInternalMessage({
    kind: 'ReplicateMarkedRecords',
    correlationId,
    shard,
    firstOffset: first,
    checksum: replicaBatchChecksum(payloads, marks),
    payloads,
    marks,
  });
}

/** An offer to start an empty follower of `log` at the leader's oldest retained offset. */
export function bootstrapFrame(
  correlationId: number,
  shard: ShardRef,
  base: number,
  log: ReplicaLogKind = 'stream',
): Uint8Array {
  return encodeInternalMessage({
    kind: REPLICA_LOGS[log].bootstrap as BootstrapMessage['kind'],
    correlationId,
    shard,
    baseOffset: base,
  });
}

/** Tells a follower of a riding `log` the leader's base: it may delete whole segments below it
 *  (kind 40, a Felix extension). */
export function trimFrame(
  correlationId: number,
  shard: ShardRef,
  log: ReplicaLogKind,
  base: number,
): Uint8Array {
  return logBaseFrame('ReplicateTrim', correlationId, shard, log, base);
}

/** Asks a follower halted `needs_bootstrap` on `log` to discard its copy, every record of which
 *  lies below the leader's `base`, and start there (kind 24, the only discarding request). */
export function rebuildFrame(
  correlationId: number,
  shard: ShardRef,
  log: ReplicaLogKind,
  base: number,
): Uint8Array {
  return logBaseFrame('ReplicateRebuild', correlationId, shard, log, base);
}

/** A request naming one log of a shard and a base offset of it (a trim, a rebuild). */
function logBaseFrame(
  kind: 'ReplicateTrim' | 'ReplicateRebuild',
  correlationId: number,
  shard: ShardRef,
  log: ReplicaLogKind,
  base: number,
): Uint8Array {
  return encodeInternalMessage({
    kind,
    correlationId,
    shard,
    log: REPLICA_LOGS[log].wire,
    baseOffset: base,
  });
}

/** The mark byte of a stored record by its flags (a generation start, or none). */
export function markOf(flags: number): number {
  return (flags & FLAG_GENERATION_START) !== 0
    ? REPLICATE_MARK.GenerationStart
    : REPLICATE_MARK.None;
}
