/**
 * The publish stream of one connection: pipelined publishes (at most the broker's `window`
 * unanswered), `stream_shards` queries, and the reader of their answers. Every frame leaves
 * through the stream's one writer at the end of the turn, so publishes to one stream and key
 * reach the broker in call order whether acked or not: a publish that goes in a frame of its own
 * (unacked, a caller's batch) first seals the batch this turn gathers for that stream and key.
 * Single publishes (`gather`) to one stream and key made in one turn go as one batch frame (one
 * append at the broker), acked ones with one ack (each caller still gets its own offset), unacked
 * ones with one promise settled once the frame is written. An acked gather and an unacked one for
 * the same stream and key seal each other, so the frames keep call order. When a window slot is
 * not free an acked publish waits for one, and may then leave after later calls.
 */
import {
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_ACKED,
  type Message,
  decodeMessage,
  decodePublishAck,
  encodeMessage,
  encodePublishBatch,
} from '@felix/wire';
import { ProtocolError, TimeoutError, ackRefusalOf, refusalOf } from '../errors.js';
import {
  PUBLISH_COALESCE_BYTES_MAX,
  PUBLISH_COALESCE_RECORDS_MAX,
  TURN_GATHER_BYTES_MAX,
} from '../limits.js';
import { withTimeout } from './auth.js';
import type { FrameStream, InFrame } from './frame-stream.js';
import { type Negotiated, has } from './negotiation.js';
import type { RequestTable } from './request-table.js';
import type { StreamWriter } from './stream-writer.js';
import type { TurnBatcher } from './turn-batcher.js';

export type PublishAnswer = { offset: number | null | undefined };

/** Makes an acked caller's answer from its offset (undefined: the broker sent none). */
export type AnswerShape = (offset: number | undefined) => PublishAnswer;

export interface PublishCall {
  key?: Uint8Array;
  ack: boolean;
  gather?: boolean;
  timeoutMs: number;
  /** Acked: what the call resolves with (default `{ offset }`), so a caller that reshapes the
   *  answer needs no promise of its own on top of this one. */
  shape?: AnswerShape;
}

/** Publishes to one stream and key waiting for the end of this turn to go out together. */
interface Gather {
  /** Unacked gathers take no window slot and no request id. */
  ack: boolean;
  stream: string;
  key: Uint8Array | undefined;
  payloads: Uint8Array[];
  bytes: number;
  /** The ack deadline of every caller, kept by one timer for the batch (the shortest asked). */
  timeoutMs: number;
  /** Acked: the first offset of the frame, shared; each caller's promise derives from it. */
  acked: Shared<number | undefined> | undefined;
  /** Acked: each caller's first record in `payloads` and its shape, in call order (the derived
   *  promises settle in the order they were made, so `answered` walks these). */
  indices: number[];
  shapes: AnswerShape[];
  answered: number;
  /** Acked: the one reaction every caller's promise runs, made once per gather. */
  next: (first: number | undefined) => PublishAnswer;
  /** Unacked: the one promise every caller shares, settled once the frame is written. */
  written: Shared<PublishAnswer> | undefined;
}

/** One promise for every caller of a frame, and how to settle it. */
interface Shared<T> {
  promise: Promise<T>;
  resolve(r: T): void;
  reject(err: unknown): void;
}

export interface PipeParts {
  server: string;
  tenant: string;
  namespace: string;
  frames: FrameStream;
  negotiated: Negotiated;
  table: RequestTable;
  writer: StreamWriter;
  turn: TurnBatcher;
}

export class PublishPipe {
  private windowWaiters: Array<() => void> = [];
  /** Publish frames sent or gathering whose answer has not come: bounded by the window. */
  private publishesInFlight = 0;
  private readonly gathers = new Map<string, Gather>();
  /** Payload bytes of the open gathers: past TURN_GATHER_BYTES_MAX they are all sealed now. */
  private gatheredBytes = 0;
  private gatherScheduled = false;
  private failure: Error | null = null;
  /** The stream of the last publish: `drain` asks about it (publishing there is allowed). */
  private lastStream: string | undefined;
  /** `drain` callers waiting for the acked publishes in flight to be answered. */
  private idleWaiters: Array<() => void> = [];
  private readonly binary: boolean;

