/** What the cache, counter and group handles need from the client: the live connection. */
import { FeatureUnsupportedError } from '../errors.js';
import { eitherSignal, readerFailureOf } from '../reader-retry.js';
import { asBytes } from '../util/bytes.js';
import { illFormed } from '../util/well-formed.js';
import {
  FAILOVER_RETRY_BASE_MS,
  FAILOVER_RETRY_DELAY_MS_MAX,
  NOT_FOUND_RETRY_MS,
  RESUBSCRIBE_BUSY_DELAY_MS_MAX,
} from '../limits.js';
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
  /** What the client closed itself with (its reconnect gave up: ConnectError), which a watch or
   *  a consume loop ends with; undefined while open and after the caller's `close()`. */
  readonly closedWith?: Error | undefined;
  /** Aborted when the client closes: a wait of a reader's own (a consume loop's backoff) ends. */
  readonly closing?: AbortSignal;
  /** Cluster routing (absent, or inactive against a broker without discovery: `connection`). */
  route?: ProjectionRoute;
  /** The routing of a cache's single-key requests by key (key-routes.ts), when the client has
   *  a router. */
  keys?: KeyRoute;
  /** Hands a status event to the client's `status()` listeners (a consume loop's retries). */
  emit?(event: StatusEvent): void;
  /** Work a consume loop's end started (handing back what it held): `close()` lets it reach the
   *  broker first, within CLOSE_HAND_BACK_WAIT_MS_MAX. */
  leaving?(work: Promise<unknown>): void;
}

/** What a watch or a group needs of the client's router (cluster/router.ts). */
export interface ProjectionRoute {
  readonly active: boolean;
  /** The client's request timeout: how long a refused write may be sent again (settle-again.ts). */
  readonly requestTimeoutMs: number;
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
  /** Runs `call` on the shard's owner, following `not_leader` redirects (router.request);
   *  `tried`: brokers that refused this request already. */
  request<T>(
    kind: 'stream' | 'cache',
    name: string,
    shard: number,
    call: (conn: BrokerConnection) => Promise<T>,
    signal?: AbortSignal,
    tried?: readonly string[],
  ): Promise<T>;
}

/**
 * The retry bookkeeping of one long-lived reader (a cache watch), as a shard reader keeps its own
 * (subscription.ts): a failure that passes (reader-retry.ts) is retried after a jittered backoff
 * for as long as the client keeps reconnecting, with or without cluster routing; in a cluster
 * the router learns from it first (the owner a redirect names, or the one held dropped).
 */
export class ReaderRetry {
  private attempts = 0;
  /** When the `not_found` answers in a row began (Date.now()). */
  private missingSinceMs: number | undefined;
  /** The backoff's stop signal, made once per caller signal: Node 20 keeps every combined
   *  signal alive, so one per backoff grew the heap for as long as an outage lasted. */
  private stop: { for: AbortSignal | undefined; signal: AbortSignal | undefined } | undefined;

  constructor(
    private readonly route: ProjectionRoute | undefined,
    /** Aborted when the client closes: a backoff under way ends at once. */
    private readonly closing?: AbortSignal,
  ) {}

  /** The reader worked again: the backoff starts over. */
  ok(): void {
    this.missingSinceMs = undefined;
    this.attempts = 0;
  }

  /** True (after the backoff) when `err` is retried; the owner it points at is learned. */
  async retries(
    err: unknown,
    where: { kind: 'stream' | 'cache'; name: string; shard: number | undefined; from: string },
    signal?: AbortSignal,
  ): Promise<boolean> {
    const failure = readerFailureOf(err);
    if (failure === 'fatal') return false;
    const route = this.route?.active ? this.route : undefined;
    if (failure === 'not_found') {
      // A name a new owner has not loaded yet (routed), briefly; one broker's answer is final.
      const now = Date.now();
      this.missingSinceMs ??= now;
      if (route === undefined || now - this.missingSinceMs > NOT_FOUND_RETRY_MS) return false;
    } else this.missingSinceMs = undefined;
    if (route !== undefined && where.shard !== undefined)
      route.refused(where.kind, where.name, where.shard, err, where.from);
    const delayMs = backoffDelayMs(this.attempts++, {
      baseMs: FAILOVER_RETRY_BASE_MS,
      maxMs: failure === 'busy' ? RESUBSCRIBE_BUSY_DELAY_MS_MAX : FAILOVER_RETRY_DELAY_MS_MAX,
    });
    if (this.stop === undefined || this.stop.for !== signal)
      this.stop = { for: signal, signal: eitherSignal(signal, this.closing) };
    // An abort or the client's close ends the wait early; the caller then sees either.
    await sleep(delayMs, this.stop.signal).catch(() => undefined);
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
  if (typeof data !== 'string') return asBytes(data, what);
  if (!data.isWellFormed()) throw illFormed(what);
  return UTF8.encode(data);
}

/** A string already checked to be well-formed, as its UTF-8 (the publish's quick path). */
export function wellFormedBytes(data: string): Uint8Array {
  return UTF8.encode(data);
}
