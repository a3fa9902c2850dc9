/**
 * `felix.publisher(stream, { lingerMs })`: gathers many `publish()` calls into batches, one per
 * key, sent when `lingerMs` passes (0: at the end of the turn, on the client's TurnBatcher) or a
 * batch fills; a batch then leaves through the connection's publish pipe like any `publishBatch`.
 * Each call resolves with its own offset
 * (the batch's first offset plus its index). At most PUBLISHER_PENDING_RECORDS_MAX records
 * wait to be batched; callers beyond it wait for room.
 *
 * `send()` is the same path without a promise per record (NATS's `publish`, a Kafka producer's
 * batched send): the broker still acknowledges every batch, and `flush()` waits for those acks
 * and reports the first failure among them. It answers false once PUBLISHER_UNACKED_RECORDS_HIGH
 * records or PUBLISHER_UNACKED_BYTES_HIGH payload bytes are unacknowledged (await `ready()`),
 * and refuses beyond PUBLISHER_UNACKED_RECORDS_MAX.
 *
 * A batch is one frame, so it is never gathered past PAYLOAD_BYTES_MAX (records with their
 * lengths, the name and the key): a record that would take it past starts the next batch, and
 * a record no batch can carry is refused alone, at the call, never with the records beside it.
 */
import { PUBLISH_BATCH_RECORDS_MAX } from '@felix/wire';
import { ClientClosedError, InvalidArgumentError, PublisherFullError } from './errors.js';
import {
  PAYLOAD_BYTES_MAX,
  PUBLISHER_LINGER_MS_MAX,
  PUBLISHER_BATCH_BYTES_MAX_DEFAULT,
  PUBLISHER_BATCH_RECORDS_MAX_DEFAULT,
  PUBLISHER_PENDING_RECORDS_MAX,
  PUBLISHER_UNACKED_BYTES_HIGH,
  PUBLISHER_UNACKED_RECORDS_HIGH,
  PUBLISHER_UNACKED_RECORDS_MAX,
} from './limits.js';
import { TurnBatcher } from './protocol/turn-batcher.js';
import type { PublishResult, PublisherOptions } from './types.js';
import { RECORD_LENGTH_BYTES, streamNameBytes } from './util/batch-bytes.js';

export type { PublisherOptions } from './types.js';

type SendBatch = (payloads: Uint8Array[], key: Uint8Array | undefined) => Promise<PublishResult>;

type Resolve = (r: PublishResult | PromiseLike<PublishResult>) => void;

/** Set by `capture` while `new Promise(capture)` runs: one shared executor instead of a closure
 *  and a {resolve, reject} pair per record (the publisher's per-record garbage). */
let captured: Resolve | null = null;
const capture = (resolve: Resolve): void => {
  captured = resolve;
};

const NO_OPTIONS: { key?: Uint8Array } = Object.freeze({});
/** The resolver of a record queued by `send()`: nobody waits on it. */
const UNWATCHED: Resolve = () => undefined;

class Batch {
  payloads: Uint8Array[] = [];
  /** One resolver per record; a failure resolves each with the rejected outcome. */
  resolvers: Resolve[] = [];
  bytes = 0;
  /** What the batch counts against PAYLOAD_BYTES_MAX: its records with their lengths, the
   *  stream's name and the key (see util/batch-bytes.ts). */
  frameBytes: number;
  /** Records of this batch queued by `send()`: a failure must reach `flush()` for them. */
  unwatched = 0;
  timer: ReturnType<typeof setTimeout> | null = null;
  /** Waiting for the end of the turn (`lingerMs: 0`) or already sent: never sent twice. */
  queued = false;
  sent = false;
  constructor(
    readonly key: Uint8Array | undefined,
    nameBytes: number,
  ) {
    this.frameBytes = nameBytes + (key?.byteLength ?? 0);
  }
}

/**
 * The client's publishers that hold records not yet sent or sent and not yet answered (a
 * publisher is here only while it has such records, so one made and dropped is not kept):
 * `client.close()` sends them first and waits, bounded, for their sends.
 */
export class GatheringPublishers {
  private readonly gathering = new Set<Publisher>();

