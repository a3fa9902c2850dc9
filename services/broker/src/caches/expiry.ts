/**
 * The cache TTL expiry pass, run by the leader of each log-backed cache shard: on a timer
 * (`broker.cache_expiry_interval_ms`) it deletes keys whose expiry has passed, at most
 * CACHE_EXPIRY_DELETES_PER_PASS_MAX per pass over every shard it leads, as appended deletes
 * (LogCache.expireDue), so a watcher sees an expiry as a delete without anyone reading the key.
 * A pass never overlaps the previous one. A broker without durable storage runs the pass over
 * its in-memory shards instead (EphemeralCache.expireDue): there a key is otherwise removed only
 * when a read meets it expired, so keys put with a TTL and never read again were held for good
 * (120,000 4 KiB session keys, all expired, kept 550 MB).
 */
import type { Logger } from 'pino';
import type { CacheConfig } from '../config/types.js';
import {
  CACHE_EXPIRY_DELETES_PER_PASS_MAX,
  CACHE_MEMORY_EXPIRY_VISITS_PER_PASS_MAX,
} from '../limits.js';
import type { CacheService } from './cache-service.js';

/** Whether this broker leads the cache shard (always, outside control-plane mode). */
export type LeadsCacheShard = (cache: CacheConfig, shard: number) => boolean;

export class CacheExpiry {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  /** Where the next pass starts in the list of open shards (round robin). */
  private nextStart = 0;

  constructor(
    private readonly caches: CacheService,
    private readonly leads: LeadsCacheShard,
    private readonly log: Logger,
  ) {}

  start(intervalMs: number): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      if (this.running === null) void this.pass();
    }, intervalMs);
    this.timer.unref();
  }

  /** One pass; answers how many keys it deleted. */
  pass(): Promise<number> {
    if (this.running !== null) return this.running;
    const run = this.expire().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  private async expire(): Promise<number> {
    if (!this.caches.durable) return this.expireInMemory();
    let deleted = 0;
    // Each pass starts one shard further on: when one shard's expiries fill a pass's budget,
    // the shards after it in the list still get their turn.
    const shards = [...this.caches.openLogShards()];
    const from = shards.length === 0 ? 0 : this.nextStart++ % shards.length;
    for (const { cache, shard } of [...shards.slice(from), ...shards.slice(0, from)]) {
      if (deleted >= CACHE_EXPIRY_DELETES_PER_PASS_MAX) break;
      if (!this.leads(cache, shard)) continue;
      const opened = this.caches.openedLog(cache, shard);
      if (opened === undefined) break; // closing
      try {
        const logCache = await opened;
        // A quorum shard without a majority holds its deletes: the pass moves on after the
        // quorum timeout (the deletes still commit in order) instead of stalling every shard.
        const left = CACHE_EXPIRY_DELETES_PER_PASS_MAX - deleted;
        deleted += await this.caches.acked('cache', cache, shard, () => logCache.expireDue(left));
      } catch (err) {
        // A closing or failed shard, or a quorum wait that timed out: the next pass tries again.
        this.log.debug({ err, cache: cache.name, shard }, 'cache expiry pass skipped a shard');
      }
    }
    return deleted;
  }

  /**
   * The in-memory shards' pass: at most CACHE_MEMORY_EXPIRY_VISITS_PER_PASS_MAX keys looked at,
   * starting one shard further on each pass so that a big shard cannot keep the others waiting.
   */
  private async expireInMemory(): Promise<number> {
    const shards = [...this.caches.memoryShards()];
    const from = shards.length === 0 ? 0 : this.nextStart++ % shards.length;
    let budget = CACHE_MEMORY_EXPIRY_VISITS_PER_PASS_MAX;
    let deleted = 0;
    for (const shard of [...shards.slice(from), ...shards.slice(0, from)]) {
      if (budget <= 0) break;
      try {
        const done = shard.expireDue(budget);
        budget -= done.visited;
        deleted += done.deleted;
      } catch (err) {
        // A shard closed meanwhile (its cache was deleted): nothing of it is left to expire.
        this.log.debug({ err }, 'cache expiry pass skipped an in-memory shard');
      }
    }
    return deleted;
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    // A failed pass was logged per shard; stopping only waits for it to end.
    await this.running?.catch(() => undefined);
  }
}
