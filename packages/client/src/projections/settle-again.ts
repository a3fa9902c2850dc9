/**
 * A group ack (a batch, or a single `group_ack`) that a broker refused without applying it, sent
 * again to the shard's owner as the router then knows it. A leader stopping with
 * SIGTERM refuses settles `draining` while it hands its shards off, a broker that no longer leads
 * the shard answers `not_leader` or `shard_unavailable`, and a stopping broker's end of a request
 * stream says what it read was not applied: before, each of these failed the caller's `ack()`,
 * where a publish or a cache write made at the same moment was sent again and succeeded. Sending
 * an ack again is safe: the shard's new leader owes every record its predecessor had handed out
 * and accepts their acks (docs/queues.md), and an ack made twice is a harmless `ok`. A nack is
 * not sent again: the new leader holds no claim for it to name and owes the record anyway.
 * Bounded as a keyed cache write is (key-routes.ts: KEYED_ROUTE_ATTEMPTS_MAX and the request
 * timeout); `stale_claim` and everything not a redirect or a busy refusal fail at once.
 */
import { StaleClaimError } from '../errors.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import type { ProjectionRoute } from './host.js';
import { type Refused, mayResendKeyed, resendPause } from './key-routes.js';

/** Sends `call` again on the shard's owner after `failed`, or throws why it may not. */
export type SettleAgain = <T>(
  call: (bc: BrokerConnection) => Promise<T>,
  failed: Refused,
) => Promise<T>;

/** The group's shard and the client's state a resend needs. */
export interface SettleShard {
  route: ProjectionRoute | undefined;
  stream: string;
  shard: number;
  closed(): boolean;
  /** Aborted when the client closes: a backoff under way ends (the settle fails as it did). */
  closing: AbortSignal | undefined;
}

/** `call` sent again on `s`'s owner after `failed` (see the module's comment). */
export async function settleAgain<T>(
  s: SettleShard,
  call: (bc: BrokerConnection) => Promise<T>,
  failed: Refused,
): Promise<T> {
  const route = s.route;
  const startedMs = Date.now();
  let last = failed;
  for (let attempt = 0; ; attempt++) {
    const elapsedMs = Date.now() - startedMs;
    if (
      route === undefined ||
      !route.active ||
      s.closed() ||
      last.err instanceof StaleClaimError ||
      !mayResendKeyed(last.err, attempt, elapsedMs, route.requestTimeoutMs)
    )
      throw last.err;
    route.refused('stream', s.stream, s.shard, last.err, last.from);
    const refusal = last.err;
    // Ended by the client's close: the ack fails with its refusal, as it would have.
    const tried = await resendPause(
      last,
      attempt,
      elapsedMs,
      route.requestTimeoutMs,
      s.closing,
    ).catch(() => {
      throw refusal;
    });
    let used: BrokerConnection | undefined;
    try {
      return await route.request(
        'stream',
        s.stream,
        s.shard,
        (bc) => {
          used = bc;
          return call(bc);
        },
        undefined,
        tried,
      );
    } catch (err) {
      last = { err, from: used?.server ?? '' };
    }
  }
}
