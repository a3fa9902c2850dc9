/**
 * The request stream of one connection, for cache, counter, group and `offset_for_time`
 * requests: a stream of its own (authenticated once, on first use), requests pipelined with ids
 * from the connection's RequestTable and written through the stream's one writer at the end of
 * the turn (a consume loop's settles of one turn leave in one write), answers read in request
 * order. The broker answers this stream in order, so an `error` (which carries no request id)
 * belongs to the oldest unanswered request, and a request's quick decoder reads its answer.
 * For the same reason the oldest request alone bounds them all: each is stamped with the
 * connection's check tick its answer is due by, and a lane whose oldest answer is overdue
 * (requestTimeoutMs) fails every request on it and resets its stream, so a late answer is never
 * read as a later request's; the next request opens a new stream.
 *
 * A request the lane fails (the connection's loss, an overdue answer, an answer it cannot read)
 * rejects with that failure (ConnectionLostError, TimeoutError, ProtocolError), except a write
 * that was sent: one whose frame the stream's writer handed to the transport (its bytes may have
 * reached the broker) may have been applied, so it rejects with OutcomeUnknownError naming it,
 * the failure as its `cause`. A write not sent yet (its stream still opening, no room under
 * REQUESTS_IN_FLIGHT_MAX, or its frame still held for the turn's end, then dropped unwritten)
 * changed nothing and keeps the failure, which may be retried. So does a sent write the broker
 * never read: its half-close of the stream (a stopping broker's notice) comes only after the
 * answers of everything it applied there, so what waits then fails with ConnectionLostError.
 * Callers take the lane's error as it is: none maps it again.
 */
import type { TransportStream } from '@felix/transport';
import { FRAME_HEADER_BYTES, type Message, decodeMessage, encodeMessage } from '@felix/wire';
import {
  ClientError,
  ConnectionLostError,
  InvalidArgumentError,
  OutcomeUnknownError,
  ProtocolError,
  TimeoutError,
  notLeaderOf,
  refusalOf,
} from '../errors.js';
import { FRAME_BYTES_MAX, REQUESTS_IN_FLIGHT_MAX } from '../limits.js';
import { type CheckTicks, type DueWatched, ticksSpanning } from '../util/check-ticks.js';
import type { FrameStream, InFrame } from './frame-stream.js';
import type { Pending, RequestTable } from './request-table.js';
import { StreamWriter } from './stream-writer.js';
import type { TurnBatcher } from './turn-batcher.js';

interface Waiting extends Pending {
  id: number;
  /** Reads this request's answer without the general decoder; undefined hands it to that. */
  quick: QuickReader | undefined;
  /** The caller's result from its answer (may throw); absent: the answer itself. */
  finish: ((msg: Message) => unknown) | undefined;
  /** What a write names (it may have been applied when its answer never comes); absent: a read. */
  write: string | undefined;
  /** Its frame's number on the stream's writer: below the writer's `handed` once sent. */
  frame: number;
  /** The connection's check tick by which its answer is due. */
  due: number;
}

/**
 * Reads an answer frame (its payload and flag word) without the general decoder: the message,
 * or undefined to hand a JSON frame to that decoder. A binary frame it does not take is a
 * protocol error.
 */
export type QuickReader = (payload: Uint8Array, flags: number) => Message | undefined;

/**
 * A request the caller encoded itself, optionally a quick reader of its answer, and what the
 * request resolves with: `finish` of the answer (an error answer rejects before it).
 */
export interface Prepared<T = Message> {
  bytes: Uint8Array;
  quick?: QuickReader;
  finish?: (msg: Message) => T;
}

/** What the lane needs from its connection. */
export interface LaneHost {
  readonly server: string;
  readonly table: RequestTable;
  readonly turn: TurnBatcher;
  /** The connection's check ticks, and how long an answer may take (requestTimeoutMs). */
  readonly ticks: CheckTicks;
  readonly timeoutMs: number;
  /** Opens and authenticates the lane's stream. */
  open(): Promise<{ stream: TransportStream; frames: FrameStream }>;
  /** The broker's end of the stream comes only after the answers of all it applied
   *  (FEATURE_HI_STREAM_END_NOTICE): what still waits then was not applied. */
  readonly endIsNotice?: boolean;
}

