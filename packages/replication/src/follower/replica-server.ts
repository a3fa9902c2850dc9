/**
 * A follower broker's side of log shipping: answers each FLXI replication request for the
 * shards it follows, for every log that rides with a shard (log-kind.ts): the request's kind
 * names the log, the options say where that log lives and whether this broker follows its
 * owning shard. Per (shard, log) it keeps the follower log (opened on first use), its
 * FollowerAppender and its `replica` file, and runs one request at a time, in arrival order
 * (a bounded queue; past it the answer is `Overload`), a batch up to its write: its answer
 * waits for the log to hold it (synced under `onCommit`) outside the queue, so the next batch
 * a pipelining leader sent is written while that sync runs. A batch is checked (checksum,
 * generation), a raised generation is made durable before any record it carries is stored, and
 * the append's result becomes the answer. A bootstrap closes the log, makes it start at the
 * leader's base when it is empty, and opens it again; a rebuild (kind 24) does the same to a
 * log whose records all lie below that base, discarding them (the leader's answer to the
 * `needs_bootstrap` halt a bootstrap's refusal leads to).
 *
 * Every end this replica names (a batch's answer, its fence's log end, the tail a new leader
 * may fetch, its status) is what its log acknowledges under its fsync mode (`readableOffset`):
 * synced records under `onCommit`, written ones under `periodic`, as a local append is acked.
 *
 * Divergence (a deposed leader back as a follower, holding records its successor never had):
 * a conflict is repaired only when the batch is of a newer generation than the one that wrote
 * the follower's conflicting record (its `generations` map), and never at or below the commit
 * offset: the suffix from the conflict is truncated and the batch appended. A conflict at the
 * batch's first record, above the older generation's start, first asks for that start (a gap
 * answer pointing back), so every record the truncation keeps was compared; so does a newer
 * generation's first batch that overlaps none of the records an older generation wrote above
 * the commit offset (it is asked to start one record below). Anything else answers the
 * conflict, which halts the leader's cursor.
 *
 * A batch of a quorum shard (kind 26) carries the leader's commit mark: after storing the batch
 * the follower records the lower of the mark and what the batch showed it holds in its
 * `replica` file (CommitSaver), never before its answer: at most once per
 * REPLICA_COMMIT_SAVE_ON_COMMIT_INTERVAL_MS when `commitSync` says so (the stream fsyncs on
 * commit), otherwise once per REPLICA_COMMIT_SAVE_INTERVAL_MS. Only a raised generation is
 * saved before the answer (before the batch is stored).
 *
 * A trim of a riding log (kind 40, a Felix extension) names the leader's base after a
 * compaction: the follower deletes whole sealed segments ending at or below the lower of that
 * base and its own durable end (never at or above the commit offset when retention floors at
 * it), in the shard's request order like any request of that log.
 */
