/**
 * A routed publish (client.ts's `send` when cluster routing is on, or at least once): to its
 * shard's owner, redirects followed, sent again after a refusal that wrote nothing, all within
 * one window of its request timeout (PublishWindow). No I/O of its own: the client's router and
 * connections do it.
 */
import type { ClusterRouter } from './cluster/router.js';
import { type PublishTally, mayResendPublish, resendWindowLeftMs } from './cluster/routing.js';
import { AbortedError, OutcomeUnknownError, TimeoutError } from './errors.js';
import {
  FAILOVER_RETRY_BASE_MS,
  PUBLISH_RETRY_DELAY_MS_MAX,
  PUBLISH_WINDOW_SLACK_MS,
} from './limits.js';
import type { BrokerConnection } from './protocol/broker-connection.js';
import type { PublishAnswer, PublishCall } from './protocol/publish-pipe.js';
import type { PublishOptions } from './types.js';
import { backoffDelayMs, sleep } from './util/backoff.js';

/** What a routed publish needs of the client. */
export interface RoutedPublishHost {
  readonly router: ClusterRouter;
  readonly closed: boolean;
  /** Why the last reconnect failed (the cause of a publish timed out waiting for one). */
  readonly reconnectFailure: unknown;
  liveEntry(): BrokerConnection | undefined;
  /** The entry connection, waiting for a reconnect until `untilMs` or `signal`. */
  connection(signal: AbortSignal | undefined, untilMs: number): Promise<BrokerConnection>;
  /** The shard a publish goes to when the client can tell (a key, or a one-shard stream). */
  shardOf(
    stream: string,
    key: Uint8Array | undefined,
    signal: AbortSignal | undefined,
    untilMs: number,
  ): Promise<number | undefined>;
}

/** The delay before a refused publish's attempt `attempt + 1` (jittered, 50 ms doubling to
 *  PUBLISH_RETRY_DELAY_MS_MAX), never past the `leftMs` of its window. */
export function publishRetryDelayMs(attempt: number, leftMs: number): number {
  const delayMs = backoffDelayMs(attempt, {
    baseMs: FAILOVER_RETRY_BASE_MS,
    maxMs: PUBLISH_RETRY_DELAY_MS_MAX,
  });
  return Math.min(delayMs, leftMs);
}

/**
 * A publish to the shard's owner (redirects followed, routing.ts), sent again after a refusal
 * that wrote nothing (a redirect, a shard still opening, a lost connection before the send), and
 * after a lost ack (OutcomeUnknownError) only when the caller opted in to at-least-once: then the
 * record may be in the log twice. Bounded by AT_LEAST_ONCE_RESENDS_MAX and the request timeout:
 * a wait the window cuts short fails it with the last refusal, or TimeoutError; an attempt sent
 * waits for its ack only what is left of the window (publishWithin).
 */
export async function sendRouted(
  host: RoutedPublishHost,
  stream: string,
  payloads: Uint8Array[],
  call: PublishCall,
  opts: PublishOptions,
): Promise<PublishAnswer> {
  const startedMs = Date.now();
  const window = new PublishWindow(startedMs + call.timeoutMs, opts.signal);
  try {
    // A live entry connection: no wait for a reconnect, so no timer for this publish yet.
    const first = host.liveEntry() === undefined ? window.signal() : opts.signal;
    const shard = await host.shardOf(stream, call.key, first, window.untilMs);
    const tally: PublishTally = {
      resends: 0,
      atLeastOnce: opts.atLeastOnce === true,
      startedMs,
      timeoutMs: call.timeoutMs,
    };
    let refusal: unknown;
    const send = (c: BrokerConnection) =>
      publishWithin(c, stream, payloads, call, window.untilMs, () => {
        return refusal ?? windowTimeout(host, stream, call.timeoutMs);
      });
    for (let attempt = 0; ; attempt++) {
      const signal =
        attempt === 0 && host.liveEntry() !== undefined ? opts.signal : window.signal();
      try {
        return await attemptRouted(host, stream, send, shard, signal, window.untilMs);
      } catch (err) {
        // A wait the window cut short: the last refusal, or this publish's timeout.
        if (window.ended && err instanceof AbortedError)
          throw refusal ?? windowTimeout(host, stream, call.timeoutMs);
        if (host.closed || !mayResendPublish(err, attempt, tally)) throw err;
        refusal = err;
        // The owner as held failed us: learn the one a redirect names, or ask again.
        if (shard !== undefined) host.router.refused('stream', stream, shard, err, '');
        // Never past the retry window: a delay drawn beyond it held the caller up to a whole
        // delay past its request timeout for one last attempt.
        await sleep(publishRetryDelayMs(attempt, resendWindowLeftMs(err, tally)), opts.signal);
      }
    }
  } finally {
    window.dispose();
  }
}

