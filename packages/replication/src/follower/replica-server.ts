/**
 * A follower broker's side of log shipping: answers each FLXI replication request for the
 * shards it follows. Per shard it keeps the follower log (opened on first use), its
 * FollowerAppender and its `replica` file, and runs one request at a time, in arrival order
 * (a bounded queue; past it the answer is `Overload`). A batch is checked (checksum,
 * generation), a raised generation is made durable before any record it carries is stored, and
 * the append's result becomes the answer. A bootstrap closes the log, makes it start at the
 * leader's base when it is empty, and opens it again.
 *
 * Divergence (a deposed leader back as a follower, holding records its successor never had):
 * a conflict is repaired only when the batch is of a newer generation than the one that wrote
 * the follower's conflicting record (its `generations` map), and never at or below the commit
 * offset: the suffix from the conflict is truncated and the batch appended. A conflict at the
 * batch's first record, above the older generation's start, first asks for that start (a gap
 * answer pointing back), so every record the truncation keeps was compared. Anything else
 * answers the conflict, which halts the leader's cursor.
 */
import {
  FollowerAppender,
  GenerationStarts,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  bootstrapLogAt,
  nodeIo,
  truncateLogAbove,
} from '@felix/storage';
import {
  INTERNAL_ERROR,
  REPLICA_LOG,
  type InternalFrame,
  type InternalMessage,
  InternalFrameDecoder,
  type ShardRef,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { MalformedPeerFrameError } from '../errors.js';
import { REPLICA_SHARDS_OPEN_MAX, REPLICA_SHARD_REQUESTS_QUEUED_MAX } from '../limits.js';
import { answerFor, checkBatch, checkGeneration } from './batch-check.js';

export interface ReplicaServerOptions {
  /** Where and how the follower log of `shard` lives (the broker's own layout). */
  logOptions(shard: ShardRef): LogOptions;
  /**
   * The shard's assignment as this broker knows it: undefined when it knows none (or is not in
   * its replica set); `follower: false` when it knows the assignment and does not follow it
   * there (a leader of a newer generation than that is retried: this broker has not heard yet).
   */
  assignment(shard: ShardRef): { generation: number; follower?: boolean } | undefined;
}

interface ShardState {
  opts: LogOptions;
  log: SegmentLog;
  appender: FollowerAppender;
  replica: ReplicaFile;
  /** Where each generation's records start in this log. */
  starts: GenerationStarts;
  tail: Promise<unknown>;
  queued: number;
}

type RecordsRequest = Extract<InternalMessage, { checksum: number }>;

export class ReplicaServer {
  private readonly shards = new Map<string, Promise<ShardState>>();
  /** The shards whose open finished (for `status`). */
  private readonly open = new Map<string, ShardState>();
  private closed = false;

  constructor(private readonly opts: ReplicaServerOptions) {}

  /** Answers one request frame; throws MalformedPeerFrameError when it is none. */
  handle(bytes: Uint8Array): Promise<Uint8Array> {
    let frames: InternalFrame[];
    try {
      frames = new InternalFrameDecoder().push(bytes);
    } catch (err) {
      return Promise.reject(new MalformedPeerFrameError(messageOf(err), { cause: err }));
    }
    if (frames.length !== 1)
      return Promise.reject(new MalformedPeerFrameError(`${frames.length} frames`));
    return this.handleFrame(frames[0]!);
  }

  /** Answers one decoded frame (a listener's reader already split it); throws
   *  MalformedPeerFrameError when its body is no valid message. */
  async handleFrame(frame: InternalFrame): Promise<Uint8Array> {
    const m = decodeRequest(frame);
    if (m.kind !== 'ReplicateRecords' && m.kind !== 'ReplicateBootstrap' && m.kind !== 'Fence')
      return refuse(m.correlationId, INTERNAL_ERROR.UnsupportedKind, `${m.kind} is not served`);
    if (m.kind === 'Fence' && m.log !== REPLICA_LOG.Stream)
      return refuse(m.correlationId, INTERNAL_ERROR.UnsupportedKind, `log ${m.log} is not fenced`);
    const assigned = this.opts.assignment(m.shard);
    if (assigned?.follower === false && assigned.generation < m.shard.generation && !this.closed)
      return refuse(
        m.correlationId,
        INTERNAL_ERROR.StaleRoute,
        `generation ${m.shard.generation} is newer than the assigned ${assigned.generation}`,
      );
    if (assigned === undefined || assigned.follower === false || this.closed)
      return refuse(m.correlationId, INTERNAL_ERROR.Unauthorized, 'not a replica of this shard');
    const key = shardKey(m.shard);
    if (!this.shards.has(key) && this.shards.size >= REPLICA_SHARDS_OPEN_MAX)
      return refuse(m.correlationId, INTERNAL_ERROR.Overload, 'too many shards open');
    let state: ShardState;
    const opening = this.state(key, m.shard);
    try {
      state = await opening;
    } catch (err) {
      // The log did not open (locked, damaged, disk failure): the leader retries later.
      return refuse(m.correlationId, INTERNAL_ERROR.StorageFailed, messageOf(err));
    }
    if (state.queued >= REPLICA_SHARD_REQUESTS_QUEUED_MAX)
      return refuse(m.correlationId, INTERNAL_ERROR.Overload, 'shard request queue full');
    state.queued++;
    const run = state.tail.then(() =>
      'checksum' in m
        ? this.records(state, m, assigned.generation)
        : m.kind === 'Fence'
          ? this.fence(state, m, assigned.generation)
          : this.bootstrap(state, m, assigned.generation),
    );
    // The chain only orders requests; each request's own failure is answered below.
    state.tail = run.catch(() => undefined);
    try {
      return await run;
    } catch (err) {
      // The log failed under this request: answer so the leader retries, and reopen next time
      // (unless a newer state already replaced this one).
      if (this.shards.get(key) === opening) {
        this.shards.delete(key);
        this.open.delete(key);
      }
      // The log already failed; the answer below carries that failure, not the close's.
      await state.log.close().catch(() => undefined);
      return refuse(m.correlationId, INTERNAL_ERROR.StorageFailed, messageOf(err));
    } finally {
      state.queued--;
    }
  }

  /** What this follower holds of `shard` (what it reports to the control plane), when open. */
  status(
    shard: ShardRef,
  ): { base: number; tail: number; durable: number; generation: number } | undefined {
    const s = this.open.get(shardKey(shard));
    if (s === undefined) return undefined;
    return {
      base: s.log.baseOffset,
      tail: s.log.tailOffset,
      durable: s.log.durableOffset,
      generation: s.replica.state.generation,
    };
  }

  /** Closes the follower log of `shard` (before this broker opens it as the leader's). */
  async release(shard: ShardRef): Promise<void> {
    const key = shardKey(shard);
    const p = this.shards.get(key);
    if (p === undefined) return;
    this.shards.delete(key);
    this.open.delete(key);
    const state = await p;
    await state.tail;
    await state.log.close();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.open.clear();
    for (const [key, p] of [...this.shards]) {
      this.shards.delete(key);
      // A shard whose open failed holds nothing to close.
      const state = await p.catch(() => undefined);
      if (state === undefined) continue;
      await state.tail;
      // Closing at shutdown: a log that fails to close is recovered at its next open.
      await state.log.close().catch(() => undefined);
    }
  }

  private state(key: string, shard: ShardRef): Promise<ShardState> {
    let p = this.shards.get(key);
    if (p === undefined) {
      p = openShard(this.opts.logOptions(shard)).then((s) => {
        this.open.set(key, s);
        return s;
      });
      // A failed open is not kept: the next request tries again.
      p.catch(() => this.shards.delete(key));
      this.shards.set(key, p);
    }
    return p;
  }

  private async records(
    state: ShardState,
    m: RecordsRequest,
    assigned: number,
  ): Promise<Uint8Array> {
    const verdict = checkBatch(
      { generation: m.shard.generation, checksum: m.checksum, payloads: m.payloads },
      { accepted: state.replica.state.generation, assigned },
    );
    if (verdict.kind === 'refuse') return refuse(m.correlationId, verdict.code, verdict.detail);
    if (verdict.raise) await state.replica.accept(m.shard.generation);
    // Records appended from here on came from a leader of this generation.
    await state.starts.begin(m.shard.generation, state.log.tailOffset);
    let result = await state.appender.appendAt(m.firstOffset, m.payloads);
    if (result.kind === 'conflict') {
      const repair = repairOf(state, m, result.at);
      if (repair.kind === 'gap')
        return encodeInternalMessage(answerFor(m.correlationId, repair, state.log.durableOffset));
      if (repair.kind === 'truncate') {
        await truncateAt(state, result.at);
        await state.starts.begin(m.shard.generation, state.log.tailOffset);
        result = await state.appender.appendAt(m.firstOffset, m.payloads);
      }
    }
    return encodeInternalMessage(answerFor(m.correlationId, result, state.log.durableOffset));
  }

  /**
   * A new leader's fence: this replica durably accepts its generation (refusing older leaders
   * from then on) and answers where its log ends, its commit offset and the generation of its
   * last record.
   */
  private async fence(
    state: ShardState,
    m: { correlationId: number; shard: ShardRef },
    assigned: number,
  ): Promise<Uint8Array> {
    const verdict = checkGeneration(m.shard.generation, {
      accepted: state.replica.state.generation,
      assigned,
    });
    if (verdict.kind === 'refuse') return refuse(m.correlationId, verdict.code, verdict.detail);
    await state.replica.accept(m.shard.generation);
    const logEnd = state.log.durableOffset;
    return encodeInternalMessage({
      kind: 'FenceOk',
      correlationId: m.correlationId,
      logEnd,
      commitOffset: state.replica.state.commitOffset,
      lastGeneration: logEnd > 0 ? state.starts.at(logEnd - 1).generation : 0,
    });
  }

  private async bootstrap(
    state: ShardState,
    m: { correlationId: number; shard: ShardRef; baseOffset: number },
    assigned: number,
  ) {
    const correlationId = m.correlationId;
    const base = m.baseOffset;
    // A bootstrap may discard an empty log's start: only the current leader may ask.
    const verdict = checkGeneration(m.shard.generation, {
      accepted: state.replica.state.generation,
      assigned,
    });
    if (verdict.kind === 'refuse') return refuse(correlationId, verdict.code, verdict.detail);
    if (verdict.raise) await state.replica.accept(m.shard.generation);
    await state.log.close();
    const r = await bootstrapLogAt(state.opts, base);
    state.log = await SegmentLog.open(state.opts);
    state.appender = new FollowerAppender(state.log);
    if (r.kind === 'ready')
      return encodeInternalMessage({ kind: 'ReplicateOk', correlationId, durableOffset: r.tail });
    return refuse(correlationId, INTERNAL_ERROR.LogConflict, `holds records ${r.base}..${r.tail}`);
  }
}

type Repair = { kind: 'truncate' } | { kind: 'gap'; expected: number } | { kind: 'halt' };

/** What a conflict at `at` with batch `m` allows (see the header). */
function repairOf(state: ShardState, m: RecordsRequest, at: number): Repair {
  const writer = state.starts.at(at);
  const commit = state.replica.state.commitOffset;
  // Same generation (or an older batch): two versions of one leader's record, or a leader
  // truncating below what it sent. Below the commit offset: what a majority holds. Never.
  if (m.shard.generation <= writer.generation || at < commit) return { kind: 'halt' };
  const floor = Math.max(writer.start, commit, state.log.baseOffset);
  if (m.firstOffset >= at && at > floor) return { kind: 'gap', expected: floor };
  return { kind: 'truncate' };
}

/** Drops the follower's records at and above `at` (a closed log, then reopened). */
async function truncateAt(state: ShardState, at: number): Promise<void> {
  await state.log.close();
  try {
    await truncateLogAbove(state.opts, at, { commitOffset: state.replica.state.commitOffset });
  } finally {
    state.log = await SegmentLog.open(state.opts);
    state.appender = new FollowerAppender(state.log);
  }
  await state.starts.truncated(at);
}

async function openShard(opts: LogOptions): Promise<ShardState> {
  const log = await SegmentLog.open(opts);
  try {
    const io = opts.io ?? nodeIo;
    const replica = await ReplicaFile.open(io, log.dir);
    const starts = await GenerationStarts.open(io, log.dir);
    return {
      opts,
      log,
      appender: new FollowerAppender(log),
      replica,
      starts,
      tail: Promise.resolve(),
      queued: 0,
    };
  } catch (err) {
    // The replica file's failure is what the caller needs; the log is recovered at next open.
    await log.close().catch(() => undefined);
    throw err;
  }
}

function decodeRequest(frame: InternalFrame): InternalMessage {
  try {
    return decodeInternalMessage(frame);
  } catch (err) {
    throw new MalformedPeerFrameError(messageOf(err), { cause: err });
  }
}

function refuse(correlationId: number, code: number, detail: string): Uint8Array {
  return encodeInternalMessage({
    kind: 'ReplicateError',
    correlationId,
    code,
    expectedOffset: 0,
    detail,
  });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function shardKey(s: ShardRef): string {
  return `${s.tenantId}\u0000${s.namespace}\u0000${s.stream}\u0000${s.shard}`;
}
