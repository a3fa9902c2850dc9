/**
 * Routing of one cache's single-key requests (get, put, delete; its counters' get and add) in a
 * cluster: each goes to the owner of the key's shard (cacheShardOf, the broker's mapping), a
 * `not_leader` answer is followed to the owner it names (the router's redirect walk), and a
 * refusal that did nothing is sent again after a backoff within the request timeout, so a call
 * caught by a failover answers from the promoted leader. A write whose outcome is unknown is
 * never sent again. A handle keeps the owners' connections it found per shard until the
 * client's owner map changes, so a call on a warm handle costs one shard computation and one
 * array read.
 */
import type { ClusterRouter } from '../cluster/router.js';
import { cacheShardOf, retryKindOf, retryWindowMs } from '../cluster/routing.js';
import { NotLeaderError } from '../errors.js';
import {
  FAILOVER_RETRY_BASE_MS,
  KEYED_ROUTE_ATTEMPTS_MAX,
  PUBLISH_RETRY_DELAY_MS_MAX,
} from '../limits.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { backoffDelayMs, sleep } from '../util/backoff.js';

/** What single-key routing needs of the client's router (cluster/router.ts), for caches. */
export interface KeyRoute {
  readonly active: boolean;
  /** Changes whenever the owner map does (OwnerBook.version). */
  readonly ownersVersion: number;
  /** Shards of the cache as known now (undefined: not asked yet). */
  widthNow(name: string): number | undefined;
  /** Shards of the cache, asked of the entry broker when not known. */
  widthOf(name: string, signal?: AbortSignal): Promise<number | undefined>;
  /** The open connection to a shard's owner now, if any. */
  liveFor(name: string, shard: number): BrokerConnection | undefined;
  /** `call` on the shard's owner, redirects followed (never back to a broker in `tried`). */
  request<T>(
    name: string,
    shard: number,
    call: (bc: BrokerConnection) => Promise<T>,
    signal: AbortSignal | undefined,
    tried: readonly string[],
  ): Promise<T>;
  /** A shard's request was refused by `from`: learn the owner it names, or ask again. */
  refused(name: string, shard: number, err: unknown, from: string): void;
  /** The window in which a refused call is sent again (the client's requestTimeoutMs). */
  readonly requestTimeoutMs: number;
}

/** The client router's single-key routing for caches (a call refused inside the request
 *  timeout is sent again). */
export function cacheKeyRoute(router: ClusterRouter, requestTimeoutMs: number): KeyRoute {
  return {
    get active() {
      return router.active;
    },
    get ownersVersion() {
      return router.ownersVersion;
    },
    widthNow: (name) => router.widthNow('cache', name),
    widthOf: (name, signal) => router.widthOf('cache', name, signal),
    liveFor: (name, shard) => router.liveFor('cache', name, shard),
    request: (name, shard, call, signal, tried) =>
      router.request('cache', name, shard, call, signal, tried),
    refused: (name, shard, err, from) => router.refused('cache', name, shard, err, from),
    requestTimeoutMs,
  };
}

/** A call that failed: its error, and the broker that answered it (or '' when unknown). */
export interface Refused {
  err: unknown;
  from: string;
}

/**
 * Whether a call that failed with `err` may be sent again, `elapsedMs` after it started: never
 * once its outcome is unknown or it is fatal; a write only when its refusal says nothing was
 * applied (a redirect or a busy broker), which is also all that a read retries; within the
 * failure's retry window (routing.ts, the request timeout) and KEYED_ROUTE_ATTEMPTS_MAX.
 */
export function mayResendKeyed(
  err: unknown,
  attempt: number,
  elapsedMs: number,
  timeoutMs: number,
): boolean {
  if (attempt >= KEYED_ROUTE_ATTEMPTS_MAX) return false;
  const kind = retryKindOf(err);
  if (kind !== 'redirect' && kind !== 'retry_after') return false;
  return elapsedMs < retryWindowMs(err, timeoutMs);
}

export class KeyRoutes {
  private version = -1;
  private width: number | undefined;
  /** The owner's connection per shard, as last found (checked for loss at each use). */
  private conns: Array<BrokerConnection | undefined> = [];

