/**
 * `subscribe` on one shard: a control stream of its own (authenticated, optionally offering the
 * timestamped event layout) carries the request and its answer; the events come on the uni
 * stream the broker opens and names in `event_stream_hello`.
 */
import type { Connection } from '@felix/transport';
import {
  FLAG_EVENT_BATCH_TIMESTAMPS,
  type Message,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import {
  AbortedError,
  ConnectionLostError,
  CursorInFutureError,
  CursorTooOldError,
  EventStreamTimeoutError,
  ProtocolError,
  SubscribeTimeoutError,
  notLeaderOf,
  refusalOf,
} from '../errors.js';
import { type AuthedStream, type ConnectionOptions, authStream, resetOnAbort } from './auth.js';
import type { EventStreamReservation, EventStreams } from './event-streams.js';
import type { FrameStream } from './frame-stream.js';
import { CLIENT_FEATURES_SENT, CLIENT_FLAGS } from './negotiation.js';
import { REQUEST_TIMEOUT_MS_DEFAULT } from '../limits.js';
import { Deadline } from '../util/deadline.js';

export type StartPosition = 'latest' | 'earliest' | { offset: number };

export interface OpenSubscription {
  events: FrameStream;
  startOffset: number | undefined;
  liveOffset: number | undefined;
  /** An in-memory shard's offset incarnation (`offsets_epoch`); undefined for a durable one. */
  offsetsEpoch?: number;
  /** A replicated shard's history: the serving leader's generation and where its records start
   *  (named again on a resume, so a log that parted from it below the cursor is caught). */
  history?: SubscriptionHistory;
  /** Set when the broker started below the offset asked for: its log parted there from the
   *  history named (a `leader` shard's failover lost the records read from here on). */
  divergedAt?: number;
  /** The refusal the broker ended the subscription with on its control stream (`unauthenticated`
   *  once the connection's token expired), once read; null until then. */
  refusal?(): Error | null;
  close(): void;
}

export interface SubscriptionHistory {
  generation: number;
  start: number;
}

export interface SubscribeRequest {
  stream: string;
  shard: number;
  start: StartPosition;
  /** The history the cursor in `start` belongs to, as the last `subscribed` named it. */
  history?: SubscriptionHistory;
  queueCapacity: number;
  /** Offer the timestamped event layout (0x4000) on this subscription's stream. */
  timestamps: boolean;
}

/** Opens a subscription on one shard. Cursor errors throw CursorTooOld/InFutureError. */
export async function openSubscription(
  at: { server: string; conn: Connection; opts: ConnectionOptions; events: EventStreams },
  req: SubscribeRequest,
  /** Ends the opening at whatever step it waits (a stalled broker answers none): AbortedError. */
  signal?: AbortSignal,
): Promise<OpenSubscription> {
  const reservation = at.events.reserve();
  let control: AuthedStream | null = null;
  let unlink: () => void = () => undefined;
  // A live broker that never answers (a stalled handler, an answer lost on the way) held the
  // reader here for as long as the connection lived: its `auth_ok` and then `subscribed` are
  // awaited at most the request timeout, whose expiry resets the stream as an abort does.
  const deadline = new Deadline(at.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT, signal);
  try {
    const flags = req.timestamps ? CLIENT_FLAGS | FLAG_EVENT_BATCH_TIMESTAMPS : CLIENT_FLAGS;
    control = await authStream(at.conn, at.opts, flags, CLIENT_FEATURES_SENT, deadline.signal);
    // An abort resets the control stream: the wait for `subscribed` ends, and the broker drops
    // the subscription (and its event stream) if it had made it.
    unlink = resetOnAbort(control.stream, deadline.signal);
    await control.stream.write(encodeMessage(subscribeMessage(at.opts, req, reservation.id)));
    const frame = await control.frames.next();
    if (!frame) throw new ConnectionLostError(at.server);
    deadline.clear(); // answered: the wait for its event stream has its own bound
    const answered = answerOf(subscribedOf(frame.payload));
    const fs = await eventsOf(reservation, signal, req, answered);
    unlink();
    const ctl = control;
    let refusal: Error | null = null;
    // The broker ends a subscription it will not serve any more (the token expired) with an
    // `error` on this stream; it is kept to end the iterator with, instead of resubscribing.
    ctl.frames.next().then(
      (f) => {
        if (f?.flags !== 0) return;
        try {
          const end = decodeMessage(f.payload);
          if (end.type === 'error') refusal = refusalOf(end);
        } catch (err) {
          refusal = err as Error; // an undecodable frame ends the subscription as broken
        }
      },
      () => undefined, // the stream was reset (closed by us, or the connection went): no refusal
    );
    return {
      events: fs,
      ...answered,
      refusal: () => refusal,
      close: () => {
        ctl.stream.end().catch(() => undefined); // the events stream's reset ends it anyway
        fs.stream.reset(0);
      },
    };
  } catch (err) {
    unlink();
    reservation.cancel();
    control?.stream.reset(0);
    if (signal?.aborted && !(err instanceof AbortedError))
      throw new AbortedError('the subscribe', { cause: signal.reason });
    if (deadline.expired && !signal?.aborted)
      throw new SubscribeTimeoutError(`the subscribe to ${req.stream}/${req.shard}`, deadline.ms);
    throw err;
  } finally {
    deadline.dispose();
  }
}

/** The broker's answer to `subscribe`: `subscribed`, else the refusal it names, thrown. */
function subscribedOf(payload: Uint8Array): Extract<Message, { type: 'subscribed' }> {
  const msg = decodeMessage(payload);
  if (msg.type === 'subscribe_cursor_error') {
    throw msg.reason === 'too_old'
      ? new CursorTooOldError(msg.requested, msg.available)
      : new CursorInFutureError(msg.requested, msg.available);
  }
  if (msg.type === 'error') throw refusalOf(msg);
  if (msg.type === 'not_leader') throw notLeaderOf(msg);
  if (msg.type !== 'subscribed') throw new ProtocolError(`expected subscribed, got ${msg.type}`);
  return msg;
}

/** What a subscription needs of the broker's `subscribed`: where it started, and its history. */
type SubscribedAnswer = Pick<
  OpenSubscription,
  'startOffset' | 'liveOffset' | 'offsetsEpoch' | 'history' | 'divergedAt'
>;

function answerOf(msg: Extract<Message, { type: 'subscribed' }>): SubscribedAnswer {
  return {
    startOffset: msg.start_offset,
    liveOffset: msg.live_offset,
    ...(msg.offsets_epoch !== undefined ? { offsetsEpoch: msg.offsets_epoch } : {}),
    ...(msg.generation !== undefined && msg.generation_start !== undefined
      ? { history: { generation: msg.generation, start: msg.generation_start } }
      : {}),
    ...(msg.diverged_at !== undefined ? { divergedAt: msg.diverged_at } : {}),
  };
}

/**
 * The event stream of a subscription the broker answered. Bounded: a broker that answered and
 * then crashed or misbehaved opens none, and this wait held the reader (and its `for await`) for
 * as long as the connection lived. Its expiry carries the answer, for the reader to resume from.
 */
async function eventsOf(
  reservation: EventStreamReservation,
  signal: AbortSignal | undefined,
  req: SubscribeRequest,
  answered: SubscribedAnswer,
): Promise<FrameStream> {
  const what = `the subscription to ${req.stream}/${req.shard}`;
  try {
    return await reservation.opened(signal, what);
  } catch (err) {
    if (!(err instanceof EventStreamTimeoutError)) throw err;
    throw new EventStreamTimeoutError(what, err.ms, answered);
  }
}

function subscribeMessage(opts: ConnectionOptions, req: SubscribeRequest, id: number): Message {
  return {
    type: 'subscribe',
    tenant_id: opts.tenant,
    namespace: opts.namespace,
    stream: req.stream,
    subscription_id: id,
    start: req.start,
    shard: req.shard,
    queue_capacity: req.queueCapacity,
    ...(req.history === undefined
      ? {}
      : { history_generation: req.history.generation, history_start: req.history.start }),
  };
}