import {
  FLAG_GENERATION_START,
  FollowerAppender,
  GenerationStarts,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  bootstrapLogAt,
  decodeGenerationStartBody,
  rebuildLogAt,
  nodeIo,
  truncateLogAbove,
} from '@felix/storage';
import {
  INTERNAL_ERROR,
  REPLICATE_MARK,
  type InternalFrame,
  type InternalMessage,
  InternalFrameDecoder,
  type ShardRef,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { MalformedPeerFrameError } from '../errors.js';
import { markOf, markedFrame, recordsFrame } from '../frames.js';
import { type ReplicaLogKind, isFencedLog, logOfWire, shippingKindOf } from '../log-kind.js';
import {
  REPLICA_SHARDS_OPEN_MAX,
  REPLICA_SHARD_REQUESTS_QUEUED_MAX,
  TAIL_FETCH_BYTES_MAX,
} from '../limits.js';
import { answerFor, checkBatch, checkGeneration } from './batch-check.js';
import { CommitSaver } from './commit-saver.js';

export interface ReplicaServerOptions {
  /** Where and how the follower copy of `log` of `shard` lives (the broker's own layout). */
  logOptions(shard: ShardRef, log: ReplicaLogKind): LogOptions;
  /**
   * The assignment of the shard owning `log` (the stream shard for group state, the cache shard
   * for counters) as this broker knows it: undefined when it knows none (a broker just started,
   * or a shard just placed, hears from its leader before its own feed names the assignment; or
   * the shard was unassigned, which its leader's feed soon tells it too): the sender is told to
   * retry; `follower: false` when it knows the assignment and does not follow it there
   * (refused, but a leader of a newer generation than that is told to retry: this broker has
   * not heard yet).
   */
  assignment(
    shard: ShardRef,
    log: ReplicaLogKind,
  ): { generation: number; follower?: boolean } | undefined;
  /** Whether the stream fsyncs on commit (its commit offset is saved at the shorter interval);
   *  absent: yes. */
  commitSync?(shard: ShardRef): boolean;
  /**
   * Whether retention on this copy (`logOptions`' `retention`) stops below the commit offset
   * this replica knows, as on a quorum shard's leader: what a majority may not hold yet is never
   * deleted. Absent: false (a `leader` shard carries no commit offset).
   */
  retentionStopsAtCommit?(shard: ShardRef, log: ReplicaLogKind): boolean;
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
  /** Answers whose batch is written and waits to be held (synced under `onCommit`). */
  answering: Set<Promise<unknown>>;
  commits: CommitSaver;
  /** Retention stops below the commit offset (`retentionStopsAtCommit`). */
  floorAtCommit: boolean;
  /** The newest generation whose leader's batch this log was compared with or appended (in
   *  memory: after a reopen, one batch of each generation is asked to overlap again). */
  compared: number;
  /** The newest generation whose batch this copy answered as held (0: none since it opened),
   *  and the furthest end of such a batch: what a leader of it counts this copy as holding. */
  heldGeneration: number;
  heldThrough: number;
  /** Where this log ended when the newest fence accepted its generation (that generation). */
  fencedEnd: number;
  fencedGeneration: number;
}

type RecordsRequest = Extract<InternalMessage, { checksum: number }>;
type BootstrapRequest = Extract<InternalMessage, { baseOffset: number; log?: never }>;
type FenceRequest = Extract<InternalMessage, { kind: 'Fence' }>;
type FetchRequest = Extract<InternalMessage, { kind: 'ReplicateFetch' }>;
type TrimRequest = Extract<InternalMessage, { kind: 'ReplicateTrim' }>;
type RebuildRequest = Extract<InternalMessage, { kind: 'ReplicateRebuild' }>;
type Request =
  | RecordsRequest
  | BootstrapRequest
  | FenceRequest
  | FetchRequest
  | TrimRequest
  | RebuildRequest;
/** A request's answer, or, for a batch written and not yet held, the answer to come. */
type Answer = Uint8Array | { later: Promise<Uint8Array> };

/** Waits for every promise in `pending` to settle (their failures were answered already). */
async function settled(pending: Set<Promise<unknown>>): Promise<void> {
  await Promise.allSettled([...pending]);
}

/** The request and the log it is for, or the refusal of a kind this server does not serve. */
function targetOf(
  decoded: InternalMessage,
): { m: Request; log: ReplicaLogKind } | { refused: Uint8Array } {
  const unsupported = (detail: string) => ({
    refused: refuse(decoded.correlationId, INTERNAL_ERROR.UnsupportedKind, detail),
  });
  if (decoded.kind === 'Fence' || decoded.kind === 'ReplicateFetch') {
    // A stream's records and a cache shard's cache and counter logs are fenced (and their
    // tails taken); group state follows its stream shard's fence.
    const log = logOfWire(decoded.log);
    if (log === undefined || !isFencedLog(log))
      return unsupported(`log ${decoded.log} is not fenced`);
    return { m: decoded, log };
  }
  if (decoded.kind === 'ReplicateRebuild') {
    const log = logOfWire(decoded.log);
    if (log === undefined) return unsupported(`log ${decoded.log} is unknown`);
    return { m: decoded, log };
  }
  if (decoded.kind === 'ReplicateTrim') {
    const log = logOfWire(decoded.log);
    // A stream's follower copy takes the stream's own retention instead.
    if (log === undefined || log === 'stream')
      return unsupported(`log ${decoded.log} is not trimmed by its leader`);
    return { m: decoded, log };
  }
  const shipping = shippingKindOf(decoded.kind);
  if (shipping === undefined) return unsupported(`${decoded.kind} is not served`);
  // Every shipping kind is a records or a bootstrap message (log-kind.ts pairs them).
  return { m: decoded as RecordsRequest | BootstrapRequest, log: shipping.log };
}

/**
 * The refusal of a request from another generation's leader than the one this replica accepted
 * (an older one is deposed: `FencedEpoch`; a newer one has not reached it yet: `StaleRoute`,
 * detailed `<newer> <generation> yet`), or undefined when it is the accepted one.
 */
function refuseOtherGeneration(
  state: ShardState,
  m: { correlationId: number; shard: ShardRef },
  newer: string,
): Uint8Array | undefined {
  const accepted = state.replica.state.generation;
  const asked = m.shard.generation;
  if (asked < accepted)
    return refuse(m.correlationId, INTERNAL_ERROR.FencedEpoch, `generation ${accepted} accepted`);
  if (asked > accepted)
    return refuse(m.correlationId, INTERNAL_ERROR.StaleRoute, `${newer} ${asked} yet`);
  return undefined;
}

/** The highest commit offset this replica knows of: saved, or carried and not saved yet. */
function commitOf(state: ShardState): number {
  return Math.max(state.replica.state.commitOffset, state.commits.offered);
}

/** Keeps retention below the commit offset on a copy that needs it (after an open or a mark). */
function holdRetentionFloor(state: ShardState): void {
  if (state.floorAtCommit) state.log.setRetentionFloor(commitOf(state));
}

export class ReplicaServer {
  private readonly shards = new Map<string, Promise<ShardState>>();
  /** The shards whose open finished (for `status`). */
  private readonly open = new Map<string, ShardState>();
  /** What each key's copy is of (its retention is asked again by `refreshRetention`). */
  private readonly refs = new Map<string, { shard: ShardRef; log: ReplicaLogKind }>();
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
    const target = targetOf(decodeRequest(frame));
    if ('refused' in target) return target.refused;
    const { m, log } = target;
    // Unauthorized stops the leader's shipping here until its replica set changes: kept for
    // refusals that waiting does not end; the others are resent after a backoff.
    if (this.closed)
      return refuse(m.correlationId, INTERNAL_ERROR.Unavailable, 'this broker is shutting down');
    const assigned = this.opts.assignment(m.shard, log);
    if (assigned === undefined)
      return refuse(
        m.correlationId,
        INTERNAL_ERROR.StaleRoute,
        `no assignment of this ${log} known here yet`,
      );
    if (assigned.follower === false && assigned.generation < m.shard.generation)
      return refuse(
        m.correlationId,
        INTERNAL_ERROR.StaleRoute,
        `generation ${m.shard.generation} is newer than the assigned ${assigned.generation}`,
      );
    if (assigned.follower === false)
      return refuse(m.correlationId, INTERNAL_ERROR.Unauthorized, `not a replica of this ${log}`);
    const key = shardKey(m.shard, log);
    if (!this.shards.has(key) && this.shards.size >= REPLICA_SHARDS_OPEN_MAX)
      return refuse(m.correlationId, INTERNAL_ERROR.Overload, 'too many shards open');
    let state: ShardState;
    const opening = this.state(key, m.shard, log);
    try {
      state = await opening;
    } catch (err) {
      // The log did not open (locked, damaged, disk failure): the leader retries later.
      return refuse(m.correlationId, INTERNAL_ERROR.StorageFailed, messageOf(err));
    }
    if (state.queued >= REPLICA_SHARD_REQUESTS_QUEUED_MAX)
      return refuse(m.correlationId, INTERNAL_ERROR.Overload, 'shard request queue full');
    state.queued++;
    // The chain orders requests up to a batch's write; its answer waits for the sync outside
    // it, so the next batch is written while that sync runs (and joins it or the next).
    const run = state.tail.then(() => this.serve(state, m, assigned.generation));
    // The chain only orders requests; each request's own failure is answered below.
    state.tail = run.catch(() => undefined);
    const answered = run.then((a) => (a instanceof Uint8Array ? a : a.later));
    state.answering.add(answered);
    try {
      return await answered;
    } catch (err) {
      // The log failed under this request: answer so the leader retries, and reopen next time
      // (unless a newer state already replaced this one).
      if (this.shards.get(key) === opening) {
        this.shards.delete(key);
        this.open.delete(key);
      }
      // The log already failed; the answer below carries that failure, not the close's.
      await state.commits.close().catch(() => undefined);
      // As above: the close of a failed log adds nothing to the answer.
      await state.log.close().catch(() => undefined);
      return refuse(m.correlationId, INTERNAL_ERROR.StorageFailed, messageOf(err));
    } finally {
      state.answering.delete(answered);
      state.queued--;
    }
  }

  /** One request, its turn come in the shard's queue: its answer, or (a batch written, not yet
   *  held) the answer to come. */
  private serve(state: ShardState, m: Request, assigned: number): Promise<Answer> {
    if ('checksum' in m) return this.records(state, m, assigned);
    switch (m.kind) {
      case 'Fence':
        return this.fence(state, m, assigned);
      case 'ReplicateFetch':
        return this.fetch(state, m);
      case 'ReplicateTrim':
        return this.trim(state, m);
      case 'ReplicateRebuild':
        return this.rebuild(state, m, assigned);
      default:
        return this.bootstrap(state, m, assigned);
    }
  }

  /** What this follower holds of `log` of `shard` (what it reports to the control plane), when
   *  open. */
  status(
    shard: ShardRef,
    log: ReplicaLogKind = 'stream',
  ):
    | {
        base: number;
        tail: number;
        durable: number;
        generation: number;
        commit: number;
        /** The newest generation whose batch this copy answered as held (0: none yet), and
         *  the furthest end of its batches held (what that generation's leader counts). */
        held: number;
        heldThrough: number;
        /** Where the log ended when the newest fence accepted `fencedGeneration` (0, 0: none
         *  since it opened): where that generation's leader starts, when it took no longer tail. */
        fencedEnd: number;
        fencedGeneration: number;
      }
    | undefined {
    const s = this.open.get(shardKey(shard, log));
    if (s === undefined) return undefined;
    return {
      base: s.log.baseOffset,
      tail: s.log.tailOffset,
      durable: s.log.readableOffset,
      generation: s.replica.state.generation,
      commit: s.replica.state.commitOffset,
      held: s.heldGeneration,
      heldThrough: s.heldThrough,
      fencedEnd: s.fencedEnd,
      fencedGeneration: s.fencedGeneration,
    };
  }

  /** Closes the follower copy of `log` of `shard` (before this broker opens it as the
   *  leader's). */
  async release(shard: ShardRef, log: ReplicaLogKind = 'stream'): Promise<void> {
    const key = shardKey(shard, log);
    const p = this.shards.get(key);
    if (p === undefined) return;
    this.shards.delete(key);
    this.open.delete(key);
    this.refs.delete(key);
    const state = await p;
    await state.tail;
    await settled(state.answering);
    await state.commits.close();
    await state.log.close();
  }

  /**
   * Applies to every open copy the retention `logOptions` names now (a stream's retention changed
   * in its catalog reaches its follower copies without a reopen); resolves with the segments
   * deleted. A copy whose bounds cannot be applied keeps the ones it has.
   */
  async refreshRetention(): Promise<number> {
    let deleted = 0;
    for (const [key, state] of [...this.open]) {
      const ref = this.refs.get(key);
      if (ref === undefined) continue;
      const want = this.opts.logOptions(ref.shard, ref.log).retention;
      // Its reopens (a truncation, a bootstrap, a rebuild) take the new bounds too.
      state.opts = { ...state.opts, retention: want };
      // A copy closing meanwhile (released, shut down) has no retention left to change.
      deleted += await state.log.setRetention(want).catch(() => 0);
    }
    return deleted;
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
      await settled(state.answering);
      // Closing at shutdown: a commit offset not saved is at most a second stale (documented).
      await state.commits.close().catch(() => undefined);
      // Closing at shutdown: a log that fails to close is recovered at its next open.
      await state.log.close().catch(() => undefined);
    }
  }

  private state(key: string, shard: ShardRef, log: ReplicaLogKind): Promise<ShardState> {
    let p = this.shards.get(key);
    if (p === undefined) {
      const floorAtCommit = this.opts.retentionStopsAtCommit?.(shard, log) ?? false;
      p = openShard(this.opts.logOptions(shard, log), floorAtCommit).then((s) => {
        this.open.set(key, s);
        this.refs.set(key, { shard, log });
        return s;
      });
      // A failed open is not kept: the next request tries again.
      p.catch(() => this.shards.delete(key));
      this.shards.set(key, p);
    }
    return p;
  }

  private async records(state: ShardState, m: RecordsRequest, assigned: number): Promise<Answer> {
    const marks = m.kind === 'ReplicateMarkedRecords' ? m.marks : undefined;
    const verdict = checkBatch(
      { generation: m.shard.generation, checksum: m.checksum, payloads: m.payloads, marks },
      { accepted: state.replica.state.generation, assigned },
    );
    if (verdict.kind === 'refuse') return refuse(m.correlationId, verdict.code, verdict.detail);
    if (verdict.raise) await state.replica.accept(m.shard.generation);
    const overlap = uncomparedTail(state, m);
    if (overlap !== undefined)
      return encodeInternalMessage(answerFor(m.correlationId, overlap, state.log.readableOffset));
    // Records appended from here on came from a leader of this generation.
    await labelBatch(state, m);
    const append = { ...flagsOf(marks), until: 'written' as const };
    let result = await state.appender.appendAt(m.firstOffset, m.payloads, append);
    if (result.kind === 'conflict') {
      const repair = repairOf(state, m, result.at);
      if (repair.kind === 'gap')
        return encodeInternalMessage(answerFor(m.correlationId, repair, state.log.readableOffset));
      if (repair.kind === 'truncate') {
        await truncateAt(state, result.at);
        await labelBatch(state, m);
        result = await state.appender.appendAt(m.firstOffset, m.payloads, append);
      }
    }
    if (result.kind !== 'appended')
      return encodeInternalMessage(answerFor(m.correlationId, result, state.log.readableOffset));
    await labelStarts(state, m);
    state.compared = Math.max(state.compared, m.shard.generation);
    return { later: this.held(state, m, result.tail) };
  }

  /** A written batch's answer once the log holds it as its fsync mode acknowledges. */
  private async held(state: ShardState, m: RecordsRequest, tail: number): Promise<Uint8Array> {
    const log = state.log;
    try {
      await log.waitDurable(tail);
    } catch (err) {
      if (state.log === log) throw err;
      // Closed by the reopen below: answered as a reopen.
    }
    // Requests served after this batch's write may have changed what an ok would claim: a
    // repair or a bootstrap reopened the log (its close synced the batch, which the reopened
    // log may no longer hold), or a fence raised the generation and told its new leader a log
    // end without this batch (unsynced then). Either way this leader must not count it.
    if (state.log !== log)
      return refuse(m.correlationId, INTERNAL_ERROR.Unavailable, 'log reopened under the batch');
    if (state.replica.state.generation > m.shard.generation)
      return refuse(
        m.correlationId,
        INTERNAL_ERROR.FencedEpoch,
        `generation ${m.shard.generation} fenced by ${state.replica.state.generation} before held`,
      );
    if (m.kind === 'ReplicateCommittedRecords') {
      // Only what this batch showed is known to match the leader's log.
      const held = Math.min(m.commitOffset, m.firstOffset + m.payloads.length);
      // Saved behind the answer: the offset on disk only bounds truncation from below.
      state.commits.offer(held, this.opts.commitSync?.(m.shard) ?? true);
      holdRetentionFloor(state);
    }
    const end = m.firstOffset + m.payloads.length;
    if (m.shard.generation > state.heldGeneration) state.heldThrough = end;
    else if (m.shard.generation === state.heldGeneration)
      state.heldThrough = Math.max(state.heldThrough, end);
    state.heldGeneration = Math.max(state.heldGeneration, m.shard.generation);
    return encodeInternalMessage(
      answerFor(m.correlationId, { kind: 'appended', tail }, log.readableOffset),
    );
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
    const logEnd = state.log.readableOffset;
    state.fencedEnd = logEnd;
    state.fencedGeneration = m.shard.generation;
    return encodeInternalMessage({
      kind: 'FenceOk',
      correlationId: m.correlationId,
      logEnd,
      commitOffset: commitOf(state),
      lastGeneration: logEnd > 0 ? state.starts.at(logEnd - 1).generation : 0,
    });
  }

  /**
   * A promoted leader taking the furthest tail: records from `fromOffset` up to the end this
   * replica's log acknowledges (its fence answered it), at most TAIL_FETCH_BYTES_MAX (at least one record when it holds any). Answered
   * only to the leader of exactly the generation this replica accepted in its fence: an older
   * one is deposed, a newer one has not fenced it yet.
   */
  private async fetch(state: ShardState, m: FetchRequest): Promise<Uint8Array> {
    const other = refuseOtherGeneration(state, m, 'not fenced at');
    if (other !== undefined) return other;
    const held = state.log.readableOffset;
    if (m.fromOffset < state.log.baseOffset)
      return refuse(
        m.correlationId,
        INTERNAL_ERROR.LogConflict,
        `trimmed below ${state.log.baseOffset}`,
      );
    if (m.fromOffset >= held) return recordsFrame(m.correlationId, m.shard, m.fromOffset, []);
    const r = await state.log.read(m.fromOffset, {
      maxRecords: held - m.fromOffset,
      maxBytes: Math.min(m.maxBytes, TAIL_FETCH_BYTES_MAX),
      // Every record at its offset: a generation start travels with its mark (kind 25).
      includeGenerationStarts: true,
    });
    if (r.kind === 'trimmed')
      return refuse(m.correlationId, INTERNAL_ERROR.LogConflict, `trimmed at ${m.fromOffset}`);
    const payloads = r.records.map((rec) => rec.payload);
    if (r.records.some((rec) => (rec.flags & FLAG_GENERATION_START) !== 0)) {
      const marks = new Uint8Array(r.records.map((rec) => markOf(rec.flags)));
      return markedFrame(m.correlationId, m.shard, m.fromOffset, payloads, marks);
    }
    return recordsFrame(m.correlationId, m.shard, m.fromOffset, payloads);
  }

  /**
   * The leader's base of a riding log: deletes whole sealed segments ending at or below the
   * lower of it and this copy's durable end (and its commit offset, when retention floors at
   * it); the active segment stays, sealed when it holds records below that cut. The leader sends
   * it only once this follower confirmed every entry its compaction restated at the tail, so the
   * copy still replays to the leader's values.
   * Only the leader of the generation this replica accepted may ask: an older one is deposed,
   * a newer one has shipped nothing here yet.
   */
  private async trim(state: ShardState, m: TrimRequest): Promise<Uint8Array> {
    const other = refuseOtherGeneration(state, m, 'no batch of');
    if (other !== undefined) return other;
    const durable = state.log.durableOffset;
    const commit = state.floorAtCommit ? commitOf(state) : Number.POSITIVE_INFINITY;
    holdRetentionFloor(state);
    const cut = Math.min(m.baseOffset, durable, commit);
    await state.log.trimBelow(cut);
    // The active segment itself holds records below the cut: sealed now, the next trim can take
    // it (as the leader's compaction seals at its cut), so the copy does not keep up to a whole
    // segment of what the leader dropped until it rolls.
    if (state.log.segmentCount === 1 && state.log.baseOffset < cut) await state.log.seal();
    return encodeInternalMessage({
      kind: 'ReplicateOk',
      correlationId: m.correlationId,
      durableOffset: durable,
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
    holdRetentionFloor(state);
    if (r.kind === 'ready')
      return encodeInternalMessage({ kind: 'ReplicateOk', correlationId, durableOffset: r.tail });
    return refuse(correlationId, INTERNAL_ERROR.LogConflict, `holds records ${r.base}..${r.tail}`);
  }

  /**
   * The leader's rebuild of a copy it halted `needs_bootstrap`: every record here lies below its
   * base (its retention or compaction dropped them there), so the copy is emptied, its
   * generation history with it, and starts at the base; a copy holding anything at or above the
   * base is a divergence and keeps its records (`LogConflict`). Only a leader of the generation
   * this replica accepted or of a newer one assigned here may ask, as for a bootstrap (so a
   * deposed leader not fenced here yet still can: what goes lies below its base either way);
   * the commit offset this replica saved stays (it is below the base).
   */
  private async rebuild(state: ShardState, m: RebuildRequest, assigned: number) {
    const correlationId = m.correlationId;
    const verdict = checkGeneration(m.shard.generation, {
      accepted: state.replica.state.generation,
      assigned,
    });
    if (verdict.kind === 'refuse') return refuse(correlationId, verdict.code, verdict.detail);
    if (verdict.raise) await state.replica.accept(m.shard.generation);
    const held = { base: state.log.baseOffset, tail: state.log.tailOffset };
    if (held.tail > m.baseOffset)
      return refuse(
        correlationId,
        INTERNAL_ERROR.LogConflict,
        `holds records ${held.base}..${held.tail}`,
      );
    // The generations that wrote the records about to go, forgotten first: a crash between the
    // two leaves a history that is empty or true, never one dating records it no longer has.
    await state.starts.truncated(0);
    state.compared = 0;
    await state.log.close();
    let r: Awaited<ReturnType<typeof rebuildLogAt>>;
    try {
      r = await rebuildLogAt(state.opts, m.baseOffset);
    } finally {
      state.log = await SegmentLog.open(state.opts);
      state.appender = new FollowerAppender(state.log);
      holdRetentionFloor(state);
    }
    if (r.kind !== 'ready')
      return refuse(
        correlationId,
        INTERNAL_ERROR.LogConflict,
        `holds records ${r.base}..${r.tail}`,
      );
    return encodeInternalMessage({ kind: 'ReplicateOk', correlationId, durableOffset: r.tail });
  }
}

type Repair = { kind: 'truncate' } | { kind: 'gap'; expected: number } | { kind: 'halt' };

/**
 * A gap pointing one record back when a newer generation's first batch here overlaps none of
 * this log's records while its last record, above the commit offset, was written by an older
 * generation: appending there would keep a deposed leader's suffix below the batch uncompared
 * (a leader restarting its shipper for a follower-set change starts at its own tail, not at its
 * generation's start). The overlapping batch then meets the conflict rules above.
 */
function uncomparedTail(
  state: ShardState,
  m: RecordsRequest,
): { kind: 'gap'; expected: number } | undefined {
  if (m.shard.generation <= state.compared) return undefined;
  const tail = state.log.tailOffset;
  if (m.firstOffset < tail || tail <= Math.max(commitOf(state), state.log.baseOffset))
    return undefined;
  // Generation 0: records written unlabelled (a riding log its leader wrote; only a stream
  // leader records where its generation starts), left to the conflict rules as before.
  const writer = state.starts.at(tail - 1).generation;
  if (writer === 0 || writer >= m.shard.generation) return undefined;
  return { kind: 'gap', expected: tail - 1 };
}

/** What a conflict at `at` with batch `m` allows (see the header). */
function repairOf(state: ShardState, m: RecordsRequest, at: number): Repair {
  const writer = state.starts.at(at);
  const commit = commitOf(state);
  // Same generation (or an older batch): two versions of one leader's record, or a leader
  // truncating below what it sent. Below the commit offset: what a majority holds. Never.
  if (m.shard.generation <= writer.generation || at < commit) return { kind: 'halt' };
  const floor = Math.max(writer.start, commit, state.log.baseOffset);
  if (m.firstOffset >= at && at > floor) return { kind: 'gap', expected: floor };
  return { kind: 'truncate' };
}

/** A quorum stream's batch: the commit-carrying kind, or a marked one (a generation start). */
function isQuorumStreamBatch(m: RecordsRequest): boolean {
  return m.kind === 'ReplicateCommittedRecords' || m.kind === 'ReplicateMarkedRecords';
}

/**
 * Dates the batch's generation from this log's tail, except for a quorum stream that has a
 * history already. There a new leader's first record is its generation-start record
 * (`labelStarts` dates the generation there, as the leader's own file does), and a newer
 * generation of a leader already leading (its follower set changed: no record, no fence) goes
 * on with that leader's history. Dated from the tail at each such change, a follower later
 * promoted told a subscriber resuming with the history of its first leader's generation that
 * the log parted at that tail, and the subscriber got every record since again.
 */
async function labelBatch(state: ShardState, m: RecordsRequest): Promise<void> {
  if (isQuorumStreamBatch(m) && state.starts.all.length > 0) return;
  await state.starts.begin(m.shard.generation, state.log.tailOffset);
}

/** The generation-start records of an appended quorum batch date their generations. */
async function labelStarts(state: ShardState, m: RecordsRequest): Promise<void> {
  if (m.kind !== 'ReplicateMarkedRecords') return;
  for (const [i, mark] of m.marks.entries()) {
    if (mark !== REPLICATE_MARK.GenerationStart) continue;
    const generation = decodeGenerationStartBody(m.payloads[i]!) ?? m.shard.generation;
    await state.starts.begin(generation, m.firstOffset + i);
  }
}

/** Drops the follower's records at and above `at` (a closed log, then reopened). */
async function truncateAt(state: ShardState, at: number): Promise<void> {
  await state.log.close();
  try {
    await truncateLogAbove(state.opts, at, { commitOffset: commitOf(state) });
  } finally {
    state.log = await SegmentLog.open(state.opts);
    state.appender = new FollowerAppender(state.log);
    holdRetentionFloor(state);
  }
  await state.starts.truncated(at);
}

async function openShard(opts: LogOptions, floorAtCommit: boolean): Promise<ShardState> {
  const log = await SegmentLog.open(opts);
  try {
    const io = opts.io ?? nodeIo;
    const replica = await ReplicaFile.open(io, log.dir);
    const starts = await GenerationStarts.open(io, log.dir);
    const state: ShardState = {
      opts,
      log,
      appender: new FollowerAppender(log),
      replica,
      starts,
      tail: Promise.resolve(),
      queued: 0,
      answering: new Set(),
      commits: new CommitSaver(replica),
      floorAtCommit,
      compared: 0,
      heldGeneration: 0,
      heldThrough: 0,
      fencedEnd: 0,
      fencedGeneration: 0,
    };
    holdRetentionFloor(state);
    return state;
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

function shardKey(s: ShardRef, log: ReplicaLogKind): string {
  return `${log}\u0000${s.tenantId}\u0000${s.namespace}\u0000${s.stream}\u0000${s.shard}`;
}

/** The storage flags of a marked batch's records (REPLICATE_MARK: the decoder let only known
 *  marks through). */
function flagsOf(marks: Uint8Array | undefined): { flags?: number[] } {
  if (marks === undefined) return {};
  return {
    flags: [...marks].map((k) =>
      k === REPLICATE_MARK.GenerationStart ? FLAG_GENERATION_START : 0,
    ),
  };
}
