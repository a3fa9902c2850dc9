/**
 * Why shards this node leads are not served: an open that failed (tried again only at a newer
 * generation) or one waiting to be tried again (a fence short of a majority of the replica
 * set). Each refusal of such a shard says which, so a client is not told "still opening" of a
 * quorum set that lost its majority.
 */
import type { Refusal } from '../session/refusal.js';
import { unservedRefusal } from './shard-refs.js';

export class OpenTroubles {
  private readonly failed = new Map<string, { generation: number; reason: string }>();
  private readonly waiting = new Map<string, string>();

  /** The open at `generation` failed for `reason`. */
  fail(key: string, generation: number, reason: string): void {
    this.failed.set(key, { generation, reason });
  }

  /** The failed open of `key`, if any. */
  failure(key: string): { generation: number; reason: string } | undefined {
    return this.failed.get(key);
  }

  /** The open waits, for `why`, and is tried again later. */
  wait(key: string, why: string): void {
    this.waiting.set(key, why);
  }

  /** `leads` as given, having forgotten `key` when this node does not lead it now (a note of
   *  an earlier generation would mislead a refusal once it leads again). */
  keptIf(leads: boolean, key: string): boolean {
    if (!leads) this.clear(key);
    return leads;
  }

  /** Opened, released or gone: nothing to say of it any more. */
  clear(key: string): void {
    this.failed.delete(key);
    this.waiting.delete(key);
  }

  /** The refusal of a request for `key`, a shard no node serves now. */
  refusal(where: string, reason: string, key: string): Refusal {
    return unservedRefusal(where, reason, this.failed.get(key), this.waiting.get(key));
  }
}
