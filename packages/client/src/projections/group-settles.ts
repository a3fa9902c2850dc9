/**
 * A consumer group's settles: acks and nacks batched per turn on the client's TurnBatcher (one
 * `group_ack_batch` or `group_nack_batch` request where the broker offers it, plain `group_ack`
 * and `group_nack` requests otherwise), the consume loop's hand-back, and the other settles.
 * Every request goes over the connection's request stream; each ack or nack settles as its own
 * would (rejected alone with `stale_claim` when its claim no longer stands).
 */
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_GROUP_CLAIM_CONTROL,
  FEATURE_GROUP_DEAD_LETTERS,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RELEASE,
  FLAG_BINARY_GROUP,
  type GroupNackedMessage,
  type Message,
  decodeGroupAcked,
  encodeGroupAck,
} from '@felix/wire';
import { ProtocolError, brokerError } from '../errors.js';
import {
  GROUP_ACK_BATCHES_IN_FLIGHT_MAX,
  GROUP_ACK_BATCH_OFFSETS_MAX,
  GROUP_NACK_BATCH_OFFSETS_MAX,
} from '../limits.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { FrameTemplate, QUICK_ACKED_MATCHES, groupScopeOf, quickAcked } from './group-frames.js';
import type { GroupMessage, GroupSettler, SettleType } from './group-message.js';
import { has } from '../protocol/negotiation.js';
import { type ProjectionHost, requireFeature } from './host.js';
import { abortable } from '../util/abortable.js';
import type { SettleAgain } from './settle-again.js';

/** One ack or nack waiting for its batch's answer. */
interface PendingSettle {
  offset: number;
  /** The delivery a nack names (a claim for another one is not handed back); acks: 0. */
  attempts: number;
  resolve(): void;
  reject(err: Error): void;
}

/** Acks or nacks made in one turn on `bc` (nacks: with one delay), sent together at its end. */
interface Batch {
  bc: BrokerConnection;
  delayMs: number | undefined;
  items: PendingSettle[];
  sent: boolean;
  /** Acks: the turn ended while GROUP_ACK_BATCHES_IN_FLIGHT_MAX batches were unanswered: it
   *  keeps gathering and goes when one is answered (or once it is full). */
  held: boolean;
}

/** The group's name on the wire, as each request carries it. */
export type GroupScope = (bc: BrokerConnection) => Record<string, string | number>;

/** Runs a request on a group's shard owner (group.ts, `onOwner`). */
export type OnOwner = <T>(
  call: (bc: BrokerConnection) => Promise<T>,
  signal?: AbortSignal,
) => Promise<T>;

export class GroupSettles implements GroupSettler {
  /** Acks made this turn on `bc`, sent together at its end (bounded per request by
   *  GROUP_ACK_BATCH_OFFSETS_MAX; the caller's own messages bound the list). */
  private acks: Batch | undefined;
  /** `group_ack_batch` requests sent and not yet answered. */
  private ackBatchesOut = 0;
  /** Nacks made this turn, by delay (a batch carries one), sent together at its end. */
  private readonly nacks = new Map<number | undefined, Batch>();
  /** How an ack batch is framed on the connection last used (given its offsets and id). */
  private acksShape:
    | { bc: BrokerConnection; frame: (offsets: number[], requestId: number) => Uint8Array }
    | undefined;

  constructor(
    private readonly host: ProjectionHost,
    private readonly scope: GroupScope,
    /** What a settle whose answer never comes names in its OutcomeUnknownError. */
    private readonly what: string,
    /** Runs a single settle on the shard's owner (in a cluster, following a `not_leader`
     *  answer); absent: on the host's connection. */
    private readonly onOwner?: OnOwner,
    /** Sends a settle refused unapplied again on the shard's owner (settle-again.ts); absent:
     *  such a settle fails as refused. */
    private readonly again?: SettleAgain,
  ) {}