  constructor(private readonly p: PipeParts) {
    this.binary = has(p.negotiated.flags, FLAG_BINARY_PUBLISH_ACKED);
  }

  /** Fails what waits here for a window slot or the end of the turn (the table fails the rest). */
  fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.publishesInFlight = 0;
    for (const g of this.gathers.values()) rejectAll(g, err);
    this.gathers.clear();
    this.gatheredBytes = 0;
    for (const w of this.windowWaiters.splice(0)) w();
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Resolves once the broker has read every publish made before this call and has answered the
   * acked ones: this turn's gathers are sent now, then a `stream_shards` query follows them on
   * the publish stream, whose answers come in order. What `close()` waits for, so publishes a
   * caller did not await (unacked ones above all) are not dropped with the connection.
   */
  async drain(): Promise<void> {
    if (this.failure || this.lastStream === undefined) return;
    this.sendGathers();
    // A refused query (that stream's permission revoked) still leaves the acks to wait for.
    await this.streamShards(this.lastStream).catch(() => undefined);
    while (this.publishesInFlight > 0 && !this.failure)
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Publishes one batch; resolves with the first offset (when the broker sent one), or fails
   * with a TimeoutError of unknown outcome when no ack (or, unacked, no write) came within
   * `timeoutMs`. Gathered callers share their batch's timer, started when it is sent.
   */
  publish(stream: string, payloads: Uint8Array[], opts: PublishCall): Promise<PublishAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    this.lastStream = stream;
    if (opts.gather === true) {
      if (!opts.ack) return this.gatherUnacked(stream, payloads, opts.key, opts.timeoutMs);
      if (this.binary) return this.gather(stream, payloads, opts.key, opts.timeoutMs, opts.shape);
    }
    // A frame of its own goes after what this turn gathered for the same stream and key.
    if (this.gathers.size > 0) {
      const id = gatherId(stream, opts.key);
      const g = this.gathers.get(id);
      if (g !== undefined) this.sendGather(id, g);
    }
    if (!opts.ack) {
      this.p.writer.push(
        encodePublishBatch(
          {
            tenantId: this.p.tenant,
            namespace: this.p.namespace,
            stream,
            payloads,
            ...(opts.key !== undefined ? { key: opts.key } : {}),
          },
          this.p.writer.pool?.take,
        ),
      );
      return this.p.writer.whenWritten(opts.timeoutMs, stream);
    }
    const answer = ackWithin(this.publishAlone(stream, payloads, opts.key), opts.timeoutMs, stream);
    const shape = opts.shape;
    return shape === undefined ? answer : answer.then((r) => shape(r.offset ?? undefined));
  }

  /** The common case joins this turn's batch with no promise but the caller's own. */
  private gather(
    stream: string,
    payloads: Uint8Array[],
    key: Uint8Array | undefined,
    timeoutMs: number,
    shape: AnswerShape = plainAnswer,
  ): Promise<PublishAnswer> {
    const bytes = bytesOf(payloads);
    const id = gatherId(stream, key);
    const g = this.gathers.get(id);
    if (g !== undefined) {
      if (g.ack && fits(g, payloads.length, bytes))
        return this.joined(g, payloads, bytes, timeoutMs, shape);
      this.sendGather(id, g);
    }
    if (this.publishesInFlight < this.p.negotiated.window) {
      // A slot is free: open the batch in this call, so the rest of the turn joins it.
      this.publishesInFlight++;
      const opened = this.openGather(id, true, stream, key, timeoutMs);
      return this.joined(opened, payloads, bytes, timeoutMs, shape);
    }
    // Waiting for a window slot has a timer of its own.
    return ackWithin(
      this.gatherAfterWindow(id, stream, { payloads, bytes, shape }, key, timeoutMs),
      timeoutMs,
      stream,
    );
  }

