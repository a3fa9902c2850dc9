/**
 * One delivery of one record handed out by a consumer group, and what it needs from its group
 * to settle (ack, nack, extend, dead-letter): the settles go through the group's GroupSettles.
 */
import type { Message } from '@felix/wire';
import { InvalidArgumentError, ProtocolError } from '../errors.js';

/** The settle requests of a group beside acks and nacks. */
export type SettleType =
  | 'group_ack'
  | 'group_nack'
  | 'group_extend'
  | 'group_dead_letter'
  | 'group_discard'
  | 'group_redrive';

/** What a message asks of its group. */
export interface GroupSettler {
  /** The stream shard the group reads (default 0). */
  readonly shard?: number;
  ack(offset: number): Promise<void>;
  nack(offset: number, attempts: number, delayMs?: number): Promise<void>;
  settle(type: SettleType, offset: number, extra?: Record<string, number>): Promise<Message>;
}

/** One delivery of one record. */
export class GroupMessage {
  constructor(
    private readonly group: GroupSettler,
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

  /** The stream shard the record is on (its offset is that shard's). */
  get shard(): number {
    return this.group.shard ?? 0;
  }

  /** Finishes the record; the group's position moves once every lower record is finished. */
  ack(): Promise<void> {
    return this.group.ack(this.offset);
  }

  /**
   * Hands the record back: redelivered now, or after `delayMs` (it stays in flight meanwhile), a
   * whole number of milliseconds; anything else is refused with InvalidArgumentError.
   */
  nack(opts: { delayMs?: number } = {}): Promise<void> {
    const d = opts.delayMs;
    if (d !== undefined && !(Number.isSafeInteger(d) && d >= 0)) {
      return Promise.reject(
        new InvalidArgumentError(`nack delayMs must be a whole number of ms >= 0, got ${d}`),
      );
    }
    return this.group.nack(this.offset, this.attempts, d);
  }

  /** Keeps the claim for `ms` more (a whole number of ms >= 1); answers the visibility granted. */
  async extend(ms: number): Promise<number> {
    if (!(Number.isSafeInteger(ms) && ms >= 1)) {
      throw new InvalidArgumentError(`extend ms must be a whole number of ms >= 1, got ${ms}`);
    }
    const msg = await this.group.settle('group_extend', this.offset, {
      attempts: this.attempts,
      extend_ms: ms,
    });
    if (msg.type !== 'group_extended') throw new ProtocolError(`expected group_extended`);
    return msg.visible_ms;
  }

  /**
   * Gives up on the record: recorded as a dead letter, then finished. Refused with
   * StaleClaimError when the record has gone out again since this delivery (its claim lapsed).
   */
  deadLetter(): Promise<void> {
    return this.group
      .settle('group_dead_letter', this.offset, { attempts: this.attempts })
      .then(() => undefined);
  }
}