  /**
   * Acknowledges `offset`. With a broker that offers FEATURE_HI_GROUP_ACK_BATCH, the acks of one
   * turn go as one `group_ack_batch` (one request, one answer, one cursor write on the broker);
   * otherwise each is a plain `group_ack`. Either way each ack resolves once the broker has
   * settled it under the stream's cursor durability (`onCommit`: the position covering it is
   * durable; `periodic`: it is settled, and the cursor is written within the interval), or
   * rejects alone (stale_claim) when the broker no longer knows the claim (a seek voided it, say).
   */
  ack(offset: number): Promise<void> {
    // A batch already gathering this turn takes the ack without another connection lookup.
    const open = this.acks;
    if (open !== undefined) {
      const p = new Promise<void>((resolve, reject) => {
        open.items.push({ offset, attempts: 0, resolve, reject });
      });
      if (open.held && open.items.length >= GROUP_ACK_BATCH_OFFSETS_MAX) this.flushAcks(open);
      return p;
    }
    // A live connection is taken as it stands: no async step (a promise and a turn) per ack.
    const live = this.host.live?.();
    if (live !== undefined && has(live.negotiated.features, FEATURE_CONSUMER_GROUP)) {
      if ((live.negotiated.featuresHi & FEATURE_HI_GROUP_ACK_BATCH) !== 0) {
        return this.ackInBatch(live, offset);
      }
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
    return this.ackInBatch(bc, offset);
  }

  /** Adds the ack to the batch gathering on `bc` this turn (opening one), sent at its end. */
  private ackInBatch(bc: BrokerConnection, offset: number): Promise<void> {
    let batch = this.acks;
    if (batch?.bc !== bc) {
      if (batch !== undefined) this.flushAcks(batch, true); // made on a connection since replaced
      const opened = newBatch(bc, undefined);
      bc.turn.atTurnEnd(() => this.flushAcks(opened));
      this.acks = batch = opened;
    }
    const items = batch.items;
    return new Promise<void>((resolve, reject) => {
      items.push({ offset, attempts: 0, resolve, reject });
    });
  }

  /** Sends the acks gathering now, without waiting for the turn's end or an answer. */
  sendGatheredAcks(): void {
    const open = this.acks;
    if (open !== undefined) this.flushAcks(open, true);
  }

  private flushAcks(batch: Batch, now = false): void {
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

  private sendAcks(bc: BrokerConnection, items: PendingSettle[]): void {
    let frame: (offsets: number[], requestId: number) => Uint8Array;
    try {
      frame = this.ackFrames(bc);
    } catch (err) {
      // A scope the binary layout cannot carry (a name past 65,535 bytes): these acks fail, and
      // the turn's other flushes still run (this runs at the end of a turn, not in a caller).
      for (const a of items) a.reject(err as Error);
      return;
    }
    for (let i = 0; i < items.length; i += GROUP_ACK_BATCH_OFFSETS_MAX) {
      const part = items.slice(i, i + GROUP_ACK_BATCH_OFFSETS_MAX);
      const offsets = part.map((a) => a.offset);
      this.ackBatchesOut++;
      let answered = false;
      const done = () => {
        if (answered) return; // a failure after `finish` ran (a held batch's send) counts once
        answered = true;
        this.ackBatchAnswered();
      };
      // Settled in the turn the answer is read (`finish`), with one reaction for a failure:
      // no chain of steps (each a promise and a turn) between the answer and the acks.
      this.askAcks(bc, frame, offsets, (stale) => {
        settleEach(part, stale, undefined);
        done();
      }).then(undefined, (err: unknown) => {
        done();
        const again = this.again;
        if (again === undefined) {
          for (const a of part) a.reject(err as Error);
          return;
        }
        again((c) => this.ackBatchOn(c, offsets), { err, from: bc.server }).then(
          (stale) => settleEach(part, stale, undefined),
          (e: unknown) => {
            for (const a of part) a.reject(e as Error);
          },
        );
      });
    }
  }

  /** One `group_ack_batch` of `offsets` on `bc` (a resend): the offsets answered stale. */
  private ackBatchOn(bc: BrokerConnection, offsets: number[]): Promise<number[]> {
    requireFeature(bc, FEATURE_CONSUMER_GROUP, 'group_ack');
    if ((bc.negotiated.featuresHi & FEATURE_HI_GROUP_ACK_BATCH) === 0)
      return Promise.reject(new ProtocolError('the shard owner does not offer group_ack_batch'));
    return this.askAcks(bc, this.ackFrames(bc), offsets, (stale) => stale);
  }

  /** Sends one `group_ack_batch` framed by `frame`; `finish` takes its stale offsets in the
   *  turn the answer is read (no promise step between the answer and the acks). */
  private askAcks<T>(
    bc: BrokerConnection,
    frame: (offsets: number[], requestId: number) => Uint8Array,
    offsets: number[],
    finish: (stale: number[]) => T,
  ): Promise<T> {
    return bc.requests.requestPrepared<T>(
      (request_id) => ({
        bytes: frame(offsets, request_id),
        quick: readAcked,
        finish: (msg) => {
          if (msg.type !== 'group_acked') {
            throw new ProtocolError(`expected group_acked, got ${msg.type}`);
          }
          return finish(msg.stale);
        },
      }),
      this.what,
    );
  }

  /** An ack batch was answered (or failed): the acks held behind it go now. */
  private ackBatchAnswered(): void {
    this.ackBatchesOut--;
    const held = this.acks;
    if (held?.held === true) this.flushAcks(held);
  }

  /**
   * How this group's `group_ack_batch` is framed on `bc`: binary where the connection negotiated
   * the group exchange (the scope encoded once), else its JSON made once with the offsets and
   * id spliced in.
   */
  private ackFrames(bc: BrokerConnection): (offsets: number[], requestId: number) => Uint8Array {
    const held = this.acksShape;
    if (held?.bc === bc) return held.frame;
    let frame: (offsets: number[], requestId: number) => Uint8Array;
    if ((bc.negotiated.featuresHi & FEATURE_HI_GROUP_BINARY) !== 0) {
      const scope = groupScopeOf(this.scope(bc));
      frame = (offsets, requestId) => encodeGroupAck(scope, offsets, requestId);
    } else {
      const shape = { type: 'group_ack_batch', ...this.scope(bc), offsets: [0], request_id: 0 };
      const template = new FrameTemplate(shape as Message, ['offsets', 'request_id']);
      frame = (offsets, requestId) => template.frame([`[${offsets.join(',')}]`, requestId]);
    }
    this.acksShape = { bc, frame };
    return frame;
  }

  /**
   * Hands `offset` (the delivery `attempts` names) back, now or after `delayMs`. With a broker
   * that offers FEATURE_HI_GROUP_NACK_BATCH the nacks of one turn with the same delay go as one
   * `group_nack_batch` (one request and one answer); otherwise each is a plain `group_nack`.
   * Each settles as its own nack would: rejected alone with `stale_claim` when its claim no
   * longer stood (fatal when it named another delivery than the standing one).
   */
  nack(offset: number, attempts: number, delayMs?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.nackOnConnection({ offset, attempts, resolve, reject }, delayMs).catch(reject);
    });
  }

