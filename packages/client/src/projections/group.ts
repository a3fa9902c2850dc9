/**
 * `felix.group(stream, group, { shard })`: a consumer group on one shard of a durable stream.
 * `consume()` long-polls (a poll holds a stream of its own while it waits; idle poll streams are
 * reused) and yields GroupMessages to ack,
 * nack (optionally delayed), extend or dead-letter; settles go over the request stream. The
 * group is at least once: a record can be delivered again after a lapse, a nack, a redrive or a
 * broker restart, and `attempts` says which delivery a message is.
 */
import type { TransportStream } from '@felix/transport';
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_GROUP_ADMIN,
  FEATURE_GROUP_CLAIM_CONTROL,
  FEATURE_GROUP_CONSUMER,
  FEATURE_GROUP_DEAD_LETTERS,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_RECORD_TIMESTAMPS,
  FLAG_BINARY_GROUP_RECORDS,
  type Message,
  decodeGroupRecords,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import {
  ConnectionLostError,
  InvalidArgumentError,
  ProtocolError,
  brokerError,
} from '../errors.js';
import {
  GROUP_ACK_BATCHES_IN_FLIGHT_MAX,
  GROUP_ACK_BATCH_OFFSETS_MAX,
  GROUP_NACK_BATCH_OFFSETS_MAX,
  GROUP_CONSUMER_NAME_BYTES_MAX,
  GROUP_CONSUME_POLLS_AHEAD_MAX,
  GROUP_CONSUME_QUICK_BATCH_MS,
  GROUP_POLL_RECORDS_DEFAULT,
  GROUP_POLL_STREAMS_IDLE_MAX,
  GROUP_POLL_WAIT_MS_DEFAULT,
} from '../limits.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import type { FrameStream } from '../protocol/frame-stream.js';
import { type ProjectionHost, requireFeature } from './host.js';
import { channelOf } from './request-channel.js';

export interface GroupOptions {
  /** The stream shard this group reads (default 0). */
  shard?: number;
  /**
   * A name for this consumer (1–128 bytes), stable across its restarts: claims handed to it are
   * its own, and a new connection under the same name reclaims them (see `reclaim`).
   */
  consumer?: string;
  /**
   * With `consumer`: the first poll on each connection reclaims the claims this name still holds
   * on older connections (a restarted worker gets its in-flight records back at once, each as a
   * new delivery, instead of after their visibility timeout). Default true.
   */
  reclaim?: boolean;
  /**
   * Each message carries `timestampMicros`, its record's append time. Such polls are answered
   * as JSON (the binary answer cannot carry times). Default false.
   */
  timestamps?: boolean;
}

export interface PollOptions {
  /** Records per poll (the broker caps it at 1,000). */
  max?: number;
  /** Long-poll wait when nothing is ready (the broker caps it). */
  waitMs?: number;
  /** Claim length for the records handed out (default: the broker's). */
  visibilityMs?: number;
  signal?: AbortSignal;
}

export interface GroupInfo {
  /** Durable position (every offset below it is finished); undefined if never committed. */
  committed: number | undefined;
  tail: number;
  inFlight: number;
  owed: number;
  deadLetters: number;
}

type GroupAnswer<T extends Message['type']> = Extract<Message, { type: T }>;

/** One delivery of one record. */
export class GroupMessage {
  constructor(
    private readonly group: Group,
    readonly offset: number,
    readonly payload: Uint8Array,
    /** Deliveries of this record including this one. */
    readonly attempts: number,
    /** Records retention removed just before this one, before the group reached them. */
    readonly skippedBefore = 0,
    /** When the record was appended (µs since the epoch), for a group made with
     *  `timestamps: true` on a broker that sends it; undefined otherwise. */
    readonly timestampMicros?: number,
  ) {}

  /** Finishes the record; the group's position moves once every lower record is finished. */
  ack(): Promise<void> {
    return this.group.ack(this.offset);
  }

  /** Hands the record back: redelivered now, or after `delayMs` (it stays in flight meanwhile). */
  nack(opts: { delayMs?: number } = {}): Promise<void> {
    return this.group.nack(this.offset, this.attempts, opts.delayMs);
  }

