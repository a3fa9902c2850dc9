/**
 * Test support: a follower that answers FLXI replication frames with the real pieces (batch
 * checks, the replica file, a segment log and its FollowerAppender), and the leader's side of
 * one exchange (a cursor's shipment as a frame, an answer frame back into the cursor).
 */
import {
  FollowerAppender,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  bootstrapLogAt,
  nodeIo,
} from '@felix/storage';
import {
  INTERNAL_ERROR,
  type InternalMessage,
  InternalFrameDecoder,
  batchChecksum,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { answerFor, checkBatch } from '../../src/follower/batch-check.js';
import type { FollowerAnswer, FollowerCursor, Shipment } from '../../src/leader/follower-cursor.js';

export const SHARD = { tenant: 't1', namespace: 'default', stream: 'orders', shard: 0 };

export function decodeFrame(bytes: Uint8Array): InternalMessage {
  const frames = new InternalFrameDecoder().push(bytes);
  if (frames.length !== 1) throw new Error(`expected one frame, got ${frames.length}`);
  return decodeInternalMessage(frames[0]!);
}

/** A leader's log: payloads by offset from `base`. */
export class LeaderLog {
  base = 0;
  readonly records: Uint8Array[] = [];
  get tail(): number {
    return this.records.length;
  }
  append(p: Uint8Array): void {
    this.records.push(p);
  }
}

/** The frame a shipment becomes under `generation`. */
export function shipmentFrame(s: Shipment, leader: LeaderLog, generation: number): Uint8Array {
  const shard = {
    tenantId: SHARD.tenant,
    namespace: SHARD.namespace,
    stream: SHARD.stream,
    shard: SHARD.shard,
    generation,
  };
  if (s.kind === 'bootstrap')
    return encodeInternalMessage({
      kind: 'ReplicateBootstrap',
      correlationId: s.correlationId,
      shard,
      baseOffset: s.base,
    });
  const payloads = leader.records.slice(s.first, s.next);
  return encodeInternalMessage({
    kind: 'ReplicateRecords',
    correlationId: s.correlationId,
    shard,
    firstOffset: s.first,
    checksum: batchChecksum(payloads),
    payloads,
  });
}

/** Feeds an answer frame to the cursor. */
export function takeAnswer(cursor: FollowerCursor, bytes: Uint8Array): void {
  const m = decodeFrame(bytes);
  let answer: FollowerAnswer;
  if (m.kind === 'ReplicateOk') answer = { kind: 'ok', durableOffset: m.durableOffset };
  else if (m.kind === 'ReplicateError')
    answer = { kind: 'error', code: m.code, expectedOffset: m.expectedOffset };
  else throw new Error(`unexpected answer ${m.kind}`);
  cursor.onAnswer(m.correlationId, answer);
}

export class SimFollower {
  private constructor(
    readonly opts: LogOptions,
    public log: SegmentLog,
    private appender: FollowerAppender,
    readonly replica: ReplicaFile,
    /** The generation of the assignment this follower knows. */
    public assigned: number,
  ) {}

  static async open(opts: LogOptions, assigned: number): Promise<SimFollower> {
    const log = await SegmentLog.open(opts);
    const replica = await ReplicaFile.open(opts.io ?? nodeIo, log.dir);
    return new SimFollower(opts, log, new FollowerAppender(log), replica, assigned);
  }

  /** Answers one request frame. */
  async handle(bytes: Uint8Array): Promise<Uint8Array> {
    const m = decodeFrame(bytes);
    if (m.kind === 'ReplicateBootstrap') return this.bootstrap(m.correlationId, m.baseOffset);
    if (m.kind !== 'ReplicateRecords') throw new Error(`unexpected request ${m.kind}`);
    const verdict = checkBatch(
      { generation: m.shard.generation, checksum: m.checksum, payloads: m.payloads },
      { accepted: this.replica.state.generation, assigned: this.assigned },
    );
    if (verdict.kind === 'refuse')
      return encodeInternalMessage({
        kind: 'ReplicateError',
        correlationId: m.correlationId,
        code: verdict.code,
        expectedOffset: this.log.tailOffset,
        detail: verdict.detail,
      });
    // A raised generation is durable before any record it carries is stored.
    if (verdict.raise) await this.replica.accept(m.shard.generation);
    const result = await this.appender.appendAt(m.firstOffset, m.payloads);
    return encodeInternalMessage(answerFor(m.correlationId, result, this.log.durableOffset));
  }

  private async bootstrap(correlationId: number, base: number): Promise<Uint8Array> {
    await this.log.close();
    const r = await bootstrapLogAt(this.opts, base);
    this.log = await SegmentLog.open(this.opts);
    this.appender = new FollowerAppender(this.log);
    if (r.kind === 'ready')
      return encodeInternalMessage({ kind: 'ReplicateOk', correlationId, durableOffset: r.tail });
    return encodeInternalMessage({
      kind: 'ReplicateError',
      correlationId,
      code: INTERNAL_ERROR.LogConflict,
      expectedOffset: r.tail,
      detail: `holds records ${r.base}..${r.tail}`,
    });
  }

  async close(): Promise<void> {
    await this.log.close();
  }
}