  add(p: Publisher): void {
    this.gathering.add(p);
  }

  delete(p: Publisher): void {
    this.gathering.delete(p);
  }

  /**
   * Each publisher sends what it gathers and takes no more; answers the sends still out, which
   * the close waits for (bounded) before it closes connections: a routed batch first looks its
   * shard's owner up, and the close must not cut it off on the way.
   */
  closeAll(): Promise<unknown>[] {
    return [...this.gathering].flatMap((p) => p.stopTaking());
  }
}

export class Publisher {
  private readonly batches = new Map<string, Batch>();
  /** The batch without a key (also in `batches`), found without a map lookup per record. */
  private unkeyed: Batch | undefined = undefined;
  private pendingRecords = 0;
  private roomWaiters: Array<() => void> = [];
  /** Records queued (either way) whose batch is not answered yet, and their payload bytes. */
  private unacked = 0;
  private unackedBytes = 0;
  private readyWaiters: Array<() => void> = [];
  /** The first failure of a batch holding `send()` records since the last `flush()`. */
  private sendFailure: { error: unknown } | null = null;
  private inFlight = new Set<Promise<unknown>>();
  private closed = false;
  private readonly lingerMs: number;
  private readonly maxRecords: number;
  private readonly maxBytes: number;
  /** What the stream's name counts in each batch against PAYLOAD_BYTES_MAX. */
  private readonly nameBytes: number;

  constructor(
    readonly stream: string,
    private readonly sendRecords: SendBatch,
    opts: PublisherOptions,
    /** The client's end-of-turn batcher (`lingerMs: 0` sends a batch when the turn ends). */
    private readonly turn: TurnBatcher = new TurnBatcher(),
    /** The client's publishers gathering records (closed with it). */
    private readonly gatherers?: GatheringPublishers,
  ) {
    this.lingerMs = opts.lingerMs ?? 1;
    this.maxRecords = opts.maxBatchRecords ?? PUBLISHER_BATCH_RECORDS_MAX_DEFAULT;
    this.maxBytes = opts.maxBatchBytes ?? PUBLISHER_BATCH_BYTES_MAX_DEFAULT;
    this.nameBytes = streamNameBytes(stream);
    checkPublisherOptions(this.lingerMs, this.maxRecords, this.maxBytes);
  }

  /** Queues one record; resolves with its offset once its batch is acknowledged. */
  publish(data: Uint8Array, opts: { key?: Uint8Array } = NO_OPTIONS): Promise<PublishResult> {
    if (this.closed) return Promise.reject(new ClientClosedError());
    const refused = this.uncarriable(data, opts.key);
    if (refused !== null) return Promise.reject(refused);
    // The common case queues without an await of its own: one promise per record, no more.
    if (this.pendingRecords < PUBLISHER_PENDING_RECORDS_MAX) return this.enqueue(data, opts);
    return this.publishWhenRoom(data, opts);
  }