  /** Keeps the claim for `ms` more; resolves with the visibility the broker granted. */
  async extend(ms: number): Promise<number> {
    const msg = await this.group.settle('group_extend', this.offset, {
      attempts: this.attempts,
      extend_ms: ms,
    });
    if (msg.type !== 'group_extended') throw new ProtocolError(`expected group_extended`);
    return msg.visible_ms;
  }

  /** Gives up on the record: recorded as a dead letter, then finished. */
  deadLetter(): Promise<void> {
    return this.group.settle('group_dead_letter', this.offset).then(() => undefined);
  }
}

interface PollStream {
  stream: TransportStream;
  frames: FrameStream;
}

interface PendingAck {
  offset: number;
  resolve(): void;
  reject(err: Error): void;
}

/** One nack waiting for its batch's answer. */
interface PendingNack {
  offset: number;
  /** The delivery it names (a claim for another one is not handed back). */
  attempts: number;
  resolve(): void;
  reject(err: Error): void;
}

/** Nacks made in one turn on `bc` with one delay, sent together at the turn's end. */
interface NackBatch {
  bc: BrokerConnection;
  delayMs: number | undefined;
  items: PendingNack[];
  sent: boolean;
}

interface AckBatch {
  bc: BrokerConnection;
  items: PendingAck[];
  sent: boolean;
  /** Its turn ended while GROUP_ACK_BATCHES_IN_FLIGHT_MAX batches were unanswered: it keeps
   *  gathering and goes when one is answered (or once it is full). */
  held: boolean;
}

export class Group {
  readonly shard: number;
  /** The named consumer this group polls as (undefined: anonymous). */
  readonly consumerName: string | undefined;
  private readonly reclaim: boolean;
  /** Polls offer FEATURE_RECORD_TIMESTAMPS (messages carry their append time). */
  private readonly timestamps: boolean;
  /** The connection whose first poll asked to reclaim (each connection asks once). */
  private reclaimedOn: BrokerConnection | undefined;
  private pollPool: { bc: BrokerConnection; idle: PollStream[] } | undefined;
  private nextPollId = 1;
  /** Acks made this turn on `bc`, sent together at its end (bounded per request by
   *  GROUP_ACK_BATCH_OFFSETS_MAX; the caller's own messages bound the list). */
  private acks: AckBatch | undefined;
  /** `group_ack_batch` requests sent and not yet answered. */
  private ackBatchesOut = 0;
  /** Nacks made this turn, by delay (a batch carries one), sent together at its end. */
  private readonly nacks = new Map<number | undefined, NackBatch>();

  constructor(
    private readonly host: ProjectionHost,
    readonly stream: string,
    readonly name: string,
    opts: GroupOptions = {},
  ) {
    if (stream === '' || name === '')
      throw new InvalidArgumentError('stream and group names must not be empty');
    this.shard = opts.shard ?? 0;
    if (!Number.isInteger(this.shard) || this.shard < 0)
      throw new InvalidArgumentError('shard must be a non-negative integer');
    this.consumerName = opts.consumer;
    if (this.consumerName !== undefined) {
      const bytes = new TextEncoder().encode(this.consumerName).length;
      if (bytes === 0 || bytes > GROUP_CONSUMER_NAME_BYTES_MAX)
        throw new InvalidArgumentError(
          `a consumer name is 1..${GROUP_CONSUMER_NAME_BYTES_MAX} bytes`,
        );
    }
    this.reclaim = this.consumerName !== undefined && opts.reclaim !== false;
    this.timestamps = opts.timestamps === true;
  }

  private scope(bc: BrokerConnection) {
    const s = bc.scope;
    return {
      tenant_id: s.tenant,
      namespace: s.namespace,
      stream: this.stream,
      shard: this.shard,
      group: this.name,
    };
  }

