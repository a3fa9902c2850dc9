/** What the cache, counter and group handles need from the client: the live connection. */
import { retryWindowMs } from '../cluster/routing.js';
import { FeatureUnsupportedError } from '../errors.js';
import { asBytes } from '../util/bytes.js';
import { illFormed } from '../util/well-formed.js';
import { FAILOVER_RETRY_BASE_MS, FAILOVER_RETRY_DELAY_MS_MAX } from '../limits.js';
import { backoffDelayMs, sleep } from '../util/backoff.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { has } from '../protocol/negotiation.js';
import type { StatusEvent } from '../status.js';
import type { KeyRoute } from './key-routes.js';

export interface ProjectionHost {
  /** The live connection, waiting through a reconnect (bounded by the request timeout). */
  connection(signal?: AbortSignal): Promise<BrokerConnection>;
  /** The live connection when there is one now (no wait, no await); else undefined. */
  live?(): BrokerConnection | undefined;
  readonly closed: boolean;
  /** Aborted when the client closes: a wait of a reader's own (a consume loop's backoff) ends. */
  readonly closing?: AbortSignal;
  /** Cluster routing (absent, or inactive against a broker without discovery: `connection`). */
  route?: ProjectionRoute;
  /** The routing of a cache's single-key requests by key (key-routes.ts), when the client has
   *  a router. */
  keys?: KeyRoute;
  /** Hands a status event to the client's `status()` listeners (a consume loop's retries). */
  emit?(event: StatusEvent): void;
}

/** What a watch or a group needs of the client's router (cluster/router.ts). */
export interface ProjectionRoute {
  readonly active: boolean;
  connectionFor(
    kind: 'stream' | 'cache',
    name: string,
    shard: number,
    signal?: AbortSignal,
  ): Promise<BrokerConnection>;
  widthOf(
    kind: 'stream' | 'cache',
    name: string,
    signal?: AbortSignal,
  ): Promise<number | undefined>;
  refused(kind: 'stream' | 'cache', name: string, shard: number, err: unknown, from: string): void;
  /** How long a long-lived reader keeps looking for a lost owner (FAILOVER_DEADLINE_MS_DEFAULT). */
  readonly deadlineMs: number;
}

/**
 * The failover bookkeeping of one long-lived reader (a cache watch): whether a failure is
 * retried on the shard's owner as next known (routing on, not fatal, within the deadline since
 * the reader last worked), after a jittered backoff.
 */
export class FailoverClock {
  private failingSinceMs: number | undefined;
  private attempts = 0;

  constructor(private readonly route: ProjectionRoute | undefined) {}

  /** The reader worked again: the deadline starts over. */
  ok(): void {
    this.failingSinceMs = undefined;
    this.attempts = 0;
  }

  /** True (after the backoff) when `err` is retried; the owner it points at is learned. */
  async retries(
    err: unknown,
    where: { kind: 'stream' | 'cache'; name: string; shard: number | undefined; from: string },
    signal?: AbortSignal,
  ): Promise<boolean> {
    const route = this.route;
    if (route === undefined || !route.active) return false;
    const now = Date.now();
    this.failingSinceMs ??= now;
    const windowMs = retryWindowMs(err, route.deadlineMs);
    if (windowMs === 0 || now - this.failingSinceMs > windowMs) return false;
    if (where.shard !== undefined)
      route.refused(where.kind, where.name, where.shard, err, where.from);
    const delayMs = backoffDelayMs(this.attempts++, {
      baseMs: FAILOVER_RETRY_BASE_MS,
      maxMs: FAILOVER_RETRY_DELAY_MS_MAX,
    });
    // An abort ends the wait early; the caller then sees its signal.
    await sleep(delayMs, signal).catch(() => undefined);
    return true;
  }
}

/** Throws FeatureUnsupportedError unless the broker advertised `bit`. */
export function requireFeature(bc: BrokerConnection, bit: number, name: string): void {
  if (!has(bc.negotiated.features, bit)) throw new FeatureUnsupportedError(name);
}

const UTF8 = new TextEncoder();

/** `data` as bytes: a string as its UTF-8, refused (naming `what`) when it holds a lone
 *  surrogate, which UTF-8 would carry as U+FFFD (util/well-formed.ts). */
export function bytesOf(data: Uint8Array | string, what: string): Uint8Array {
  if (typeof data !== 'string') return asBytes(data);
  if (!data.isWellFormed()) throw illFormed(what);
  return UTF8.encode(data);
}

/** A string already checked to be well-formed, as its UTF-8 (the publish's quick path). */
export function wellFormedBytes(data: string): Uint8Array {
  return UTF8.encode(data);
}