  private async publishAlone(
    stream: string,
    payloads: Uint8Array[],
    key: Uint8Array | undefined,
  ): Promise<PublishAnswer> {
    await this.reserveWindow();
    const requestId = this.p.table.nextId();
    const keyed = key !== undefined ? { key } : {};
    const { tenant, namespace } = this.p;
    let frame: Uint8Array;
    try {
      frame = this.binary
        ? encodePublishBatch(
            {
              ...{ tenantId: tenant, namespace, stream, payloads, ...keyed },
              requestId,
              ackMode: 'per_batch',
            },
            this.p.writer.pool?.take,
          )
        : encodeMessage({
            ...{ type: 'publish_batch', tenant_id: tenant, namespace, stream, payloads, ...keyed },
            request_id: requestId,
            ack: 'per_batch',
          });
    } catch (err) {
      // Refused before anything was sent: its window slot goes back, and no answer is owed.
      this.publishDone();
      throw err;
    }
    const answer = this.answerOf(requestId, stream);
    this.p.writer.push(frame);
    return answer;
  }

  private answerOf(requestId: number, stream: string): Promise<PublishAnswer> {
    return new Promise<PublishAnswer>((resolve, reject) => {
      this.p.table.add(requestId, {
        resolve: resolve as (v: unknown) => void,
        reject,
        publishTo: stream,
      });
    });
  }

  /** Waits for a window slot and takes it. */
  private async reserveWindow(): Promise<void> {
    while (this.publishesInFlight >= this.p.negotiated.window && !this.failure) {
      await new Promise<void>((resolve) => this.windowWaiters.push(resolve));
    }
    if (this.failure) throw this.failure;
    this.publishesInFlight++;
  }

