/**
 * A follower's checks of a replication batch before its records touch the log (pure), and the
 * answer its append result becomes. Order matters: a damaged batch is refused before its
 * generation is believed; an older generation than this replica accepted means the sender was
 * deposed (`FencedEpoch`, it stops); a newer one than the follower's assignment names means the
 * follower has not heard of that leader yet (`StaleRoute`, the sender retries).
 */
import type { FollowerAppendResult } from '@felix/storage';
import { INTERNAL_ERROR, type InternalMessage } from '@felix/wire';
import { replicaBatchChecksum } from '../checksum.js';

export type BatchVerdict =
  /** Store the records; first durably raise the accepted generation when `raise` is set. */
  { kind: 'accept'; raise: boolean } | { kind: 'refuse'; code: number; detail: string };

export interface ReplicaView {
  /** The highest generation this replica accepted (its `replica` file). */
  accepted: number;
  /** The generation of the shard's assignment as this follower knows it. */
  assigned: number;
}

export function checkBatch(
  batch: {
    generation: number;
    checksum: number;
    payloads: readonly Uint8Array[];
    /** A marked batch's marks (fed to its checksum after the payloads). */
    marks?: Uint8Array | undefined;
  },
  replica: ReplicaView,
): BatchVerdict {
  if (replicaBatchChecksum(batch.payloads, batch.marks) !== batch.checksum)
    return { kind: 'refuse', code: INTERNAL_ERROR.Malformed, detail: 'batch checksum mismatch' };
  return checkGeneration(batch.generation, replica);
}

/** The generation checks alone (a bootstrap carries no records to checksum). */
export function checkGeneration(generation: number, replica: ReplicaView): BatchVerdict {
  const batch = { generation };
  if (batch.generation < replica.accepted)
    return {
      kind: 'refuse',
      code: INTERNAL_ERROR.FencedEpoch,
      detail: `generation ${batch.generation} is older than the accepted ${replica.accepted}`,
    };
  if (batch.generation > replica.assigned)
    return {
      kind: 'refuse',
      code: INTERNAL_ERROR.StaleRoute,
      detail: `generation ${batch.generation} is newer than the assigned ${replica.assigned}`,
    };
  return { kind: 'accept', raise: batch.generation > replica.accepted };
}

/** The answer to a batch the follower stored (or found a gap or a conflict for). */
export function answerFor(
  correlationId: number,
  result: FollowerAppendResult,
  durableOffset: number,
): InternalMessage {
  if (result.kind === 'appended') return { kind: 'ReplicateOk', correlationId, durableOffset };
  if (result.kind === 'gap')
    return {
      kind: 'ReplicateError',
      correlationId,
      code: INTERNAL_ERROR.LogGap,
      expectedOffset: result.expected,
      detail: `expected offset ${result.expected}`,
    };
  return {
    kind: 'ReplicateError',
    correlationId,
    code: INTERNAL_ERROR.LogConflict,
    expectedOffset: result.at,
    detail: `held record ${result.at} differs`,
  };
}
