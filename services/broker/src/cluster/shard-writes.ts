/**
 * Which requests naming a shard write to its logs, as the shard table gates them: a cache
 * write or a group's is refused while the broker's lease is lapsed, and every one of them is
 * refused `draining` (retryable, as publishes are) once the broker's stop began, so its SIGTERM
 * hand-off finds its followers level instead of chasing writes it keeps accepting
 * (docs/replication.md, "Hand-off on SIGTERM"); the client retries on the shard's next owner.
 */
import { type Refusal, drainingRefusal } from '../session/refusal.js';

/** The cache requests that write (the cache and counter logs). */
export const CACHE_WRITES: ReadonlySet<string> = new Set([
  'cache_put',
  'cache_delete',
  'counter_add',
]);

/** The group requests that change a group's claims, cursor or dead letters. */
export const GROUP_WRITES: ReadonlySet<string> = new Set([
  'group_poll',
  'group_ack',
  'group_ack_batch',
  'group_nack',
  'group_nack_batch',
  'group_extend',
  'group_dead_letter',
  'group_discard',
  'group_redrive',
  'group_seek',
  'group_delete',
]);

/** The `draining` refusal of a write while the broker stops, or null. */
export function drainingWrite(draining: boolean, type: string): Refusal | null {
  return draining && (CACHE_WRITES.has(type) || GROUP_WRITES.has(type)) ? drainingRefusal() : null;
}