  private publishDone(): void {
    this.publishesInFlight--;
    this.windowWaiters.shift()?.();
    if (this.publishesInFlight === 0 && this.idleWaiters.length > 0)
      for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Joins the batch this turn gathers for `stream` and `key` once a window slot is free, opening
   * it when no other caller did meanwhile.
   */
  private async gatherAfterWindow(
    id: string,
    stream: string,
    call: { payloads: Uint8Array[]; bytes: number; shape: AnswerShape },
    key: Uint8Array | undefined,
    timeoutMs: number,
  ): Promise<PublishAnswer> {
    const { payloads, bytes, shape } = call;
    await this.reserveWindow();
    let g = this.gathers.get(id);
    if (g && (!g.ack || !fits(g, payloads.length, bytes))) this.sendGather(id, g);
    else if (g) this.publishDone(); // another caller opened one while we waited: give ours back
    if (!g || !this.gathers.has(id)) g = this.openGather(id, true, stream, key, timeoutMs);
    return this.joined(g, payloads, bytes, timeoutMs, shape);
  }

  /** Joins an acked gather, then seals every gather if the turn holds too much. */
  private joined(
    g: Gather,
    payloads: Uint8Array[],
    bytes: number,
    timeoutMs: number,
    shape: AnswerShape,
  ): Promise<PublishAnswer> {
    const answer = join(g, payloads, bytes, timeoutMs, shape);
    this.gathered(bytes);
    return answer;
  }

  /** Counts bytes joined to a gather; past the turn's bound every gather goes to the writer
   *  now (each keeps call order for its stream and key: its frame goes before any later one). */
  private gathered(bytes: number): void {
    this.gatheredBytes += bytes;
    if (this.gatheredBytes <= TURN_GATHER_BYTES_MAX) return;
    for (const [id, g] of this.gathers) this.sendGather(id, g);
  }

  /**
   * Opens a batch on the window slot the caller took; it is sealed at the end of the turn, so
   * publishes made together share one frame, one append and one ack.
   */
  private openGather(
    id: string,
    ack: boolean,
    stream: string,
    key: Uint8Array | undefined,
    timeoutMs: number,
  ): Gather {
    const g: Gather = {
      ...{ ack, stream, key, payloads: [], bytes: 0, timeoutMs },
      ...{ acked: ack ? shared() : undefined, indices: [], shapes: [], answered: 0 },
      written: ack ? undefined : shared(),
      next: plainAnswer,
    };
    g.next = (first) => answerOf(g, first);
    this.gathers.set(id, g);
    if (!this.gatherScheduled) {
      this.gatherScheduled = true;
      this.p.turn.atTurnEnd(this.sendGathers);
    }
    return g;
  }

  private readonly sendGathers = (): void => {
    this.gatherScheduled = false;
    for (const [id, g] of this.gathers) this.sendGather(id, g);
  };

  /**
   * Unacked single publishes join this turn's frame for their stream and key (sealing an acked
   * batch gathering there first, for call order); they take no window slot, as a frame of their
   * own takes none. Every caller of the frame shares its one promise.
   */
  private gatherUnacked(
    stream: string,
    payloads: Uint8Array[],
    key: Uint8Array | undefined,
    timeoutMs: number,
  ): Promise<PublishAnswer> {
    const bytes = bytesOf(payloads);
    const id = gatherId(stream, key);
    let g = this.gathers.get(id);
    if (g !== undefined && (g.ack || !fits(g, payloads.length, bytes))) {
      this.sendGather(id, g);
      g = undefined;
    }
    g ??= this.openGather(id, false, stream, key, timeoutMs);
    // Copied at the call: the caller may reuse its buffer once publish() returns.
    // Copied at the call: the caller may reuse its buffer once publish() returns.
    for (const p of payloads) g.payloads.push(p.slice());
    g.bytes += bytes;
    if (timeoutMs < g.timeoutMs) g.timeoutMs = timeoutMs;
    const written = g.written!.promise;
    this.gathered(bytes);
    return written;
  }

  /**
   * Queues a gathered batch: acked, on the window slot its opener took, starting its ack timer;
   * unacked, settling its callers' promise once the writer has written it.
   */
  private sendGather(id: string, g: Gather): void {
    this.gathers.delete(id);
    this.gatheredBytes -= g.bytes;
    if (this.failure) {
      rejectAll(g, this.failure);
      return;
    }
    if (!g.ack) {
      this.p.writer.push(this.gatherFrame(g));
      const w = g.written!;
      this.p.writer.whenWritten(g.timeoutMs, g.stream).then(w.resolve, w.reject);
      return;
    }
    const requestId = this.p.table.nextId();
    const acked = g.acked!;
    // An ack that never comes is an unknown outcome, not a hang: one timer for the batch. The
    // request stays pending (its window slot taken) until the ack or the connection's loss.
    const timer = setTimeout(() => {
      const what = `the ack of a publish to ${g.stream}`;
      acked.reject(new TimeoutError(what, g.timeoutMs, 'unknown_outcome'));
    }, g.timeoutMs);
    this.p.table.add(requestId, {
      resolve: (r) => {
        clearTimeout(timer);
        acked.resolve((r as PublishAnswer).offset ?? undefined);
      },
      reject: (err) => {
        clearTimeout(timer);
        acked.reject(err);
      },
      publishTo: g.stream,
    });
    this.p.writer.push(this.gatherFrame(g, requestId));
  }

  /** A gather's publish frame: acked (one ack for the batch) when it has a request id. */
  private gatherFrame(g: Gather, requestId?: number): Uint8Array {
    return encodePublishBatch(
      {
        tenantId: this.p.tenant,
        namespace: this.p.namespace,
        stream: g.stream,
        payloads: g.payloads,
        ...(g.key !== undefined ? { key: g.key } : {}),
        ...(requestId !== undefined ? { requestId, ackMode: 'per_batch' as const } : {}),
      },
      this.p.writer.pool?.take,
    );
  }

  /** The shard count of a stream (0: unknown stream) and its routing. */
  async streamShards(stream: string): Promise<{ shards: number; routing: 'modulo' | 'jump_hash' }> {
    if (this.failure) throw this.failure;
    const requestId = this.p.table.nextId();
    const answer = new Promise<Message>((resolve, reject) => {
      this.p.table.add(requestId, {
        resolve: resolve as (v: unknown) => void,
        reject,
        publishTo: undefined,
      });
    });
    this.p.writer.push(
      encodeMessage({
        type: 'stream_shards',
        tenant_id: this.p.tenant,
        namespace: this.p.namespace,
        stream,
        request_id: requestId,
      }),
    );
    const msg = await answer;
    if (msg.type !== 'stream_shards_view')
      throw new ProtocolError(`expected stream_shards_view, got ${msg.type}`);
    return { shards: msg.shards, routing: msg.routing ?? 'modulo' };
  }

  /**
   * Reads the publish stream's answers until it ends; throws what ends the connection. Over the
   * multiplexer each answer is settled in the turn its chunk is read (no promise per frame).
   */
  readAnswers(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.p.frames.forEachFrame(this.onAnswer, (err) => (err === null ? resolve() : reject(err)));
    });
  }

  private readonly onAnswer = (frame: InFrame): void => {
    if (frame.flags & FLAG_BINARY_PUBLISH_ACK) {
      const ack = decodePublishAck(frame.flags, frame.payload);
      const p = this.take(ack.requestId);
      if (!p) throw new ProtocolError(`ack for unknown request ${ack.requestId}`);
      if (ack.status === 'ok') p.resolve({ offset: ack.offset });
      else
        p.reject(ackRefusalOf(ack, `stream:${this.p.tenant}/${this.p.namespace}/${p.publishTo}`));
      return;
    }
    if (frame.flags !== 0)
      throw new ProtocolError(`unexpected frame flags 0x${frame.flags.toString(16)}`);
    const msg = decodeMessage(frame.payload);
    if (msg.type === 'error') throw refusalOf(msg);
    const id =
      'request_id' in msg && typeof msg.request_id === 'number' ? msg.request_id : undefined;
    const p = id !== undefined ? this.take(id) : undefined;
    if (!p) throw new ProtocolError(`unexpected ${msg.type} on the publish stream`);
    if (msg.type === 'publish_error') p.reject(refusalOf(msg));
    else if (msg.type === 'publish_ok') p.resolve({ offset: msg.offset });
    else p.resolve(msg);
  };

  private take(id: number) {
    const p = this.p.table.take(id);
    if (p?.publishTo !== undefined) this.publishDone();
    return p;
  }
}