  /** Polls until records are ready or the wait ends; may resolve empty. */
  async poll(opts: PollOptions = {}): Promise<GroupMessage[]> {
    const bc = await this.host.connection(opts.signal);
    requireFeature(bc, FEATURE_CONSUMER_GROUP, 'consumer groups');
    if (this.consumerName !== undefined)
      requireFeature(bc, FEATURE_GROUP_CONSUMER, 'named consumers');
    // The first poll on a connection reclaims; polls already in flight beside it need not.
    const reclaim = this.reclaim && this.reclaimedOn !== bc;
    if (reclaim) this.reclaimedOn = bc;
    // A poll waits on a stream of its own; idle poll streams are kept and reused, so a consume
    // loop costs one stream (and one auth), not one per poll.
    const pool = this.pollStreams(bc);
    const ps = pool.pop() ?? (await bc.openStream(this.timestamps ? 0 : FEATURE_RECORD_TIMESTAMPS));
    let reusable = false;
    const onAbort = () => ps.stream.reset(0);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await ps.stream.write(
        encodeMessage({
          type: 'group_poll',
          ...this.scope(bc),
          max_records: opts.max ?? GROUP_POLL_RECORDS_DEFAULT,
          wait_ms: opts.waitMs ?? GROUP_POLL_WAIT_MS_DEFAULT,
          request_id: this.nextPollId++,
          reclaim,
          ...(this.consumerName !== undefined ? { consumer: this.consumerName } : {}),
          ...(opts.visibilityMs !== undefined ? { visibility_ms: opts.visibilityMs } : {}),
        }),
      );
      const frame = await ps.frames.next();
      if (frame === null) throw new ConnectionLostError(bc.server);
      // A broker that granted the 0x8000 flag answers in binary; errors stay JSON.
      const msg =
        frame.flags === FLAG_BINARY_GROUP_RECORDS && (bc.negotiated.flags & frame.flags) !== 0
          ? decodeGroupRecords(frame.flags, frame.payload)
          : decodeMessage(frame.payload);
      if (msg.type === 'error') throw answerError(msg);
      if (msg.type !== 'group_records')
        throw new ProtocolError(`expected group_records, got ${msg.type}`);
      reusable = true;
      return msg.records.map(
        (r) =>
          new GroupMessage(
            this,
            r.offset,
            r.payload,
            r.attempts,
            r.skipped_before,
            r.timestamp_micros,
          ),
      );
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      if (reusable && !opts.signal?.aborted && pool.length < GROUP_POLL_STREAMS_IDLE_MAX) {
        pool.push(ps);
      } else {
        // Finish both directions so the transport can retire the stream.
        ps.stream.end().catch(() => undefined);
        void ps.frames.release().catch(() => undefined);
      }
    }
  }

  private pollStreams(bc: BrokerConnection): PollStream[] {
    if (this.pollPool?.bc !== bc) {
      for (const ps of this.pollPool?.idle.splice(0) ?? []) ps.stream.reset(0);
      this.pollPool = { bc, idle: [] };
    }
    return this.pollPool.idle;
  }

  /** Releases idle poll streams (a consume loop ending calls this). */
  release(): void {
    for (const ps of this.pollPool?.idle.splice(0) ?? []) {
      ps.stream.end().catch(() => undefined);
      void ps.frames.release().catch(() => undefined);
    }
  }

  /**
   * Yields messages as they are handed out. While the caller works through one batch the next
   * poll is already in flight, so the poll round trip overlaps the caller's work and acks; a
   * caller that works through its batches quickly (GROUP_CONSUME_QUICK_BATCH_MS) gets up to
   * GROUP_CONSUME_POLLS_AHEAD_MAX polls ahead, so round trips overlap one another too. Records
   * the loop never yields (the rest of the batch in hand, and whatever the polls still out when
   * it ends by break or return bring back) are handed back with a nack. A poll cancelled by the
   * caller's `signal` may leave its claims to lapse after the visibility timeout.
   */
  consume(opts: PollOptions = {}): AsyncIterable<GroupMessage> {
    return { [Symbol.asyncIterator]: () => this.consumer(opts) };
  }

  /**
   * consume()'s iterator. A message of the batch in hand is answered at once (no generator
   * hop per message); only the step to the next batch awaits a poll, and calls to next() made
   * while it runs wait behind it, so messages come out in order and once each.
   */
  private consumer(opts: PollOptions): AsyncIterator<GroupMessage> {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const pollOpts: PollOptions = { ...opts, signal: stop.signal };
    const ahead: Array<Promise<GroupMessage[]>> = [];
    let batch: GroupMessage[] = [];
    let at = 0;
    let started = 0;
    // Whether the caller worked through its last batch quickly: only then poll further ahead.
    let quick = false;
    let finished = false;
    let step: Promise<IteratorResult<GroupMessage>> | undefined;
    const pollAhead = () => {
      const p = this.poll(pollOpts);
      p.catch(() => undefined); // observed when it is awaited (or dropped at the end)
      ahead.push(p);
    };
    const handBack = (msgs: GroupMessage[]) => {
      // Nobody holds these messages: each one's outcome (stale or not) is only observed here.
      for (const p of this.handBack(msgs)) p.catch(() => undefined);
    };
    const finish = () => {
      if (finished) return;
      finished = true;
      opts.signal?.removeEventListener('abort', onAbort);
      // The rest of the batch in hand was never yielded: it goes back, not out to lapse.
      // Acks this loop made that the group still gathers go first: on the request stream the
      // last acks would otherwise queue behind the hand-back's nacks (and wait for an answer).
      // The hand-back looks its connection up first, so it is sent after them.
      this.sendGatheredAcks();
      handBack(batch.slice(at));
      batch = [];
      const left = ahead.splice(0);
      if (left.length === 0) this.release();
      else {
        // A poll made ahead may hold claims the broker already made for it. When the loop ends
        // by break or return, let it answer and hand its records back; cancelling it would
        // leave those claims to lapse. Only the caller's own abort (or a closed client) stops it.
        void Promise.allSettled(left).then((rs) => {
          for (const r of rs) if (r.status === 'fulfilled') handBack(r.value);
          this.release();
        });
        if (opts.signal?.aborted || this.host.closed) stop.abort();
      }
    };
    const advance = async (): Promise<IteratorResult<GroupMessage>> => {
      if (batch.length > 0) quick = performance.now() - started <= GROUP_CONSUME_QUICK_BATCH_MS;
      batch = [];
      at = 0;
      try {
        while (!finished && !opts.signal?.aborted && !this.host.closed) {
          if (ahead.length === 0) pollAhead();
          let next: GroupMessage[];
          try {
            next = await ahead.shift()!;
          } catch (err) {
            if (finished || opts.signal?.aborted || this.host.closed) break;
            // A lost connection: the next poll waits for the reconnect.
            if (err instanceof ConnectionLostError || isStreamReset(err)) continue;
            throw err;
          }
          if (finished) {
            handBack(next); // the loop ended while this poll was out
            break;
          }
          if (next.length === 0) continue;
          const depth = quick ? GROUP_CONSUME_POLLS_AHEAD_MAX : 1;
          while (ahead.length < depth) pollAhead();
          started = performance.now();
          batch = next;
          at = 1;
          return { value: next[0]!, done: false };
        }
      } catch (err) {
        finish();
        throw err;
      }
      finish();
      return { value: undefined, done: true };
    };
    const next = (): Promise<IteratorResult<GroupMessage>> => {
      if (step !== undefined) return step.then(next, next);
      if (at < batch.length) return Promise.resolve({ value: batch[at++]!, done: false });
      if (finished) return Promise.resolve({ value: undefined, done: true });
      const s = advance();
      step = s;
      const clear = () => {
        if (step === s) step = undefined;
      };
      s.then(clear, clear);
      return s;
    };
    return {
      next,
      return: () => {
        finish();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  /**
   * @internal Acknowledges `offset`. With a broker that offers FEATURE_HI_GROUP_ACK_BATCH, the
   * acks of one event-loop turn go as one `group_ack_batch` (one request, one answer, one cursor
   * write on the broker); otherwise each is a plain `group_ack`. Either way each ack resolves
   * once the position covering it is durable, or rejects alone (stale_claim) when the broker no
   * longer knows the claim (a seek voided it, say).
   */
  ack(offset: number): Promise<void> {
    // A batch already gathering this turn takes the ack without another connection lookup.
    const open = this.acks;
    if (open !== undefined) {
      const p = new Promise<void>((resolve, reject) => {
        open.items.push({ offset, resolve, reject });
      });
      if (open.held && open.items.length >= GROUP_ACK_BATCH_OFFSETS_MAX) this.flushAcks(open);
      return p;
    }
    return this.ackOnConnection(offset);
  }

  private async ackOnConnection(offset: number): Promise<void> {
    const bc = await this.host.connection();
    requireFeature(bc, FEATURE_CONSUMER_GROUP, 'group_ack');
    if ((bc.negotiated.featuresHi & FEATURE_HI_GROUP_ACK_BATCH) === 0) {
      await this.settle('group_ack', offset);
      return;
    }
    let batch = this.acks;
    if (batch?.bc !== bc) {
      if (batch !== undefined) this.flushAcks(batch, true); // made on a connection since replaced
      const opened: AckBatch = { bc, items: [], sent: false, held: false };
      setImmediate(() => this.flushAcks(opened));
      this.acks = batch = opened;
    }
    const items = batch.items;
    return new Promise<void>((resolve, reject) => {
      items.push({ offset, resolve, reject });
    });
  }

  /** Sends the acks gathering now, without waiting for the turn's end or an answer. */
  private sendGatheredAcks(): void {
    const open = this.acks;
    if (open !== undefined) this.flushAcks(open, true);
  }

  private flushAcks(batch: AckBatch, now = false): void {
    if (batch.sent) return;
    // While a batch is unanswered (its cursor write is under way on the broker, which would hold
    // these acks for the next write anyway) the acks of later turns keep gathering and go as one
    // request when it is answered: one request and answer per cursor write, not one per turn.
    if (
      !now &&
      this.ackBatchesOut >= GROUP_ACK_BATCHES_IN_FLIGHT_MAX &&
      batch.items.length < GROUP_ACK_BATCH_OFFSETS_MAX
    ) {
      batch.held = true;
      return;
    }
    batch.sent = true;
    if (this.acks === batch) this.acks = undefined;
    this.sendAcks(batch.bc, batch.items);
  }

  private sendAcks(bc: BrokerConnection, items: PendingAck[]): void {
    for (let i = 0; i < items.length; i += GROUP_ACK_BATCH_OFFSETS_MAX) {
      const part = items.slice(i, i + GROUP_ACK_BATCH_OFFSETS_MAX);
      const offsets = part.map((a) => a.offset);
      this.ackBatchesOut++;
      channelOf(bc)
        .request((request_id) => ({
          type: 'group_ack_batch',
          ...this.scope(bc),
          offsets,
          request_id,
        }))
        .then((msg) => {
          if (msg.type !== 'group_acked') {
            throw new ProtocolError(`expected group_acked, got ${msg.type}`);
          }
          const stale = msg.stale.length === 0 ? undefined : new Set(msg.stale);
          for (const a of part) {
            if (stale?.has(a.offset)) a.reject(staleClaim(a.offset));
            else a.resolve();
          }
        })
        .catch((err: unknown) => {
          for (const a of part) a.reject(err as Error);
        })
        .finally(() => {
          this.ackBatchesOut--;
          const held = this.acks;
          if (held?.held === true) this.flushAcks(held);
        });
    }
  }

  /**
   * @internal Hands `offset` (the delivery `attempts` names) back, now or after `delayMs`. With a
   * broker that offers FEATURE_HI_GROUP_NACK_BATCH the nacks of one event-loop turn with the same
   * delay go as one `group_nack_batch` (one request and one answer); otherwise each is a plain
   * `group_nack`. Each settles as its own nack would: rejected alone with `stale_claim` when its
   * claim no longer stood (fatal when it named another delivery than the standing one).
   */
  nack(offset: number, attempts: number, delayMs?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.nackOnConnection({ offset, attempts, resolve, reject }, delayMs).catch(reject);
    });
  }

  private async nackOnConnection(item: PendingNack, delayMs: number | undefined): Promise<void> {
    const bc = await this.host.connection();
    requireFeature(bc, FEATURE_CONSUMER_GROUP, 'group_nack');
    if ((bc.negotiated.featuresHi & FEATURE_HI_GROUP_NACK_BATCH) === 0) {
      await this.settle('group_nack', item.offset, {
        attempts: item.attempts,
        ...(delayMs !== undefined ? { delay_ms: delayMs } : {}),
      });
      item.resolve();
      return;
    }
    let batch = this.nacks.get(delayMs);
    if (batch?.bc !== bc) {
      if (batch !== undefined) this.flushNacks(batch); // made on a connection since replaced
      const opened: NackBatch = { bc, delayMs, items: [], sent: false };
      setImmediate(() => this.flushNacks(opened));
      this.nacks.set(delayMs, opened);
      batch = opened;
    }
    batch.items.push(item);
    if (batch.items.length >= GROUP_NACK_BATCH_OFFSETS_MAX) this.flushNacks(batch);
  }

  private flushNacks(batch: NackBatch): void {
    if (batch.sent) return;
    batch.sent = true;
    if (this.nacks.get(batch.delayMs) === batch) this.nacks.delete(batch.delayMs);
    this.sendNacks(batch.bc, batch.items, batch.delayMs);
  }

  /**
   * @internal Hands `msgs` back, each as its own `nack()` would (no delay), and answers one
   * promise per message, in order. With a broker that offers FEATURE_HI_GROUP_NACK_BATCH they go
   * as `group_nack_batch` requests of at most GROUP_NACK_BATCH_OFFSETS_MAX offsets each (one
   * request and one answer per batch, not per record); otherwise each is a plain `group_nack`.
   */
  handBack(msgs: readonly GroupMessage[]): Promise<void>[] {
    if (msgs.length === 0) return [];
    const items: PendingNack[] = [];
    const promises = msgs.map(
      (m) =>
        new Promise<void>((resolve, reject) => {
          items.push({ offset: m.offset, attempts: m.attempts, resolve, reject });
        }),
    );
    this.handBackOnConnection(items).catch((err: Error) => {
      for (const it of items) it.reject(err);
    });
    return promises;
  }

  private async handBackOnConnection(items: PendingNack[]): Promise<void> {
    const bc = await this.host.connection();
    requireFeature(bc, FEATURE_CONSUMER_GROUP, 'group_nack');
    if ((bc.negotiated.featuresHi & FEATURE_HI_GROUP_NACK_BATCH) === 0) {
      for (const it of items) {
        this.settle('group_nack', it.offset, { attempts: it.attempts }).then(
          () => it.resolve(),
          it.reject,
        );
      }
      return;
    }
    this.sendNacks(bc, items, undefined);
  }

  /** Sends `items` as `group_nack_batch` requests of at most GROUP_NACK_BATCH_OFFSETS_MAX. */
  private sendNacks(bc: BrokerConnection, items: PendingNack[], delayMs: number | undefined): void {
    for (let i = 0; i < items.length; i += GROUP_NACK_BATCH_OFFSETS_MAX) {
      const part = items.slice(i, i + GROUP_NACK_BATCH_OFFSETS_MAX);
      channelOf(bc)
        .request((request_id) => ({
          type: 'group_nack_batch',
          ...this.scope(bc),
          offsets: part.map((it) => it.offset),
          attempts: part.map((it) => it.attempts),
          ...(delayMs !== undefined ? { delay_ms: delayMs } : {}),
          request_id,
        }))
        .then((msg) => {
          if (msg.type !== 'group_nacked') {
            throw new ProtocolError(`expected group_nacked, got ${msg.type}`);
          }
          const stale = msg.stale.length === 0 ? undefined : new Set(msg.stale);
          const superseded = msg.superseded === undefined ? undefined : new Set(msg.superseded);
          for (const it of part) {
            if (!stale?.has(it.offset)) it.resolve();
            else it.reject(staleClaim(it.offset, superseded?.has(it.offset) === true));
          }
        })
        .catch((err: unknown) => {
          for (const it of part) it.reject(err as Error);
        });
    }
  }

  /** @internal Sends a settle or another group request over the request stream. */
  async settle(
    type:
      | 'group_ack'
      | 'group_nack'
      | 'group_extend'
      | 'group_dead_letter'
      | 'group_discard'
      | 'group_redrive',
    offset: number,
    extra: Record<string, number> = {},
  ): Promise<Message> {
    const bc = await this.host.connection();
    requireFeature(
      bc,
      type === 'group_ack' || type === 'group_nack'
        ? FEATURE_CONSUMER_GROUP
        : type === 'group_discard' || type === 'group_redrive'
          ? FEATURE_GROUP_DEAD_LETTERS
          : FEATURE_GROUP_CLAIM_CONTROL,
      type,
    );
    // Acks and the other settles made in one turn (a consume loop's) share one write.
    return channelOf(bc).request(
      (request_id) => ({ type, ...this.scope(bc), offset, ...extra, request_id }) as Message,
      true,
    );
  }

  /** Offsets the group gave up on, lowest first. */
  async deadLetters(): Promise<number[]> {
    const msg = await this.admin('group_dead_letters', FEATURE_GROUP_DEAD_LETTERS);
    return (msg as GroupAnswer<'group_dead_letter_list'>).offsets;
  }

  /** Hands a dead letter out again (attempts start over); recorded durably before it resolves. */
  async redrive(offset: number): Promise<void> {
    await this.settle('group_redrive', offset);
  }

  /** Drops a dead letter for good. */
  async discard(offset: number): Promise<void> {
    await this.settle('group_discard', offset);
  }

  async describe(): Promise<GroupInfo> {
    const msg = (await this.admin(
      'group_describe',
      FEATURE_GROUP_ADMIN,
    )) as GroupAnswer<'group_info'>;
    return {
      committed: msg.committed,
      tail: msg.tail,
      inFlight: msg.in_flight,
      owed: msg.owed,
      deadLetters: msg.dead_letters,
    };
  }

  /** Moves the position (voiding every standing claim); `ifNew` only sets a new group's. */
  async seek(
    start: 'earliest' | 'latest' | { offset: number },
    opts: { ifNew?: boolean } = {},
  ): Promise<{ offset: number; moved: boolean }> {
    const msg = (await this.admin('group_seek', FEATURE_GROUP_ADMIN, {
      start,
      if_new: opts.ifNew ?? false,
    })) as GroupAnswer<'group_position'>;
    return { offset: msg.offset, moved: msg.moved };
  }

  /** Deletes the group's position, dead letters and in-flight state; answers whether it existed. */
  async delete(): Promise<boolean> {
    const msg = (await this.admin(
      'group_delete',
      FEATURE_GROUP_ADMIN,
    )) as GroupAnswer<'group_deleted'>;
    return msg.existed;
  }

  private async admin(type: string, bit: number, extra: Record<string, unknown> = {}) {
    const bc = await this.host.connection();
    requireFeature(bc, bit, type);
    return channelOf(bc).request(
      (request_id) => ({ type, ...this.scope(bc), ...extra, request_id }) as Message,
    );
  }
}

function answerError(msg: Extract<Message, { type: 'error' }>) {
  return brokerError({
    brokerCode: msg.code ?? 'unknown',
    message: msg.message,
    retry: msg.retry,
    detail: msg.detail,
  });
}

/** The error a plain `group_ack` gets for an offset whose claim no longer stands. */
/** The error a single settle's `stale_claim` answer gives: fatal when the settle named another
 *  delivery than the standing claim's, retryable otherwise (as the broker classes it). */
function staleClaim(offset: number, fatal = false) {
  return brokerError({
    brokerCode: 'stale_claim',
    message: `the claim on offset ${offset} no longer stands`,
    retry: fatal ? 'fatal' : 'retry',
  });
}

function isStreamReset(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? '';
  return code.includes('RESET') || code.includes('CLOSED');
}