  private async nackOnConnection(item: PendingSettle, delayMs: number | undefined): Promise<void> {
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
      const opened = newBatch(bc, delayMs);
      bc.turn.atTurnEnd(() => this.flushNacks(opened));
      this.nacks.set(delayMs, opened);
      batch = opened;
    }
    batch.items.push(item);
    if (batch.items.length >= GROUP_NACK_BATCH_OFFSETS_MAX) this.flushNacks(batch);
  }

  private flushNacks(batch: Batch): void {
    if (batch.sent) return;
    batch.sent = true;
    if (this.nacks.get(batch.delayMs) === batch) this.nacks.delete(batch.delayMs);
    this.sendNacks(batch.bc, batch.items, batch.delayMs);
  }

  /**
   * Hands `msgs` back, each as its own `nack()` would (no delay), and answers one promise per
   * message, in order. With a broker that offers FEATURE_HI_GROUP_NACK_BATCH they go as
   * `group_nack_batch` requests of at most GROUP_NACK_BATCH_OFFSETS_MAX offsets each (one request
   * and one answer per batch, not per record); otherwise each is a plain `group_nack`.
   */
  handBack(msgs: readonly GroupMessage[]): Promise<void>[] {
    if (msgs.length === 0) return [];
    const items: PendingSettle[] = [];
    const promises = msgs.map(
      (m) =>
        new Promise<void>((resolve, reject) => {
          items.push({ offset: m.offset, attempts: m.attempts, resolve, reject });
        }),
    );
    this.handBackOnConnection(items).catch((err: Error) => {
      for (const it of items) it.reject(err);
    });
    // A close right after the loop ended lets these reach the broker first.
    this.host.leaving?.(Promise.allSettled(promises));
    return promises;
  }

  private async handBackOnConnection(items: PendingSettle[]): Promise<void> {
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
    // Records the application never saw: a broker that can, does not count their deliveries.
    const release = (bc.negotiated.featuresHi & FEATURE_HI_GROUP_RELEASE) !== 0;
    this.sendNacks(bc, items, undefined, release);
  }

  /** Sends `items` as `group_nack_batch` requests of at most GROUP_NACK_BATCH_OFFSETS_MAX. */
  private sendNacks(
    bc: BrokerConnection,
    items: PendingSettle[],
    delayMs: number | undefined,
    release = false,
  ) {
    for (let i = 0; i < items.length; i += GROUP_NACK_BATCH_OFFSETS_MAX) {
      const part = items.slice(i, i + GROUP_NACK_BATCH_OFFSETS_MAX);
      const on = (c: BrokerConnection) => this.nackBatchOn(c, part, delayMs, release);
      // The request may encode (and refuse) synchronously: that must reject these nacks, not
      // escape into the turn's flush where nothing would catch it.
      let sent: Promise<GroupNackedMessage>;
      try {
        sent = on(bc);
      } catch (err) {
        for (const it of part) it.reject(err as Error);
        continue;
      }
      // Not sent again: the next leader holds no claim for a nack to name (it would answer
      // stale_claim) and owes the record anyway, which is what a nack asks for.
      sent
        .then((msg) => settleEach(part, msg.stale, msg.superseded))
        .catch((err: unknown) => {
          for (const it of part) it.reject(err as Error);
        });
    }
  }

  /** One `group_nack_batch` of `part` on `bc`, answered `group_nacked`. */
  private nackBatchOn(
    bc: BrokerConnection,
    part: readonly PendingSettle[],
    delayMs: number | undefined,
    release: boolean,
  ): Promise<GroupNackedMessage> {
    const message = (request_id: number) =>
      ({
        type: 'group_nack_batch',
        ...this.scope(bc),
        offsets: part.map((it) => it.offset),
        attempts: part.map((it) => it.attempts),
        ...(delayMs !== undefined ? { delay_ms: delayMs } : {}),
        ...(release ? { release: true } : {}),
        request_id,
      }) as Message;
    return bc.requests.request(message, this.what).then((msg) => {
      if (msg.type !== 'group_nacked') {
        throw new ProtocolError(`expected group_nacked, got ${msg.type}`);
      }
      return msg;
    });
  }

  /** Sends a settle or another group request over the request stream. `signal` ends the wait
   *  for a connection and for the answer; a settle is a write, so once sent its AbortedError
   *  says the outcome is unknown. */
  async settle(
    type: SettleType,
    offset: number,
    extra: Record<string, number> = {},
    signal?: AbortSignal,
  ): Promise<Message> {
    if (this.onOwner !== undefined) {
      const on = (bc: BrokerConnection) => this.settleOn(bc, type, offset, extra, signal);
      const asked = this.onOwner(on, signal);
      const again = this.again;
      // Only an ack is sent again (see nackBatchOn's caller); a signal's abort is the caller's
      // own end.
      return again === undefined || signal !== undefined || type !== 'group_ack'
        ? asked
        : asked.catch((err: unknown) => again(on, { err, from: '' }));
    }
    return this.settleOn(await this.host.connection(signal), type, offset, extra, signal);
  }

  private settleOn(
    bc: BrokerConnection,
    type: SettleType,
    offset: number,
    extra: Record<string, number>,
    signal: AbortSignal | undefined,
  ): Promise<Message> {
    requireFeature(bc, featureOf(type), type);
    // Settles made in one turn (a consume loop's) share the request stream's one write.
    const asked = bc.requests.request(
      (request_id) => ({ type, ...this.scope(bc), offset, ...extra, request_id }) as Message,
      this.what,
    );
    // Without a signal the request's own promise: acks come through here, no step of their own.
    return signal === undefined
      ? asked
      : abortable(asked, signal, `${type} of offset ${offset}`, true);
  }
}

