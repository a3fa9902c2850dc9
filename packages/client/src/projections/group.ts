/**
 * `felix.group(stream, group, { shard })`: a consumer group on one shard of a durable stream.
 * `consume()` long-polls (group-poll.ts) and yields GroupMessages (group-message.ts) to ack,
 * nack (optionally delayed), extend or dead-letter; settles are batched per turn and go over the
 * connection's request stream (group-settles.ts). The group is at least once: a record can be
 * delivered again after a lapse, a nack, a redrive or a broker restart, and `attempts` says
 * which delivery a message is.
 */
import {
  FEATURE_GROUP_ADMIN,
  FEATURE_GROUP_DEAD_LETTERS,
  FEATURE_HI_GROUP_DEAD_LETTER_PAGES,
  type Message,
} from '@felix/wire';
import { InvalidArgumentError, NotLeaderError } from '../errors.js';
import { GROUP_CONSUMER_NAME_BYTES_MAX, GROUP_NAME_BYTES_MAX } from '../limits.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { failureClassOf } from '../reader-retry.js';
import { abortable } from '../util/abortable.js';
import { checkWellFormed, shown } from '../util/well-formed.js';
import {
  type DeadLetterPage,
  type DeadLetterPageOptions,
  checkPage,
  pageOfUnpagedList,
} from './dead-letter-pages.js';
import {
  type ConsumeStopReason,
  type RetriedPollFailure,
  consumeIterator,
} from './group-consume.js';
import type { GroupMessage, GroupSettler, SettleType } from './group-message.js';
import { GroupPolls, type PollOptions } from './group-poll.js';
import { GroupSettles } from './group-settles.js';
import { type SettleShard, settleAgain } from './settle-again.js';
import { type ProjectionHost, type ProjectionRoute, requireFeature } from './host.js';

export type { DeadLetterPage, DeadLetterPageOptions } from './dead-letter-pages.js';
export { GroupMessage } from './group-message.js';
export type { PollOptions } from './group-poll.js';

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

/** `felix.group(stream, group, { shard: 'all' })`: the group on every shard of the stream. */
export interface StreamGroupOptions extends Omit<GroupOptions, 'shard'> {
  shard: 'all';
}

export interface GroupInfo {
  /** Durable position (every offset below it is finished); undefined if never committed. */
  committed: number | undefined;
  tail: number;
  inFlight: number;
  owed: number;
  deadLetters: number;
  /** When an answered ack's cursor is durable (the group's `cursor_fsync`): `onCommit`
   *  (fsynced before the ack is answered) or `periodic` (written on the group's interval);
   *  undefined from a broker that does not say. */
  cursorFsync: 'onCommit' | 'periodic' | undefined;
}

/** Options of a group's admin calls (describe, deadLetters, redrive, discard, seek, delete). */
export interface GroupAdminOptions {
  /** Ends the call, while it waits for a connection or for the broker's answer, with
   *  AbortedError; a write's (redrive, discard, seek, delete) says its outcome is unknown once
   *  the request was sent. */
  signal?: AbortSignal;
}

type GroupAnswer<T extends Message['type']> = Extract<Message, { type: T }>;

export class Group implements GroupSettler {
  readonly shard: number;
  /** The named consumer this group polls as (undefined: anonymous). */
  readonly consumerName: string | undefined;
  private readonly settles: GroupSettles;
  private readonly polls: GroupPolls;