  constructor(
    private readonly route: KeyRoute,
    private readonly name: string,
    private readonly closed: () => boolean,
  ) {}

  get active(): boolean {
    return this.route.active;
  }

  /** The open connection to the owner of `key`'s shard now, without waiting (undefined: none
   *  open, or the cache's width not known yet: take `run`). */
  now(key: string): BrokerConnection | undefined {
    if (this.route.ownersVersion !== this.version) this.reset();
    const width = this.width;
    if (width === undefined) return undefined;
    const shard = cacheShardOf(key, width);
    let bc = this.conns[shard];
    if (bc === undefined || bc.isLost) {
      bc = this.route.liveFor(this.name, shard);
      this.conns[shard] = bc;
    }
    return bc;
  }

  /** The owner map changed: what this handle found is looked up again. */
  private reset(): void {
    this.version = this.route.ownersVersion;
    this.width = this.route.widthNow(this.name);
    this.conns = [];
  }

  /**
   * `call` on the owner of `key`'s shard, following `not_leader` and sending it again after a
   * refusal that did nothing (mayResendKeyed). `failed`: a first attempt already refused (the
   * caller's own, on the connection `now` gave), `startedMs` when it started.
   */
  async run<T>(
    key: string,
    call: (bc: BrokerConnection) => Promise<T>,
    signal: AbortSignal | undefined,
    failed?: Refused,
    startedMs = Date.now(),
  ): Promise<T> {
    let last = failed;
    for (let attempt = 0; ; attempt++) {
      const tried =
        last === undefined ? [] : await this.afterRefusal(key, last, attempt, signal, startedMs);
      let used: BrokerConnection | undefined;
      try {
        const width = await this.route.widthOf(this.name, signal);
        // Unknown width (routing went off meanwhile): the broker the router takes answers.
        const shard = cacheShardOf(key, width ?? 1);
        const out = await this.route.request(
          this.name,
          shard,
          (bc) => {
            used = bc;
            return call(bc);
          },
          signal,
          tried,
        );
        // The broker that answered serves the shard: later calls go straight there.
        if (this.version === this.route.ownersVersion && used !== undefined)
          this.conns[shard] = used;
        return out;
      } catch (err) {
        last = { err, from: used?.server ?? '' };
      }
    }
  }

  /** Throws `last.err` unless it may be sent again; else learns what the refusal says of the
   *  owner, waits a backoff unless a `not_leader` named where to go, and answers the brokers
   *  the next walk must not go back to. */
  private async afterRefusal(
    key: string,
    last: Refused,
    attempt: number,
    signal: AbortSignal | undefined,
    startedMs: number,
  ): Promise<string[]> {
    const elapsedMs = Date.now() - startedMs;
    if (this.closed() || !mayResendKeyed(last.err, attempt, elapsedMs, this.route.requestTimeoutMs))
      throw last.err;
    const width = this.route.widthNow(this.name);
    if (width !== undefined)
      this.route.refused(this.name, cacheShardOf(key, width), last.err, last.from);
    return resendPause(last, attempt, elapsedMs, this.route.requestTimeoutMs, signal);
  }
}

/**
 * Before a call refused with nothing applied is sent again (the caller decided it may be): the
 * brokers its next walk must not go back to. A `not_leader` from a broker just asked is followed
 * at once (its walk goes on); any other refusal waits a jittered backoff first, never past the
 * failure's retry window (`timeoutMs` from its start, `elapsedMs` ago).
 */
export async function resendPause(
  last: Refused,
  attempt: number,
  elapsedMs: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  if (last.err instanceof NotLeaderError && last.from !== '') return [last.from];
  const delayMs = backoffDelayMs(attempt, {
    baseMs: FAILOVER_RETRY_BASE_MS,
    maxMs: PUBLISH_RETRY_DELAY_MS_MAX,
  });
  // Never past the window: a delay drawn beyond it held the caller past its timeout.
  const leftMs = retryWindowMs(last.err, timeoutMs) - elapsedMs;
  await sleep(Math.max(0, Math.min(delayMs, leftMs)), signal);
  return [];
}
