/**
 * One request stream per broker connection for cache, counter and group-settle requests: a
 * stream of its own (authenticated once), requests pipelined with a `request_id`, answers read
 * in request order. The broker answers this stream in request order, so an `error` (which
 * carries no request id) belongs to the oldest unanswered request. Gathered requests (settles)
 * made in one event-loop turn leave in one write; any other request flushes them first, so the
 * stream carries requests in the order their ids were given.
 */
import type { TransportStream } from '@felix/transport';
import { type Message, decodeMessage, encodeMessage } from '@felix/wire';
import { ConnectionLostError, ProtocolError, brokerError } from '../errors.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import type { FrameStream } from '../protocol/frame-stream.js';
import { REQUESTS_IN_FLIGHT_MAX } from '../limits.js';

interface Waiting {
  id: number;
  resolve(result: unknown): void;
  reject(err: Error): void;
  /** Reads this request's answer without the general decoder; undefined hands it to that. */
  quick: ((payload: Uint8Array) => Message | undefined) | undefined;
  /** The caller's result from its answer (may throw); absent: the answer itself. */
  finish: ((msg: Message) => unknown) | undefined;
}

/**
 * A request the caller encoded itself, optionally a quick reader of its answer, and what the
 * request resolves with: `finish` of the answer (an error answer rejects before it).
 */
export interface Prepared<T = Message> {
  bytes: Uint8Array;
  quick?: (payload: Uint8Array) => Message | undefined;
  finish?: (msg: Message) => T;
}

const channels = new WeakMap<BrokerConnection, RequestChannel>();

/** The request channel of a connection, created on first use. */
export function channelOf(bc: BrokerConnection): RequestChannel {
  let ch = channels.get(bc);
  if (ch === undefined || ch.broken) {
    ch = new RequestChannel(bc);
    channels.set(bc, ch);
  }
  return ch;
}

export class RequestChannel {
  private opened: Promise<{ stream: TransportStream; frames: FrameStream }> | null = null;
  /** The opened stream, once `opened` has resolved. */
  private ready: { stream: TransportStream; frames: FrameStream } | null = null;
  private readonly waiting: Waiting[] = [];
  private nextId = 1;
  private failed: Error | null = null;
  /** Callers waiting for room under REQUESTS_IN_FLIGHT_MAX. */
  private roomWaiters: Array<() => void> = [];
  /** Encoded requests not yet written (each is also in `waiting`, so REQUESTS_IN_FLIGHT_MAX bounds it). */
  private unsent: Uint8Array[] = [];
  private flushScheduled = false;

  get broken(): boolean {
    return this.failed !== null;
  }

  constructor(private readonly bc: BrokerConnection) {
    void bc.lost.then((err) => this.fail(err));
  }

  /**
   * Sends one request (built with its request id) and resolves with its answer. With `gather`
   * the write waits for the end of the event-loop turn so that requests made in the same turn
   * (a consume loop's acks) share one write.
   */
  request(build: (requestId: number) => Message, gather = false): Promise<Message> {
    return this.enqueue((id) => ({ bytes: encodeMessage(build(id)) }), gather);
  }

  /** Sends one request the caller encodes (given its request id); written at once. */
  requestPrepared<T>(prepare: (requestId: number) => Prepared<T>): Promise<T> {
    return this.enqueue(prepare, false);
  }

  private enqueue<T>(prepare: (requestId: number) => Prepared<T>, gather: boolean): Promise<T> {
    if (this.failed) return Promise.reject(this.failed);
    // The common case (stream open, room under the bound) sends without an async hop.
    const s = this.ready;
    if (s !== null && this.waiting.length < REQUESTS_IN_FLIGHT_MAX) {
      return this.send(s.stream, prepare, gather);
    }
    return this.requestSlowly(prepare, gather);
  }

  /** Opens the stream on first use and waits for room under REQUESTS_IN_FLIGHT_MAX. */
  private async requestSlowly<T>(
    prepare: (requestId: number) => Prepared<T>,
    gather: boolean,
  ): Promise<T> {
    if (this.opened === null) {
      this.opened = this.bc.openStream();
      this.opened.then(
        (s) => {
          this.ready = s;
          void this.read(s.frames);
        },
        (err: unknown) => this.fail(err as Error),
      );
    }
    const s = await this.opened;
    while (this.waiting.length >= REQUESTS_IN_FLIGHT_MAX && !this.failed) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    if (this.failed) throw this.failed;
    return this.send(s.stream, prepare, gather);
  }

  /** Gives the request its id, queues its answer slot and its bytes, and writes or gathers. */
  private send<T>(
    stream: TransportStream,
    prepare: (requestId: number) => Prepared<T>,
    gather: boolean,
  ): Promise<T> {
    const id = this.nextId++;
    // Encoded before its answer slot is queued: a request that cannot be encoded owes no answer.
    const { bytes, quick, finish } = prepare(id);
    const answer = new Promise<T>((resolve, reject) => {
      this.waiting.push({ id, resolve: resolve as (r: unknown) => void, reject, quick, finish });
    });
    this.unsent.push(bytes);
    if (!gather) this.flush(stream);
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush(stream);
      });
    }
    return answer;
  }

  /** Writes every unsent request in one write. */
  private flush(stream: TransportStream): void {
    const n = this.unsent.length;
    if (n === 0 || this.failed) return;
    const bytes = n === 1 ? this.unsent[0]! : Buffer.concat(this.unsent);
    this.unsent = [];
    stream.write(bytes).catch(this.writeFailed);
  }

  private readonly writeFailed = (err: unknown): void => {
    this.fail(new ConnectionLostError(this.bc.server, { cause: err }));
  };

  private async read(frames: FrameStream): Promise<void> {
    try {
      for (;;) {
        // A frame that arrived whole in its chunk (an answer usually does) is taken without an
        // await; only a used-up chunk costs one (`pull`), a frame split over chunks `next()`.
        let frame = frames.takeWhole();
        if (frame === null) {
          if (frames.exhausted) {
            if (!(await frames.pull())) throw new ConnectionLostError(this.bc.server);
            continue;
          }
          frame = await frames.next();
          if (frame === null) throw new ConnectionLostError(this.bc.server);
        }
        const msg = this.waiting[0]?.quick?.(frame.payload) ?? decodeMessage(frame.payload);
        const head = this.waiting.shift();
        this.roomWaiters.shift()?.();
        if (head === undefined)
          throw new ProtocolError(`unexpected ${msg.type} on a request stream`);
        if (msg.type === 'error') {
          head.reject(
            brokerError({
              brokerCode: msg.code ?? 'unknown',
              message: msg.message,
              retry: msg.retry,
              detail: msg.detail,
            }),
          );
          continue;
        }
        const rid = 'request_id' in msg ? msg.request_id : undefined;
        if (rid !== undefined && rid !== head.id) {
          const err = new ProtocolError(`answer for request ${rid} while ${head.id} was oldest`);
          head.reject(err);
          throw err;
        }
        if (head.finish === undefined) head.resolve(msg);
        else settleWith(head, msg);
      }
    } catch (err) {
      this.fail(
        err instanceof Error ? err : new ConnectionLostError(this.bc.server, { cause: err }),
      );
    }
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    this.unsent = [];
    for (const w of this.waiting.splice(0)) w.reject(err);
    for (const r of this.roomWaiters.splice(0)) r();
    void this.opened?.then((s) => s.stream.reset(0)).catch(() => undefined);
  }
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