/**
 * An ack batch's answer read without the general decoder: a binary `group_acked` (flag word
 * 0x8002, a connection that negotiated the group exchange), or the common JSON one naming no
 * stale offset; anything else (an error, stale offsets in JSON) goes to the general decoder.
 */
function readAcked(payload: Uint8Array, flags: number): Message | undefined {
  if (flags === FLAG_BINARY_GROUP) return decodeGroupAcked(payload);
  return QUICK_ACKED_MATCHES && flags === 0 ? quickAcked(payload) : undefined;
}

function newBatch(bc: BrokerConnection, delayMs: number | undefined): Batch {
  return { bc, delayMs, items: [], sent: false, held: false };
}

function featureOf(type: SettleType): number {
  if (type === 'group_ack' || type === 'group_nack') return FEATURE_CONSUMER_GROUP;
  if (type === 'group_discard' || type === 'group_redrive') return FEATURE_GROUP_DEAD_LETTERS;
  return FEATURE_GROUP_CLAIM_CONTROL;
}

/** Settles each item of a batch's answer: stale ones reject alone, the rest resolve. */
function settleEach(
  part: PendingSettle[],
  staleOffsets: number[],
  supersededOffsets: number[] | undefined,
): void {
  const stale = staleOffsets.length === 0 ? undefined : new Set(staleOffsets);
  const superseded = supersededOffsets === undefined ? undefined : new Set(supersededOffsets);
  for (const it of part) {
    if (!stale?.has(it.offset)) it.resolve();
    else it.reject(staleClaim(it.offset, superseded?.has(it.offset) === true));
  }
}

/** The error a single settle's `stale_claim` answer gives: fatal when the settle named another
 *  delivery than the standing claim's, retryable otherwise (as the broker classes it). */
function staleClaim(offset: number, fatal: boolean) {
  return brokerError({
    brokerCode: 'stale_claim',
    message: `the claim on offset ${offset} no longer stands`,
    retry: fatal ? 'fatal' : 'retry',
  });
}