/** The gather of a stream and key: '' joins them, never ambiguous (a stream name has no NUL). */
function gatherId(stream: string, key: Uint8Array | undefined): string {
  return key === undefined ? stream : `${stream}\u0000${Buffer.from(key).toString('latin1')}`;
}

function fits(g: Gather, records: number, bytes: number): boolean {
  return (
    g.payloads.length + records <= PUBLISH_COALESCE_RECORDS_MAX &&
    g.bytes + bytes <= PUBLISH_COALESCE_BYTES_MAX
  );
}

function rejectAll(g: Gather, err: Error): void {
  g.acked?.reject(err);
  g.written?.reject(err);
}

function shared<T>(): Shared<T> {
  let resolve!: Shared<T>['resolve'];
  let reject!: Shared<T>['reject'];
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function join(
  g: Gather,
  payloads: Uint8Array[],
  bytes: number,
  timeoutMs: number,
  shape: AnswerShape,
): Promise<PublishAnswer> {
  g.indices.push(g.payloads.length);
  g.shapes.push(shape);
  for (const p of payloads) g.payloads.push(p.slice());
  g.bytes += bytes;
  if (timeoutMs < g.timeoutMs) g.timeoutMs = timeoutMs;
  // No promise or closure of the caller's own beyond this reaction: reactions to one promise
  // run in the order they were added, so the k-th to run is the k-th caller's.
  return g.acked!.promise.then(g.next);
}

/** The next caller's answer of an acked gather whose first offset is `first`. */
function answerOf(g: Gather, first: number | undefined): PublishAnswer {
  const k = g.answered++;
  return g.shapes[k]!(first === undefined ? undefined : first + g.indices[k]!);
}

function plainAnswer(offset: number | undefined): PublishAnswer {
  return { offset };
}

/** `p`, or a TimeoutError of unknown outcome once `ms` pass: a publish's ack that never came. */
function ackWithin<T>(p: Promise<T>, ms: number, stream: string): Promise<T> {
  return withTimeout(p, ms, `the ack of a publish to ${stream}`, 'unknown_outcome');
}

/** The payloads' bytes together. */
function bytesOf(payloads: readonly Uint8Array[]): number {
  let bytes = 0;
  for (const p of payloads) bytes += p.byteLength;
  return bytes;
}
