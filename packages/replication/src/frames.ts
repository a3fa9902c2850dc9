/** The FLXI request frames a leader ships (one place builds them: the shipper and its tests). */
import { type ShardRef, batchChecksum, encodeInternalMessage } from '@felix/wire';

/** Records `payloads` at the leader's offsets from `first`, with their batch checksum. */
export function recordsFrame(
  correlationId: number,
  shard: ShardRef,
  first: number,
  payloads: Uint8Array[],
): Uint8Array {
  return encodeInternalMessage({
    kind: 'ReplicateRecords',
    correlationId,
    shard,
    firstOffset: first,
    checksum: batchChecksum(payloads),
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
    checksum: batchChecksum(payloads),
    commitOffset,
    payloads,
  });
}

/** An offer to start an empty follower at the leader's oldest retained offset. */
export function bootstrapFrame(correlationId: number, shard: ShardRef, base: number): Uint8Array {
  return encodeInternalMessage({
    kind: 'ReplicateBootstrap',
    correlationId,
    shard,
    baseOffset: base,
  });
}
