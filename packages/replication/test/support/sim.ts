/**
 * Test support: a follower (a ReplicaServer over real segment logs in a temp dir) and the
 * leader's side of one exchange (a cursor's shipment as a frame; an answer frame back into
 * the cursor), plus an in-memory PeerLink that can lose requests and answers.
 */
import { type LogOptions, SegmentLog } from '@felix/storage';
import {
  InternalFrameDecoder,
  type InternalMessage,
  type ShardRef,
  decodeInternalMessage,
} from '@felix/wire';
import { bootstrapFrame, rebuildFrame, recordsFrame } from '../../src/frames.js';
import { ReplicaServer } from '../../src/follower/replica-server.js';
import { answerOf } from '../../src/leader/answers.js';
import type { FollowerCursor, Shipment } from '../../src/leader/follower-cursor.js';
import type { PeerLink } from '../../src/leader/shard-shipper.js';

export const SHARD = { tenant: 't1', namespace: 'default', stream: 'orders', shard: 0 };

export function shardRef(generation: number): ShardRef {
  return {
    tenantId: SHARD.tenant,
    namespace: SHARD.namespace,
    stream: SHARD.stream,
    shard: SHARD.shard,
    generation,
  };
}

export function decodeFrame(bytes: Uint8Array): InternalMessage {
  const frames = new InternalFrameDecoder().push(bytes);
  if (frames.length !== 1) throw new Error(`expected one frame, got ${frames.length}`);
  return decodeInternalMessage(frames[0]!);
}

/** A leader's log kept in memory: payloads by offset, the first `base` trimmed. */
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

/** The frame a shipment of `leader` becomes under `generation`. */
export function shipmentFrame(s: Shipment, leader: LeaderLog, generation: number): Uint8Array {
  const shard = shardRef(generation);
  if (s.kind === 'bootstrap') return bootstrapFrame(s.correlationId, shard, s.base);
  if (s.kind === 'rebuild') return rebuildFrame(s.correlationId, shard, 'stream', s.base);
  return recordsFrame(s.correlationId, shard, s.first, leader.records.slice(s.first, s.next));
}

/** Feeds an answer frame to the cursor. */
export function takeAnswer(cursor: FollowerCursor, bytes: Uint8Array): void {
  const a = answerOf(bytes);
  if (a === null) throw new Error('not a replication answer');
  cursor.onAnswer(a.correlationId, a.answer);
}

/** A follower of the one test shard: its server, and its log read after a release. */
export class SimFollower {
  readonly server: ReplicaServer;
  /** The generation of the assignment this follower knows (undefined: none heard of yet). */
  assigned: number | undefined;

  constructor(
    readonly opts: LogOptions,
    assigned: number | undefined,
  ) {
    this.assigned = assigned;
    this.server = new ReplicaServer({
      logOptions: () => opts,
      assignment: () => (this.assigned === undefined ? undefined : { generation: this.assigned }),
    });
  }

  handle(bytes: Uint8Array): Promise<Uint8Array> {
    return this.server.handle(bytes);
  }

  /** What the follower holds durably now (0 before its log opened). */
  get durable(): number {
    return this.server.status(shardRef(0))?.durable ?? 0;
  }

  get generation(): number {
    return this.server.status(shardRef(0))?.generation ?? 0;
  }

  /** Every record the follower's log holds, from its base. */
  async records(): Promise<{ base: number; payloads: Uint8Array[] }> {
    await this.server.release(shardRef(0));
    const log = await SegmentLog.open(this.opts);
    try {
      const payloads: Uint8Array[] = [];
      let at = log.baseOffset;
      while (at < log.tailOffset) {
        const r = await log.read(at);
        if (r.kind !== 'records') throw new Error(`trimmed at ${at}`);
        for (const rec of r.records) payloads.push(rec.payload.slice());
        at = r.next;
      }
      return { base: log.baseOffset, payloads };
    } finally {
      await log.close();
    }
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** A link to a follower that loses each request or answer with the given odds. */
export class LossyLink implements PeerLink {
  sent = 0;
  constructor(
    private readonly follower: SimFollower,
    private readonly random: () => number,
    private readonly loss: number,
  ) {}

  async request(frame: Uint8Array, _timeoutMs: number): Promise<Uint8Array> {
    this.sent++;
    if (this.random() < this.loss) throw new Error('request lost');
    const answer = await this.follower.handle(frame);
    if (this.random() < this.loss) throw new Error('answer lost');
    return answer;
  }
}
