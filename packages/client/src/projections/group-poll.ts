/**
 * A consumer group's long polls: each poll waits on a stream of its own, and idle poll streams
 * are kept (at most GROUP_POLL_STREAMS_IDLE_MAX, on the current connection) and reused, so a
 * consume loop costs one stream and one auth, not one per poll. A named consumer's first poll
 * on each connection reclaims what the name still holds on older connections.
 */
import type { TransportStream } from '@felix/transport';
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_GROUP_CONSUMER,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_RECORD_TIMESTAMPS,
  FLAG_BINARY_GROUP_RECORDS,
  decodeGroupRecords,
  type Message,
  decodeMessage,
  encodeGroupPoll,
} from '@felix/wire';
import {
  AbortedError,
  ClientClosedError,
  ConnectionLostError,
  ProtocolError,
  TimeoutError,
  isStreamGone,
  notLeaderOf,
  refusalOf,
} from '../errors.js';
import {
  GROUP_POLL_RECORDS_DEFAULT,
  GROUP_POLL_STREAMS_IDLE_MAX,
  GROUP_POLL_STREAM_IDLE_RELEASE_MS,
  GROUP_POLL_WAIT_MS_DEFAULT,
} from '../limits.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import type { FrameStream, InFrame } from '../protocol/frame-stream.js';
import { type DueWatched, ticksSpanning } from '../util/check-ticks.js';
import { FrameTemplate, groupScopeOf } from './group-frames.js';
import { GroupMessage, type GroupSettler } from './group-message.js';
import type { GroupScope } from './group-settles.js';
import { type ProjectionHost, requireFeature } from './host.js';

export interface PollOptions {
  /** Records per poll (the broker caps it at 1,000). */
  max?: number;
  /** Long-poll wait when nothing is ready (the broker caps it). */
  waitMs?: number;
  /** Claim length for the records handed out (default: the broker's). */
  visibilityMs?: number;
  signal?: AbortSignal;
}

/**
 * One poll stream, serving one poll at a time: its answers are read as they arrive (through the
 * transport's chunk callback where it has one) and handed to the poll waiting, so a poll costs
 * one promise for its answer, not a chain of reads (a promise and a turn each) per frame. A poll
 * is stamped with the connection's check tick its answer is due by (its wait plus
 * requestTimeoutMs): a broker that never answers it fails it with TimeoutError at that check, and
 * the stream is reset (no timer of its own per poll).
 */
class PollStream implements DueWatched {
  /** The poll waiting for its answer. */
  private waiter: { resolve(msg: Message | null): void; reject(err: unknown): void } | null = null;
  /** What ended the stream: null at the broker's clean half-close; undefined while open. */
  private ended: unknown = undefined;
  /** The check tick the waiting poll's answer is due by, and the bound it names. */
  private due = 0;
  private dueMs = 0;
  /** The frame flags the connection negotiated (a binary answer needs its flag). */
  private readonly flags: number;

  constructor(
    readonly stream: TransportStream,
    readonly frames: FrameStream,
    private readonly bc: BrokerConnection,
  ) {
    this.flags = bc.negotiated.flags;
    bc.watchDue(this);
    frames.forEachFrame(this.onFrame, this.onEnd);
  }

  /** True until the stream ends (the broker's half-close, a reset, a bad answer). */
  get open(): boolean {
    return this.ended === undefined;
  }