  private async publishWhenRoom(
    data: Uint8Array,
    opts: { key?: Uint8Array },
  ): Promise<PublishResult> {
    while (this.pendingRecords >= PUBLISHER_PENDING_RECORDS_MAX) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
      if (this.closed) throw new ClientClosedError();
    }
    return this.enqueue(data, opts);
  }

  /**
   * Queues one record without a promise of its own. The broker acknowledges it with its batch;
   * `flush()` waits for that and throws the first failure of such a batch. Answers false when
   * PUBLISHER_UNACKED_RECORDS_HIGH records or PUBLISHER_UNACKED_BYTES_HIGH bytes are
   * unacknowledged: await `ready()` before more. (A window of a few MiB keeps a connection busy;
   * a larger one only holds encoded batches longer, which costs the process major GCs.)
   * Throws PublisherFullError at PUBLISHER_UNACKED_RECORDS_MAX (a caller ignoring false).
   */
  send(data: Uint8Array, opts: { key?: Uint8Array } = NO_OPTIONS): boolean {
    if (this.closed) throw new ClientClosedError();
    if (this.unacked >= PUBLISHER_UNACKED_RECORDS_MAX)
      throw new PublisherFullError(this.stream, PUBLISHER_UNACKED_RECORDS_MAX);
    const refused = this.uncarriable(data, opts.key);
    if (refused !== null) throw refused;
    this.enqueueRecord(data, opts, UNWATCHED);
    return this.hasRoom();
  }

  /** The refusal of a record no batch can carry (not bytes, or over PAYLOAD_BYTES_MAX alone),
   *  else null. Typed Uint8Array, but a JavaScript caller can pass anything: a string's
   *  undefined byteLength would pass the size check and fail later, far from the call. */
  private uncarriable(data: Uint8Array, key: Uint8Array | undefined): InvalidArgumentError | null {
    if (!(data instanceof Uint8Array)) return notPublisherBytes(data, 'data');
    if (key !== undefined && !(key instanceof Uint8Array)) return notPublisherBytes(key, 'key');
    const alone = this.nameBytes + (key?.byteLength ?? 0) + data.byteLength + RECORD_LENGTH_BYTES;
    if (alone <= PAYLOAD_BYTES_MAX) return null;
    return new InvalidArgumentError(
      `a record of ${data.byteLength} bytes exceeds what one publish carries (${PAYLOAD_BYTES_MAX} bytes with its stream name and key)`,
    );
  }

  private hasRoom(): boolean {
    return (
      this.unacked < PUBLISHER_UNACKED_RECORDS_HIGH &&
      this.unackedBytes < PUBLISHER_UNACKED_BYTES_HIGH
    );
  }

  /** Resolves once the unacknowledged records and bytes are below their bounds again. */
  ready(): Promise<void> {
    if (this.hasRoom() || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  private enqueue(data: Uint8Array, opts: { key?: Uint8Array }): Promise<PublishResult> {
    const result = new Promise<PublishResult>(capture);
    const resolve = captured!;
    captured = null;
    this.enqueueRecord(data, opts, resolve);
    return result;
  }

  private enqueueRecord(data: Uint8Array, opts: { key?: Uint8Array }, resolve: Resolve): void {
    // '' is the unkeyed batch; a keyed one (an empty key included, which routes by the hash of
    // no bytes) is 'k' + hex, so the two never share a batch.
    const id = opts.key === undefined ? '' : `k${Buffer.from(opts.key).toString('hex')}`;
    let batch = id === '' ? this.unkeyed : this.batches.get(id);
    const cost = data.byteLength + RECORD_LENGTH_BYTES;
    // A batch is one frame: a record that would take it past the bound goes in the next one
    // (`publishBatch` refuses such a batch whole, failing records each valid on its own).
    if (batch !== undefined && batch.frameBytes + cost > PAYLOAD_BYTES_MAX) {
      this.sendBatch(id, batch);
      batch = undefined;
    }
    if (!batch) {
      batch = new Batch(opts.key, this.nameBytes);
      if (this.batches.size === 0) this.gatherers?.add(this);
      this.batches.set(id, batch);
      if (id === '') this.unkeyed = batch;
    }
    const b = batch;
    b.resolvers.push(resolve);
    if (resolve === UNWATCHED) b.unwatched++;
    b.payloads.push(data);
    b.bytes += data.byteLength;
    b.frameBytes += cost;
    this.pendingRecords++;
    this.unacked++;
    this.unackedBytes += data.byteLength;
    if (b.payloads.length >= this.maxRecords || b.bytes >= this.maxBytes) this.sendBatch(id, b);
    else if (this.lingerMs === 0) {
      if (!b.queued) {
        b.queued = true;
        this.turn.atTurnEnd(() => this.sendBatch(id, b));
      }
    } else if (!b.timer) b.timer = setTimeout(() => this.sendBatch(id, b), this.lingerMs);
  }

  private settled(batch: Batch): void {
    this.unacked -= batch.payloads.length;
    this.unackedBytes -= batch.bytes;
    if (this.readyWaiters.length > 0 && this.hasRoom())
      for (const w of this.readyWaiters.splice(0)) w();
  }

  private sendBatch(id: string, batch: Batch): void {
    if (batch.sent) return;
    batch.sent = true;
    if (batch.timer) clearTimeout(batch.timer);
    batch.timer = null;
    if (this.batches.get(id) === batch) this.batches.delete(id);
    if (this.unkeyed === batch) this.unkeyed = undefined;
    if (batch.payloads.length === 0) {
      this.leftIdle();
      return;
    }
    this.pendingRecords -= batch.payloads.length;
    for (const w of this.roomWaiters.splice(0)) w();
    const sent = this.sendRecords(batch.payloads, batch.key).then(
      (r) => {
        this.settled(batch);
        const resolvers = batch.resolvers;
        if (batch.unwatched === resolvers.length) return;
        const first = r.offset;
        for (let i = 0; i < resolvers.length; i++) {
          const resolve = resolvers[i]!;
          if (resolve !== UNWATCHED)
            resolve({ offset: first === null ? null : first + i, shard: r.shard });
        }
      },
      (err: unknown) => {
        this.settled(batch);
        if (batch.unwatched > 0) this.sendFailure ??= { error: err };
        if (batch.unwatched === batch.resolvers.length) return;
        const failed = Promise.reject(err);
        failed.catch(() => undefined); // observed through each record's own promise
        for (const resolve of batch.resolvers) resolve(failed);
      },
    );
    this.inFlight.add(sent);
    void sent.finally(() => {
      this.inFlight.delete(sent);
      this.leftIdle();
    });
  }

  /** Nothing gathering and nothing sent unanswered: the client's close need not wait for it. */
  private leftIdle(): void {
    if (this.batches.size === 0 && this.inFlight.size === 0) this.gatherers?.delete(this);
  }

  /**
   * Sends every waiting batch now and resolves once all sent batches are answered. Throws the
   * first failure of a batch holding `send()` records since the last flush (an acked publish
   * whose connection died is an OutcomeUnknownError: it may or may not have been appended).
   */
  async flush(): Promise<void> {
    for (const [id, b] of [...this.batches]) this.sendBatch(id, b);
    await Promise.allSettled([...this.inFlight]);
    const failure = this.sendFailure;
    this.sendFailure = null;
    if (failure !== null) throw failure.error;
  }

  /**
   * Refuses further publishes (ClientClosedError, from the moment it is called), then flushes
   * what it took, throwing what the flush threw.
   */
  async close(): Promise<void> {
    this.stopTaking();
    await this.flush();
  }

  /** @internal Refuses further publishes and sends every waiting batch now (a close); answers
   *  the sends still out. */
  stopTaking(): Promise<unknown>[] {
    this.closed = true;
    for (const [id, b] of [...this.batches]) this.sendBatch(id, b);
    // Callers waiting for room were never taken: they fail with ClientClosedError.
    for (const w of this.roomWaiters.splice(0)) w();
    for (const w of this.readyWaiters.splice(0)) w();
    return [...this.inFlight];
  }
}

/** Refuses options a publisher cannot keep (NaN, fractions, a batch no frame carries). */
function checkPublisherOptions(lingerMs: number, maxRecords: number, maxBytes: number): void {
  if (!(Number.isFinite(lingerMs) && lingerMs >= 0 && lingerMs <= PUBLISHER_LINGER_MS_MAX)) {
    throw new InvalidArgumentError(
      `lingerMs must be a number of ms from 0 to ${PUBLISHER_LINGER_MS_MAX}, got ${lingerMs}`,
    );
  }
  if (
    !(Number.isInteger(maxRecords) && maxRecords >= 1 && maxRecords <= PUBLISH_BATCH_RECORDS_MAX)
  ) {
    throw new InvalidArgumentError(
      `maxBatchRecords must be a whole number from 1 to ${PUBLISH_BATCH_RECORDS_MAX} (what one publish carries), got ${maxRecords}`,
    );
  }
  if (!(Number.isSafeInteger(maxBytes) && maxBytes >= 1)) {
    throw new InvalidArgumentError(`maxBatchBytes must be a whole number >= 1, got ${maxBytes}`);
  }
}

/** A publisher record's data or key that is not bytes (its API takes Uint8Array only). */
function notPublisherBytes(value: unknown, argument: 'data' | 'key'): InvalidArgumentError {
  const what = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
  return new InvalidArgumentError(
    `the publisher's ${argument} must be a Uint8Array (a Buffer is one; encode a string first), got ${what}`,
  );
}