/** One attempt of a routed publish: to the shard's owner when known, else the entry broker. */
async function attemptRouted(
  host: RoutedPublishHost,
  stream: string,
  send: (conn: BrokerConnection) => Promise<PublishAnswer>,
  shard: number | undefined,
  signal: AbortSignal | undefined,
  untilMs: number,
): Promise<PublishAnswer> {
  if (shard === undefined || !host.router.active)
    return await send(await host.connection(signal, untilMs));
  return await host.router.request('stream', stream, shard, send, signal);
}

/**
 * Sends one attempt of a publish whose window ends at `untilMs`, its ack (unacked: its write)
 * waited for at most what is left of the window. The pipe waits a whole request timeout from the
 * send, so an attempt sent late in its window (after a lookup, a reconnect, a refusal's retry)
 * held its caller up to a whole timeout past it. A lapse fails it with OutcomeUnknownError: it
 * was handed to the connection, so it may be in the log. A window already over sends nothing:
 * it fails with `unsent()` (the last refusal, or the publish's timeout), as a wait it cut short.
 * With its whole window left, give or take PUBLISH_WINDOW_SLACK_MS, it is the pipe's call as it
 * is: no timer or promise more for a publish that waited for nothing.
 */
export function publishWithin(
  conn: BrokerConnection,
  stream: string,
  payloads: Uint8Array[],
  call: PublishCall,
  untilMs: number,
  unsent: () => unknown,
): Promise<PublishAnswer> {
  const leftMs = untilMs - Date.now();
  if (leftMs >= call.timeoutMs - PUBLISH_WINDOW_SLACK_MS)
    return conn.publish(stream, payloads, call);
  if (leftMs <= 0) return Promise.reject(unsent());
  const sent = conn.publish(stream, payloads, call);
  // A timer of its own, not a shorter timeout handed to the pipe: a turn's batch shares one ack
  // timer (unacked ones one write timer), whose other callers keep their whole timeout.
  return new Promise<PublishAnswer>((resolve, reject) => {
    const timer = setTimeout(() => reject(windowLapsed(stream, call.timeoutMs)), leftMs);
    sent.then(
      (answer) => {
        clearTimeout(timer);
        resolve(answer);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** A sent attempt whose publish's window ended before its ack: it may be in the log. */
function windowLapsed(stream: string, timeoutMs: number): OutcomeUnknownError {
  const cause = new TimeoutError(`the publish to ${stream}`, timeoutMs, 'unknown_outcome');
  return new OutcomeUnknownError(stream, { cause });
}

/** A publish whose window ended while it waited (for a reconnect, an owner, a lookup). */
function windowTimeout(host: RoutedPublishHost, stream: string, timeoutMs: number): TimeoutError {
  if (host.liveEntry() !== undefined)
    return new TimeoutError(`the publish to ${stream}`, timeoutMs, 'retry');
  const what = 'waiting for a broker connection';
  return new TimeoutError(what, timeoutMs, 'retry', host.reconnectFailure);
}

/**
 * One publish's request timeout as a whole, as a signal its waits take: the shard lookup, the
 * owner lookup, the wait for a reconnect, a dial to the owner. Each of those may be shared with
 * another caller (a subscription's resubscribe, a consume loop's poll) that began before the
 * publish and waits a request timeout of its own, or is started again after failing: joined
 * without this signal, a publish waited on past its own timeout for as long as the broker was
 * away. The timer is set on first use, so a publish that never waits sets none. An attempt
 * already sent is bounded by the window too, without this signal (publishWithin).
 */
export class PublishWindow {
  private controller: AbortController | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private expired = false;
  private readonly onCallerAbort = () => this.controller?.abort(this.caller?.reason);

  constructor(
    readonly untilMs: number,
    private readonly caller: AbortSignal | undefined,
  ) {}

  /** The signal ending this publish's waits: the caller's abort, or the end of the window. */
  signal(): AbortSignal {
    if (this.controller !== null) return this.controller.signal;
    const c = new AbortController();
    this.controller = c;
    const caller = this.caller;
    if (caller?.aborted) c.abort(caller.reason);
    else caller?.addEventListener('abort', this.onCallerAbort, { once: true });
    const end = () => {
      this.expired = true;
      c.abort(new Error('the publish reached its request timeout'));
    };
    const leftMs = this.untilMs - Date.now();
    if (leftMs <= 0) end();
    else this.timer = setTimeout(end, leftMs);
    return c.signal;
  }

  /** The window ended (not the caller's signal): a wait it cut short is this publish's timeout. */
  get ended(): boolean {
    return this.expired && this.caller?.aborted !== true;
  }

  /** Clears the timer and the listener on the caller's signal (the publish is over). */
  dispose(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this.onCallerAbort);
  }
}