  /**
   * Sends a poll request and resolves with its answer, or null when the stream ended first;
   * rejects with what ended the stream or failed the write. The answer is awaited from before
   * the write, so no frame can come before it is wanted.
   */
  ask(request: Uint8Array, waitMs: number): Promise<Message | null> {
    if (this.ended !== undefined) {
      return this.ended === null ? Promise.resolve(null) : Promise.reject(this.ended);
    }
    this.dueMs = waitMs + this.bc.requestTimeoutMs;
    this.due = this.bc.ticks.count + ticksSpanning(this.dueMs);
    const answer = new Promise<Message | null>((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
    this.stream.write(request).then(undefined, this.writeFailed);
    return answer;
  }

  /** A frame is the answer of the poll waiting; one with no poll waiting ends the stream. */
  private readonly onFrame = (frame: InFrame): void => {
    const w = this.waiter;
    if (w === null) throw new ProtocolError('a poll stream carried an answer nobody asked for');
    // A broker that granted the 0x8000 flag answers in binary; errors stay JSON. A frame that
    // cannot be decoded throws: the stream ends with that error, which the poll rejects with.
    const msg =
      frame.flags === FLAG_BINARY_GROUP_RECORDS && (this.flags & frame.flags) !== 0
        ? decodeGroupRecords(frame.flags, frame.payload)
        : decodeMessage(frame.payload);
    this.waiter = null;
    w.resolve(msg);
  };

  /** The waiting poll's answer is overdue at check `tick`: it fails, and the stream is reset. */
  checkDue(tick: number): void {
    const w = this.waiter;
    if (w === null || tick < this.due) return;
    const err = new TimeoutError(`a group poll on ${this.bc.server}`, this.dueMs);
    this.ended = err;
    this.waiter = null;
    this.stream.reset(0);
    w.reject(err);
  }

  /** The stream is done with: its polls are no longer the connection's to bound. */
  unwatch(): void {
    this.bc.unwatchDue(this);
  }

  private readonly onEnd = (err: unknown): void => {
    this.unwatch();
    // The broker ended its side (it stops): ours goes too, so its stop need not wait for it.
    if (err === null && this.ended === undefined) this.stream.reset(0);
    if (this.ended === undefined) this.ended = err ?? null;
    const w = this.waiter;
    this.waiter = null;
    if (err === null) w?.resolve(null);
    else w?.reject(err);
  };

  private readonly writeFailed = (err: unknown): void => {
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
  };
}

/** Who polls: the group's name on the wire, its consumer and what its messages settle with. */
export interface Poller {
  host: ProjectionHost;
  scope: GroupScope;
  settler: GroupSettler;
  consumerName: string | undefined;
  reclaim: boolean;
  timestamps: boolean;
}

export class GroupPolls {
  /**
   * A named consumer reclaims once per handle (a worker's first poll after it starts), not on
   * each connection: after a reconnect the process still holds what it was handed, and a
   * reclaim would hand those records to it a second time while it works on them. 'asking'
   * while the first poll is out; back to 'pending' if it failed, so the next poll asks.
   */
  private reclaimState: 'pending' | 'asking' | 'done' = 'pending';
  private pool: { bc: BrokerConnection; idle: PollStream[] } | undefined;
  /** Lets the idle streams go once none was parked for GROUP_POLL_STREAM_IDLE_RELEASE_MS. */
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private lastParkedMs = 0;
  private nextPollId = 1;
  /** The last poll's request template and what it was made for. */
  private template:
    | {
        bc: BrokerConnection;
        max: number;
        wait: number;
        visibility: number | undefined;
        reclaim: boolean;
        /** The request with its id. */
        frame: (requestId: number) => Uint8Array;
      }
    | undefined;

  constructor(private readonly who: Poller) {}

  /** Polls until records are ready or the wait ends; may resolve empty. `on`: the connection
   *  to poll on (a routed poll's); else the host's. */
  async poll(opts: PollOptions = {}, on?: BrokerConnection): Promise<GroupMessage[]> {
    const who = this.who;
    const picked = on ?? this.connection(opts);
    const bc = picked instanceof Promise ? await picked : picked;
    requireFeature(bc, FEATURE_CONSUMER_GROUP, 'consumer groups');
    if (who.consumerName !== undefined)
      requireFeature(bc, FEATURE_GROUP_CONSUMER, 'named consumers');
    // The handle's first poll reclaims; polls already in flight beside it need not.
    const reclaim = who.reclaim && this.reclaimState === 'pending';
    if (reclaim) this.reclaimState = 'asking';
    const idle = this.idleOn(bc);
    let kept = idle.pop();
    // One the broker ended (or broke) while it was idle cannot carry this poll: let it go.
    while (kept !== undefined && !kept.open) {
      finish(kept);
      kept = idle.pop();
    }
    const ps = kept ?? (await this.openPollStream(bc));
    let reusable = false;
    /** Aborted before anything was asked on it: the stream is sound and kept. */
    let untouched = false;
    const onAbort = () => ps.stream.reset(0);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // Aborted while the stream opened: nothing is asked (a poll sent now would claim records
      // for a caller that gave up); the stream itself is sound and kept.
      if (opts.signal?.aborted) {
        untouched = true;
        throw new AbortedError('a group poll', { cause: opts.signal.reason });
      }
      const wait = opts.waitMs ?? GROUP_POLL_WAIT_MS_DEFAULT;
      const msg = await ps.ask(this.pollRequest(bc, opts, reclaim), wait).catch((err: unknown) => {
        // Aborted by the caller (its stream reset): the caller's AbortedError, not the
        // transport's. The connection died under the poll: the client's own error.
        if (opts.signal?.aborted)
          throw new AbortedError('a group poll', { cause: opts.signal.reason });
        throw isStreamGone(err) ? this.cutOff(bc, err) : err;
      });
      if (msg === null) throw this.cutOff(bc);
      if (msg.type === 'error') throw refusalOf(msg);
      if (msg.type === 'not_leader') throw notLeaderOf(msg);
      if (msg.type !== 'group_records')
        throw new ProtocolError(`expected group_records, got ${msg.type}`);
      reusable = true;
      if (reclaim) this.reclaimState = 'done';
      return msg.records.map(
        (r) =>
          new GroupMessage(
            who.settler,
            r.offset,
            r.payload,
            r.attempts,
            r.skipped_before,
            r.timestamp_micros,
          ),
      );
    } finally {
      if (reclaim && this.reclaimState === 'asking') this.reclaimState = 'pending';
      opts.signal?.removeEventListener('abort', onAbort);
      const sound = untouched || (reusable && !opts.signal?.aborted);
      if (sound && idle.length < GROUP_POLL_STREAMS_IDLE_MAX) {
        idle.push(ps);
        this.parked();
      } else finish(ps);
    }
  }

  /** The connection a poll goes on: a live one as it stands (no await, no turn), else the one
   *  the host waits for. */
  connection(opts: PollOptions): BrokerConnection | Promise<BrokerConnection> {
    const live = opts.signal?.aborted ? undefined : this.who.host.live?.();
    return live ?? this.who.host.connection(opts.signal);
  }

  /** What a poll whose stream ended under it fails with: ClientClosedError when the client
   *  closed (as a call made after the close does; the ConnectError it closed itself with when
   *  its reconnect gave up), else ConnectionLostError (poll again once reconnected). */
  private cutOff(bc: BrokerConnection, cause?: unknown): Error {
    if (this.who.host.closed) return this.who.host.closedWith ?? new ClientClosedError();
    return new ConnectionLostError(bc.server, cause === undefined ? undefined : { cause });
  }

  /**
   * The poll request: binary where the connection negotiated the group exchange (its scope
   * encoded once), else JSON made once per connection and options (a loop polls with the same
   * ones) with each poll's request id spliced in, rather than encoded afresh.
   */
  private pollRequest(bc: BrokerConnection, opts: PollOptions, reclaim: boolean): Uint8Array {
    const max = opts.max ?? GROUP_POLL_RECORDS_DEFAULT;
    const wait = opts.waitMs ?? GROUP_POLL_WAIT_MS_DEFAULT;
    const visibility = opts.visibilityMs;
    let t = this.template;
    if (
      t?.bc !== bc ||
      t.max !== max ||
      t.wait !== wait ||
      t.visibility !== visibility ||
      t.reclaim !== reclaim
    ) {
      t = {
        bc,
        max,
        wait,
        visibility,
        reclaim,
        frame: this.pollFrames(bc, max, wait, visibility, reclaim),
      };
      this.template = t;
    }
    return t.frame(this.nextPollId++);
  }

  /** How a poll with these options is framed on `bc`, given its request id. */
  private pollFrames(
    bc: BrokerConnection,
    max: number,
    wait: number,
    visibility: number | undefined,
    reclaim: boolean,
  ): (requestId: number) => Uint8Array {
    const name = this.who.consumerName;
    const where = this.who.scope(bc);
    if ((bc.negotiated.featuresHi & FEATURE_HI_GROUP_BINARY) !== 0) {
      const scope = groupScopeOf(where);
      const ask = {
        maxRecords: max,
        waitMs: wait,
        reclaim,
        ...(name !== undefined ? { consumer: name } : {}),
        ...(visibility !== undefined ? { visibilityMs: visibility } : {}),
      };
      return (requestId) => encodeGroupPoll(scope, ask, requestId);
    }
    const shape = {
      type: 'group_poll',
      ...where,
      max_records: max,
      wait_ms: wait,
      request_id: 0,
      reclaim,
      ...(name !== undefined ? { consumer: name } : {}),
      ...(visibility !== undefined ? { visibility_ms: visibility } : {}),
    } as Message;
    const frames = new FrameTemplate(shape, ['request_id']);
    return (requestId) => frames.frame([requestId]);
  }

  private async openPollStream(bc: BrokerConnection): Promise<PollStream> {
    const without = this.who.timestamps ? 0 : FEATURE_RECORD_TIMESTAMPS;
    const { stream, frames } = await bc.openStream(without);
    return new PollStream(stream, frames, bc);
  }

  /** The idle poll streams on `bc` (those of a replaced connection are reset). */
  private idleOn(bc: BrokerConnection): PollStream[] {
    if (this.pool?.bc !== bc) {
      for (const ps of this.pool?.idle.splice(0) ?? []) {
        ps.unwatch();
        ps.stream.reset(0);
      }
      this.pool = { bc, idle: [] };
    }
    return this.pool.idle;
  }

  /** Releases idle poll streams (a consume loop ending calls this). */
  release(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    for (const ps of this.pool?.idle.splice(0) ?? []) finish(ps);
  }

  /** A stream was parked: the idle streams go once none was parked for the bound. One timer
   *  per idle spell, not one per poll: it re-arms for what is left when a park came since. */
  private parked(): void {
    this.lastParkedMs = Date.now();
    if (this.idleTimer !== undefined) return;
    const arm = (ms: number) => {
      this.idleTimer = setTimeout(() => {
        this.idleTimer = undefined;
        const left = this.lastParkedMs + GROUP_POLL_STREAM_IDLE_RELEASE_MS - Date.now();
        if (left > 0) arm(left);
        else this.release();
      }, ms);
      this.idleTimer.unref?.(); // idle streams must not keep a process running
    };
    arm(GROUP_POLL_STREAM_IDLE_RELEASE_MS);
  }
}

/** Finishes both directions of a poll stream so the transport can retire it. */
function finish(ps: PollStream): void {
  ps.unwatch();
  ps.stream.end().catch(() => undefined); // a stream already reset has nothing to end
  void ps.frames.release().catch(() => undefined); // nor anything left to read
}