export class RequestLane implements DueWatched {
  private opened: Promise<StreamWriter> | null = null;
  /** The stream's writer, once `opened` has resolved. */
  private writer: StreamWriter | null = null;
  private stream: TransportStream | null = null;
  private readonly waiting: Waiting[] = [];
  private failed: Error | null = null;
  /** Callers waiting for room under REQUESTS_IN_FLIGHT_MAX. */
  private roomWaiters: Array<() => void> = [];
  /** `idle()` callers: told once nothing waits for an answer (or the lane failed). */
  private idleWaiters: Array<() => void> = [];
  /** Requests on the slow path not sent yet: while any is, later ones queue behind it. */
  private slowQueued = 0;
  /** Ticks an answer may take (the timeout's span, reckoned once per lane). */
  private readonly dueTicks: number;

  constructor(private readonly host: LaneHost) {
    this.dueTicks = ticksSpanning(host.timeoutMs);
  }

  /** Requests sent on the lane and not answered yet. */
  get unanswered(): number {
    return this.waiting.length;
  }

  get broken(): boolean {
    return this.failed !== null;
  }

  /** Resolves once no request on the lane waits for its answer, or the lane failed. */
  idle(): Promise<void> {
    if (this.waiting.length === 0 || this.failed !== null) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Sends one request (built with its request id) and resolves with its answer. `write` names a
   * request that changes something (a put, a delete, an add, a settle, a group admin change):
   * one sent whose answer never comes (the connection lost, the lane overdue) rejects with
   * OutcomeUnknownError naming it; a read, or a write never sent, with the lane's failure.
   */
  request(build: (requestId: number) => Message, write?: string): Promise<Message> {
    return this.requestPrepared((id) => ({ bytes: encodeMessage(build(id)) }), write);
  }

  /**
   * Sends one request the caller encodes (given its request id); `write` as for `request`. The
   * caller's promise may be the request's own (its answer settled through `finish`), with no
   * step (promise and turn) of its own per call.
   */
  requestPrepared<T>(prepare: (requestId: number) => Prepared<T>, write?: string): Promise<T> {
    if (this.failed) return Promise.reject(this.failed); // never sent
    // The common case (stream open, room under the bound, nobody queued on the slow path)
    // sends without an async hop; a request never overtakes one made before it.
    const w = this.writer;
    if (w !== null && this.slowQueued === 0 && this.waiting.length < REQUESTS_IN_FLIGHT_MAX)
      return this.send(w, prepare, write);
    return this.requestSlowly(prepare, write);
  }

  /**
   * Opens the stream on first use and waits for room under REQUESTS_IN_FLIGHT_MAX. The request
   * is encoded now, not when it leaves: the caller's bytes (a cache put's value) are taken as
   * they were at the call, as a pipeline's are, whatever the caller writes into them meanwhile.
   * Its id is taken now too; nothing overtakes a queued request, so ids still leave in order.
   */
  private async requestSlowly<T>(
    prepare: (requestId: number) => Prepared<T>,
    write: string | undefined,
  ): Promise<T> {
    const id = this.host.table.nextId();
    const prepared = preparedFrame(prepare, id); // a request that cannot be encoded is refused alone
    this.slowQueued++;
    let w: StreamWriter;
    try {
      this.opened ??= this.openWriter();
      w = await this.opened;
      while (this.waiting.length >= REQUESTS_IN_FLIGHT_MAX && !this.failed) {
        await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
      }
    } catch (err) {
      // Never sent: the lane's failure (the connection's loss while the stream was opening, not
      // the stream's own end under its `auth`), else the open's.
      throw this.failed ?? err;
    } finally {
      this.slowQueued--;
    }
    if (this.failed) throw this.failed; // never sent
    return this.sendPrepared(w, id, prepared, write);
  }

  private async openWriter(): Promise<StreamWriter> {
    try {
      const { stream, frames } = await this.host.open();
      this.stream = stream;
      const w = new StreamWriter(stream, this.host.turn, this.writeFailed);
      this.writer = w;
      this.read(frames);
      return w;
    } catch (err) {
      this.fail(err as Error);
      throw err;
    }
  }

  /** Gives the request its id, registers its answer and queues its bytes for the turn's end. */
  private send<T>(
    writer: StreamWriter,
    prepare: (requestId: number) => Prepared<T>,
    write: string | undefined,
  ): Promise<T> {
    const id = this.host.table.nextId();
    // Encoded before its answer is registered: a request that cannot be encoded owes no answer,
    // and is refused alone, as a rejection (never thrown into the caller's turn).
    let prepared: Prepared<T>;
    try {
      prepared = preparedFrame(prepare, id);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.sendPrepared(writer, id, prepared, write);
  }

  /** Registers the answer of an encoded request and pushes its frame. */
  private sendPrepared<T>(
    writer: StreamWriter,
    id: number,
    prepared: Prepared<T>,
    write: string | undefined,
  ): Promise<T> {
    const { bytes, quick, finish } = prepared;
    const due = this.host.ticks.count + this.dueTicks;
    const answer = new Promise<T>((resolve, reject) => {
      const w: Waiting = {
        id,
        resolve: resolve as (r: unknown) => void,
        reject,
        publishTo: undefined,
        quick,
        finish,
        write,
        frame: writer.pushed,
        due,
      };
      // Only the lane's own queue: answers come in request order, and the connection's loss
      // fails the lane (`fail`), so a map entry per request would buy nothing.
      this.waiting.push(w);
    });
    writer.push(bytes);
    return answer;
  }

  private readonly writeFailed = (err: unknown): void => {
    this.fail(new ConnectionLostError(this.host.server, { cause: err }));
  };

  /**
   * Reads the answers as their bytes arrive: over the multiplexer an answer is settled in the
   * turn its chunk is read, with no promise or turn of the lane's own per chunk.
   */
  private read(frames: FrameStream): void {
    frames.forEachFrame(this.onAnswerFrame, this.onAnswersEnd);
  }

  private readonly onAnswerFrame = (frame: InFrame): void => {
    let msg: Message;
    try {
      msg = this.waiting[0]?.quick?.(frame.payload, frame.flags) ?? decodeAnswer(frame);
    } catch (err) {
      // An answer @felix/wire cannot decode ends the stream as the client's ProtocolError, so
      // that `onAnswersEnd` can take any other error for the transport's.
      if (err instanceof ClientError) throw err;
      throw new ProtocolError('an answer on the request stream could not be decoded', {
        cause: err,
      });
    }
    this.answer(msg);
  };

  private readonly onAnswersEnd = (err: unknown): void => {
    // A broker that offered FEATURE_HI_STREAM_END_NOTICE half-closes only after it answered
    // every request it applied on the stream (when it stops, or refuses the stream): the
    // requests still waiting were never applied, a sent write included, and may be sent again.
    if (err === null && this.host.endIsNotice === true) {
      this.fail(new ConnectionLostError(this.host.server, { cause: new Error(UNREAD) }), true);
      return;
    }
    // The client's own errors (a bad answer's ProtocolError) stand; anything else ended the stream
    // under its requests (the transport's ConnectionClosedError when a TLS socket closes before
    // the connection's loss is seen): their callers get the typed loss (a sent write's
    // OutcomeUnknownError), never the transport's error.
    this.fail(
      err instanceof ClientError
        ? err
        : new ConnectionLostError(this.host.server, err === null ? undefined : { cause: err }),
    );
  };

  /** Settles the oldest request with `msg`; throws when the answer cannot be its own. */
  private answer(msg: Message): void {
    const head = this.waiting.shift();
    this.roomWaiters.shift()?.();
    if (this.waiting.length === 0 && this.idleWaiters.length > 0)
      for (const r of this.idleWaiters.splice(0)) r();
    if (head === undefined) throw new ProtocolError(`unexpected ${msg.type} on a request stream`);
    if (msg.type === 'error') {
      head.reject(refusalOf(msg));
      return;
    }
    if (msg.type === 'not_leader') {
      head.reject(notLeaderOf(msg)); // a group request on a broker that does not lead its shard
      return;
    }
    const rid = 'request_id' in msg ? msg.request_id : undefined;
    if (rid !== undefined && rid !== head.id) {
      const err = new ProtocolError(`answer for request ${rid} while ${head.id} was oldest`);
      // Sent (an answer came back for the stream), so a write's outcome is not known.
      head.reject(
        head.write === undefined ? err : new OutcomeUnknownError(head.write, { cause: err }),
      );
      throw err;
    }
    if (head.finish === undefined) head.resolve(msg);
    else settleWith(head, msg);
  }

  /** Fails the lane when its oldest request's answer is overdue at check `tick`. */
  checkDue(tick: number): void {
    const head = this.waiting[0];
    if (head === undefined || tick < head.due) return;
    // Every request behind it waits on the same stream: failed with it, the stream reset.
    this.fail(
      new TimeoutError(
        `the oldest request on the request stream to ${this.host.server}`,
        this.host.timeoutMs,
      ),
    );
  }

  /**
   * Fails this lane's requests (the connection's loss calls it before failing the table): each
   * with `err`, except a sent write, with OutcomeUnknownError (see the top of this file), unless
   * the broker said it read none of them (`unread`: it ended the stream after its last answer).
   * Frames still held are dropped unwritten.
   */
  fail(err: Error, unread = false): void {
    if (this.failed) return;
    this.failed = err;
    const writer = this.writer;
    // Read before the writer is abandoned (which hands nothing more to the transport).
    const handed = writer === null ? 0 : writer.handed;
    writer?.abandon(err);
    // Whatever ended the lane (a loss, an overdue answer, an answer it could not read), a write
    // handed to the transport got no answer: it may have been applied.
    for (const w of this.waiting.splice(0)) {
      w.reject(
        w.write !== undefined && w.frame < handed && !unread
          ? new OutcomeUnknownError(w.write, { cause: err })
          : err,
      );
    }
    for (const r of this.roomWaiters.splice(0)) r();
    for (const r of this.idleWaiters.splice(0)) r();
    this.stream?.reset(0);
    // A stream still opening is reset once it is open.
    if (this.stream === null)
      void this.opened?.then(
        () => this.stream?.reset(0),
        () => undefined, // it failed to open: nothing to reset
      );
  }
}

/** Why requests still waiting when the broker ended their stream (FEATURE_HI_STREAM_END_NOTICE)
 *  were not applied: the `cause` of their ConnectionLostError. */
export const UNREAD =
  'the broker ended the stream after answering every request it applied there ' +
  '(it is stopping, or it refused the stream); those still unanswered were not applied';

/** An answer no quick reader took: JSON by the codec; a binary frame here is not an answer. */
function decodeAnswer(frame: InFrame): Message {
  if (frame.flags !== 0) {
    throw new ProtocolError(`a binary frame (flags ${frame.flags}) answered a JSON request`);
  }
  return decodeMessage(frame.payload);
}

/** Resolves the request with `finish` of its answer, or rejects with what `finish` threw. */
function settleWith(w: Waiting, msg: Message): void {
  let result: unknown;
  try {
    result = w.finish!(msg);
  } catch (err) {
    w.reject(err as Error);
    return;
  }
  w.resolve(result);
}

/** `prepare(id)`, refused (thrown) when its frame is larger than a frame may be: the broker would
 *  end the whole stream at its header, failing every request on it, and its error (no request
 *  id) would be taken for the oldest one's. */
function preparedFrame<T>(prepare: (requestId: number) => Prepared<T>, id: number): Prepared<T> {
  const prepared = prepare(id);
  if (prepared.bytes.byteLength - FRAME_HEADER_BYTES > FRAME_BYTES_MAX) {
    throw new InvalidArgumentError(
      `a request of ${prepared.bytes.byteLength} bytes is larger than a frame may be ` +
        `(FRAME_BYTES_MAX, ${FRAME_BYTES_MAX} bytes of payload)`,
    );
  }
  return prepared;
}