  constructor(
    private readonly host: ProjectionHost,
    readonly stream: string,
    readonly name: string,
    opts: GroupOptions = {},
  ) {
    if (stream === '' || name === '')
      throw new InvalidArgumentError('stream and group names must not be empty');
    checkWellFormed(stream, 'the stream name');
    checkWellFormed(name, 'the group name');
    const nameBytes = new TextEncoder().encode(name).length;
    if (nameBytes > GROUP_NAME_BYTES_MAX || name.includes('\u001F'))
      throw new InvalidArgumentError(
        `a group name is 1..${GROUP_NAME_BYTES_MAX} bytes without U+001F`,
      );
    this.shard = opts.shard ?? 0;
    if (!Number.isInteger(this.shard) || this.shard < 0)
      throw new InvalidArgumentError('shard must be a non-negative integer');
    this.consumerName = opts.consumer;
    if (this.consumerName !== undefined) {
      checkWellFormed(this.consumerName, 'the consumer name');
      const bytes = new TextEncoder().encode(this.consumerName).length;
      if (bytes === 0 || bytes > GROUP_CONSUMER_NAME_BYTES_MAX)
        throw new InvalidArgumentError(
          `a consumer name is 1..${GROUP_CONSUMER_NAME_BYTES_MAX} bytes`,
        );
    }
    const scope = (bc: BrokerConnection) => this.scope(bc);
    const shard: SettleShard = {
      route: host.route,
      stream,
      shard: this.shard,
      closed: () => host.closed,
      closing: host.closing,
    };
    this.settles = new GroupSettles(
      host,
      scope,
      `group ${name}`,
      (call, signal) => this.onOwner(call, signal),
      host.route === undefined ? undefined : (call, failed) => settleAgain(shard, call, failed),
    );
    this.polls = new GroupPolls({
      host,
      scope,
      settler: this,
      consumerName: this.consumerName,
      reclaim: this.consumerName !== undefined && opts.reclaim !== false,
      timestamps: opts.timestamps === true,
    });
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

  /** Polls until records are ready or the wait ends; may resolve empty. In a cluster a poll
   *  refused by a broker that no longer owns the shard is made again on the owner it names
   *  (no records were claimed where it was refused), and any failure that passes is told to
   *  the router first, so the next poll goes to the owner as then known. */
  poll(opts: PollOptions = {}): Promise<GroupMessage[]> {
    checkPollOptions(opts);
    const route = this.host.route;
    return route?.active ? this.pollRouted(route, opts) : this.polls.poll(opts);
  }

  private async pollRouted(route: ProjectionRoute, opts: PollOptions): Promise<GroupMessage[]> {
    // A failure that passes is told to the router, so the next call goes to the owner as then
    // known. A loop of plain polls kept asking a broker that had lost the shard in a failover (it
    // answered not_leader to each) for as long as it ran: nothing learned from the answer.
    const learn = (err: unknown, from: string) => {
      if (!opts.signal?.aborted && failureClassOf(err) !== 'fatal')
        route.refused('stream', this.stream, this.shard, err, from);
      return err;
    };
    let bc: BrokerConnection | undefined;
    try {
      // A live connection is taken as it stands: no await, no turn.
      const picked = this.polls.connection(opts);
      bc = picked instanceof Promise ? await picked : picked;
      return await this.polls.poll(opts, bc);
    } catch (err) {
      learn(err, bc?.server ?? '');
      if (!(err instanceof NotLeaderError) || opts.signal?.aborted) throw err;
      const on = (conn: BrokerConnection) => this.polls.poll(opts, conn);
      const tried = bc === undefined ? undefined : [bc.server];
      // The redirected attempt may fail too (the new owner out of reach, a walk past its bound).
      return route
        .request('stream', this.stream, this.shard, on, opts.signal, tried)
        .catch((walked: unknown) => {
          throw learn(walked, '');
        });
    }
  }

  /** Releases idle poll streams (a consume loop ending calls this). */
  release(): void {
    this.polls.release();
  }

  /**
   * Yields messages as they are handed out, with the next polls in flight while the caller
   * works (see group-consume.ts). Records the loop never yields are released (handed back,
   * their delivery not counted as an attempt). A
   * poll cancelled by the caller's `signal` may leave its claims to lapse after the visibility
   * timeout. The loop runs until the caller ends it or the client closes: a poll that fails in
   * a way that passes (a lost connection, a poll left unanswered, a shard served elsewhere, a
   * busy broker) is made again after a backoff; a failure that would recur (auth, permission, a
   * bad request, a stream or group still unknown after NOT_FOUND_RETRY_MS) ends it with that
   * error.
   */
  consume(opts: PollOptions = {}): AsyncIterable<GroupMessage> {
    checkPollOptions(opts);
    const group = this;
    const source = {
      get closed() {
        return group.host.closed;
      },
      get closedWith() {
        return group.host.closedWith;
      },
      closing: group.host.closing,
      poll: (o: PollOptions) => this.poll(o),
      named: this.consumerName !== undefined,
      handBack: (msgs: readonly GroupMessage[]) => this.handBack(msgs),
      sendGatheredAcks: () => this.settles.sendGatheredAcks(),
      release: () => this.release(),
      // In a cluster the loop follows the shard's owner through a failover or a move.
      refused: (err: unknown) => {
        const route = group.host.route;
        if (route?.active) route.refused('stream', group.stream, group.shard, err, '');
      },
      // Status events, on a failure, on the first answer after failures, and on the loop's end
      // after failures (before an answer) only.
      retrying: (error: Error, failure: RetriedPollFailure, failures: number, delayMs: number) =>
        group.host.emit?.({
          type: 'consume_retry',
          ...group.where(),
          failure,
          error,
          failures,
          delayMs,
        }),
      recovered: (failures: number, failedForMs: number) =>
        group.host.emit?.({ type: 'consume_recovered', ...group.where(), failures, failedForMs }),
      stopped: (reason: ConsumeStopReason, failures: number, failedForMs: number, error?: Error) =>
        group.host.emit?.({
          type: 'consume_stopped',
          ...group.where(),
          reason,
          failures,
          failedForMs,
          ...(error === undefined ? {} : { error }),
        }),
    };
    return { [Symbol.asyncIterator]: () => consumeIterator(source, opts) };
  }

  /** Which loop a status event is about: this group's stream, name, shard and consumer. */
  private where() {
    const { stream, name: group, shard, consumerName: consumer } = this;
    return consumer === undefined ? { stream, group, shard } : { stream, group, shard, consumer };
  }

  /** @internal Acknowledges `offset` (batched per turn; see GroupSettles.ack). */
  ack(offset: number): Promise<void> {
    return this.settles.ack(offset);
  }

  /** @internal Hands `offset` back, now or after `delayMs` (see GroupSettles.nack). */
  nack(offset: number, attempts: number, delayMs?: number): Promise<void> {
    return this.settles.nack(offset, attempts, delayMs);
  }

  /** @internal Hands `msgs` back, one promise per message (see GroupSettles.handBack). */
  handBack(msgs: readonly GroupMessage[]): Promise<void>[] {
    return this.settles.handBack(msgs);
  }

  /** @internal Sends a settle or another group request over the request stream. */
  settle(type: SettleType, offset: number, extra: Record<string, number> = {}): Promise<Message> {
    return this.settles.settle(type, offset, extra);
  }

  /**
   * Offsets the group gave up on, lowest first: one page of at most `limit` (default and most
   * 1,000) above `after`. `deadLetterPage` also says whether more remain; `allDeadLetters`
   * walks them all.
   */
  async deadLetters(opts: DeadLetterPageOptions = {}): Promise<number[]> {
    return (await this.deadLetterPage(opts)).offsets;
  }

  /**
   * One page of dead letters above `after`, at most `limit`, and whether more remain above it
   * (ask again with the page's last offset as `after`). A broker without pages lists only its
   * lowest 1,000: a page past them rejects with FeatureUnsupportedError instead of coming back
   * empty.
   */
  async deadLetterPage(opts: DeadLetterPageOptions = {}): Promise<DeadLetterPage> {
    const page = checkPage(opts);
    return this.onOwner(async (bc) => {
      // An older broker ignores `after` and `limit` (it would answer the first page again).
      const paged = (bc.negotiated.featuresHi & FEATURE_HI_GROUP_DEAD_LETTER_PAGES) !== 0;
      const type = 'group_dead_letters';
      const msg = (await this.adminOn(bc, type, FEATURE_GROUP_DEAD_LETTERS, opts, false, {
        ...(paged ? page : {}),
      })) as GroupAnswer<'group_dead_letter_list'>;
      return paged
        ? { offsets: msg.offsets, more: msg.more }
        : pageOfUnpagedList(msg.offsets, page);
    }, opts.signal);
  }

  /**
   * Every page of dead letters above `after`, lowest first, each of at most `limit`: one
   * request per page, made when the previous page has been consumed. Offsets dead-lettered
   * meanwhile above the walk are met; a redrive or discard of a yielded offset does not
   * disturb it.
   */
  async *deadLetterPages(opts: DeadLetterPageOptions = {}): AsyncGenerator<DeadLetterPage> {
    let after = opts.after;
    for (;;) {
      const page = await this.deadLetterPage({
        ...opts,
        ...(after !== undefined ? { after } : {}),
      });
      if (page.offsets.length > 0) yield page;
      if (!page.more || page.offsets.length === 0) return;
      after = page.offsets.at(-1);
    }
  }

  /** Every dead-letter offset above `after`, lowest first, fetched a page (`limit`) at a time. */
  async *allDeadLetters(opts: DeadLetterPageOptions = {}): AsyncGenerator<number> {
    for await (const page of this.deadLetterPages(opts)) yield* page.offsets;
  }

  /** Hands a dead letter out again (attempts start over); recorded durably before it resolves. */
  async redrive(offset: number, opts: GroupAdminOptions = {}): Promise<void> {
    checkOffset(offset, 'redrive');
    await this.settles.settle('group_redrive', offset, {}, opts.signal);
  }

  /** Drops a dead letter for good. */
  async discard(offset: number, opts: GroupAdminOptions = {}): Promise<void> {
    checkOffset(offset, 'discard');
    await this.settles.settle('group_discard', offset, {}, opts.signal);
  }

  async describe(opts: GroupAdminOptions = {}): Promise<GroupInfo> {
    const msg = (await this.admin(
      'group_describe',
      FEATURE_GROUP_ADMIN,
      opts,
      false,
    )) as GroupAnswer<'group_info'>;
    return {
      committed: msg.committed,
      tail: msg.tail,
      inFlight: msg.in_flight,
      owed: msg.owed,
      deadLetters: msg.dead_letters,
      cursorFsync: msg.cursor_fsync,
    };
  }

  /** Moves the position (voiding every standing claim); `ifNew` only sets a new group's. */
  async seek(
    start: 'earliest' | 'latest' | { offset: number },
    opts: GroupAdminOptions & { ifNew?: boolean } = {},
  ): Promise<{ offset: number; moved: boolean }> {
    if (typeof start === 'object') checkOffset(start?.offset, 'seek');
    const msg = (await this.admin('group_seek', FEATURE_GROUP_ADMIN, opts, true, {
      start,
      if_new: opts.ifNew ?? false,
    })) as GroupAnswer<'group_position'>;
    return { offset: msg.offset, moved: msg.moved };
  }

  /** Deletes the group's position, dead letters and in-flight state; answers whether it existed. */
  async delete(opts: GroupAdminOptions = {}): Promise<boolean> {
    const msg = (await this.admin(
      'group_delete',
      FEATURE_GROUP_ADMIN,
      opts,
      true,
    )) as GroupAnswer<'group_deleted'>;
    return msg.existed;
  }

  /** Sends an admin request; the signal ends the wait for a connection and for the answer (a
   *  `write` so ended may have been applied: its AbortedError says unknown outcome). */
  private admin(
    type: string,
    bit: number,
    opts: GroupAdminOptions,
    write: boolean,
    extra: Record<string, unknown> = {},
  ) {
    return this.onOwner((bc) => this.adminOn(bc, type, bit, opts, write, extra), opts.signal);
  }

  /** Runs `call` on the shard's owner: in a cluster following a `not_leader` answer to the
   *  owner it names (a refused request was not applied), else on the client's connection. */
  private async onOwner<T>(call: (bc: BrokerConnection) => Promise<T>, signal?: AbortSignal) {
    const route = this.host.route;
    if (route?.active) return route.request('stream', this.stream, this.shard, call, signal);
    return call(await this.host.connection(signal));
  }

  /** `admin` on a connection the caller holds (it read the connection's features first). */
  private adminOn(
    bc: BrokerConnection,
    type: string,
    bit: number,
    opts: GroupAdminOptions,
    write: boolean,
    extra: Record<string, unknown> = {},
  ) {
    requireFeature(bc, bit, type);
    const what = `group ${this.name} ${type}`;
    const asked = bc.requests.request(
      (request_id) => ({ type, ...this.scope(bc), ...extra, request_id }) as Message,
      write ? what : undefined,
    );
    return abortable(asked, opts.signal, what, write);
  }
}

/** Poll options the broker would refuse, refused at the call (InvalidArgumentError). */
/** An offset a group call names: what the wire carries, a whole number >= 0. */
function checkOffset(offset: number | undefined, call: string): void {
  if (!(Number.isSafeInteger(offset) && (offset as number) >= 0))
    throw new InvalidArgumentError(
      `${call} takes an offset, a whole number >= 0, got ${shown(offset)}`,
    );
}

export function checkPollOptions(opts: PollOptions): void {
  const whole = (v: number | undefined, min: number) =>
    v === undefined || (Number.isSafeInteger(v) && v >= min);
  // The wire carries up to 2^32 - 1 (the broker caps a poll at 1,000 records anyway).
  if (!whole(opts.max, 1) || (opts.max !== undefined && opts.max > 0xffff_ffff))
    throw new InvalidArgumentError('max is a whole number of records, from 1 to 2^32 - 1');
  if (!whole(opts.waitMs, 0))
    throw new InvalidArgumentError('waitMs is a whole number of ms, at least 0');
  if (!whole(opts.visibilityMs, 1))
    throw new InvalidArgumentError('visibilityMs is a whole number of ms, at least 1');
}
