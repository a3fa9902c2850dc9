/** Errors raised by @felix/replication. The shipping protocol's refusals are answers
 *  (ReplicateError codes), not exceptions; these are failures of the caller's input. */
import { FelixError } from '@felix/common';

/** Base of every replication failure. */
export abstract class ReplicationError extends FelixError {}

/** A commit mark was asked over more members than REPLICA_SET_SIZE_MAX, or fewer than one. */
export class InvalidReplicaSetError extends ReplicationError {
  readonly code = 'FELIX_REPLICATION_INVALID_REPLICA_SET';
  constructor(readonly size: number) {
    super(`a replica set of ${size} members is outside 1..16`);
  }
}

/** A peer sent bytes that are not one whole FLXI request: the caller closes its link. */
export class MalformedPeerFrameError extends ReplicationError {
  readonly code = 'FELIX_REPLICATION_MALFORMED_FRAME';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`malformed peer frame: ${detail}`, options);
  }
}

/** A promoted leader could not take the furthest tail of its fenced majority: the source
 *  refused or failed, or sent something other than the records asked for. The open is retried. */
export class TailFetchError extends ReplicationError {
  readonly code = 'FELIX_REPLICATION_TAIL_FETCH_FAILED';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`taking the furthest tail failed: ${detail}`, {
      ...options,
      retry: 'retry_after_backoff',
    });
  }
}
