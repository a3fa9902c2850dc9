/**
 * Connection, subscription and consume-loop status events, fanned out to every `status()`
 * listener. Each listener has a bounded buffer (STATUS_BUFFER_EVENTS_MAX); past it the oldest
 * unread events are dropped (a status feed must never hold the client back), and the listener
 * is told how many it missed. With no listener an event is dropped at once.
 */
import { STATUS_BUFFER_EVENTS_MAX } from './limits.js';

export type StatusEvent =
  | { type: 'connected'; server: string; transport: 'quic' | 'tls' }
  | { type: 'disconnected'; server: string; reason: string }
  /** A connection to a broker the client routed requests to (a shard's owner, not the broker
   *  it connected through) was lost; `reason` says what ended it. Its shards' requests go to
   *  their next owner (there is no `reconnecting` for it). */
  | { type: 'broker_lost'; server: string; reason: string }
  | { type: 'reconnecting'; attempt: number; delayMs: number }
  | { type: 'closed' }
  /** The broker's queue for a durable subscription overflowed; it resumed from disk, losing nothing. */
  | { type: 'lagged'; stream: string; shard: number; resumeFrom: number }
  /** Offsets were lost for a subscription (in-memory overflow, retention, a broker restart). */
  | { type: 'gap'; stream: string; shard: number; from: number; count: number }
  /** An in-memory stream restarted its offsets (its broker restarted); reading from its start. */
  | { type: 'reset'; stream: string; shard: number }
  /** A failover lost records this subscription had delivered, offsets `from` to `to` (not
   *  included): a `leader` stream's records no follower held. The new leader holds other
   *  records at those offsets now; they are delivered from `from`. */
  | { type: 'diverged'; stream: string; shard: number; from: number; to: number }
  /** A token provider's fresh token was taken: `reauthenticated` when the live connection now
   *  runs on it (`reauth_ok`), false when it waits for the next connection (a broker without
   *  in-band reauth, or no live connection); `expiresAtMs` as known (unix ms). */
  | { type: 'token_refreshed'; reauthenticated: boolean; expiresAtMs?: number }
  /** A refresh failed (the provider, or the broker refused the fresh token); tried again after
   *  `retryInMs`, or not on the timer any more when absent (see TOKEN_REFRESH_ATTEMPTS_MAX). */
  | { type: 'token_refresh_failed'; attempt: number; error: Error; retryInMs?: number }
  /** A subscription's (or watch's) subscribe to `shard` failed in a way that passes (`error`:
   *  a `ShardUnavailableError` while no broker serves the shard, an `OverloadedError`, a
   *  shard still opening, ...); it subscribes again after `delayMs`, and for as long as the
   *  client keeps its connection. `failure` is the backoff class, as for `consume_retry`;
   *  `failures` counts the subscribes failed in a row, this one included. A lost connection
   *  says `disconnected` instead and resumes once reconnected. */
  | {
      type: 'subscribe_retry';
      stream: string;
      shard: number;
      failure: 'unavailable' | 'busy' | 'not_found';
      error: Error;
      failures: number;
      delayMs: number;
    }
  /** A consume loop's poll failed in a way that passes (`error`, the poll's own: an
   *  `OverloadedError`, a `TimeoutError`, a `ConnectionLostError`, ...); it polls again after
   *  `delayMs` (0: polls it made ahead are still out, and are waited for first). `failure` says
   *  which backoff: `unavailable` (a lost connection, an unanswered poll, a shard served
   *  elsewhere; capped at 1 s), `busy` (the broker asked for a backoff: `overloaded`, a limit;
   *  5 s), `not_found` (a stream or group not known yet; 5 s, for 5 s in a row at most).
   *  `failures` counts the polls failed in a row, this one included. One per failed poll. */
  | {
      type: 'consume_retry';
      stream: string;
      group: string;
      shard: number;
      consumer?: string;
      failure: 'unavailable' | 'busy' | 'not_found';
      error: Error;
      failures: number;
      delayMs: number;
    }
  /** A consume loop that was retrying had a poll answered again, after `failures` failed in a
   *  row, the first of them `failedForMs` before. */
  | {
      type: 'consume_recovered';
      stream: string;
      group: string;
      shard: number;
      consumer?: string;
      failures: number;
      failedForMs: number;
    }
  /** A consume loop that was retrying ended before a poll was answered again, after `failures`
   *  failed in a row, the first of them `failedForMs` before: `reason` says how (`aborted`: its
   *  signal; `returned`: a break or `return()`; `closed`: the client closed; `failed`: a failure
   *  that would recur, `error`, which the loop throws). Only after a `consume_retry` that no
   *  `consume_recovered` followed, so a view of the loop as retrying can be cleared. */
  | {
      type: 'consume_stopped';
      stream: string;
      group: string;
      shard: number;
      consumer?: string;
      reason: 'aborted' | 'returned' | 'closed' | 'failed';
      failures: number;
      failedForMs: number;
      error?: Error;
    }
  /** Status events this listener missed because it read too slowly. */
  | { type: 'status_dropped'; count: number };

class Listener {
  events: StatusEvent[] = [];
  dropped = 0;
  wake: (() => void) | null = null;
  closed = false;
}

export class StatusHub {
  private listeners = new Set<Listener>();
  private ended = false;

  emit(event: StatusEvent): void {
    for (const l of this.listeners) {
      if (l.events.length >= STATUS_BUFFER_EVENTS_MAX) {
        l.events.shift();
        l.dropped++;
      }
      l.events.push(event);
      l.wake?.();
    }
  }

  end(): void {
    this.ended = true;
    for (const l of this.listeners) {
      l.closed = true;
      l.wake?.();
    }
  }

  listen(signal?: AbortSignal): AsyncIterable<StatusEvent> {
    const hub = this;
    return {
      async *[Symbol.asyncIterator]() {
        const l = new Listener();
        l.closed = hub.ended;
        hub.listeners.add(l);
        const onAbort = () => {
          l.closed = true;
          l.wake?.();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        try {
          for (;;) {
            if (l.dropped > 0) {
              const count = l.dropped;
              l.dropped = 0;
              yield { type: 'status_dropped', count } as StatusEvent;
            }
            const next = l.events.shift();
            if (next) {
              yield next;
              continue;
            }
            if (l.closed || signal?.aborted) return;
            await new Promise<void>((resolve) => {
              l.wake = resolve;
            });
            l.wake = null;
          }
        } finally {
          signal?.removeEventListener('abort', onAbort);
          hub.listeners.delete(l);
        }
      },
    };
  }
}
