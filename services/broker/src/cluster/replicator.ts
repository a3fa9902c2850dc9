/**
 * The leader's side of replication in the broker: one ShardShipper per durable stream shard
 * this broker leads whose replica set names followers, shipping over peer links that dial on
 * first use (and again after a failure) to the follower's internal address from the node book.
 * Links are per peer and shared by its shards. A shard's shipper stops before its log closes,
 * and is replaced when the shard's generation changes.
 */
import type { Logger } from 'pino';
import {
  type FenceOutcome,
  type HaltReason,
  type PeerLink,
  ShardShipper,
  fenceReplicaSet,
  majorityHeld,
} from '@felix/replication';
import type { SegmentLog } from '@felix/storage';
import type { TlsMaterial } from '@felix/transport';
import type { ShardRef } from '@felix/wire';
import { PeerRequestError } from '../errors.js';
import { PEER_DIAL_TIMEOUT_MS } from '../limits.js';
import type { ShardReport } from './control-plane-client.js';
import { PeerConnection } from './peer-dial.js';

export interface ReplicatorDeps {
  selfId: string;
  transport: 'quic' | 'tls';
  /** This broker's certificate and the cluster CA; null dials unauthenticated. */
  cluster: { tls: TlsMaterial; ca: string } | null;
  clientTls: TlsMaterial;
  /** The internal address of a node, from the node book. */
  address: (nodeId: string) => string | undefined;
  /** False while the test partition cuts this broker from `nodeId` (faults/partition.ts). */
  dialAllowed?: (nodeId: string) => boolean;
  log: Logger;
}

class LazyPeerLink implements PeerLink {
  private conn: Promise<PeerConnection> | undefined;

  constructor(
    private readonly nodeId: string,
    private readonly deps: ReplicatorDeps,
  ) {}

  async request(frame: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    if (this.deps.dialAllowed?.(this.nodeId) === false) {
      await this.close();
      throw new PeerRequestError(this.nodeId, 'cut by the test partition');
    }
    const address = this.deps.address(this.nodeId);
    if (address === undefined)
      throw new PeerRequestError(this.nodeId, 'no internal address in the node book yet');
    this.conn ??= PeerConnection.dial({
      address,
      transport: this.deps.transport,
      nodeId: this.nodeId,
      selfId: this.deps.selfId,
      tls: this.deps.cluster?.tls ?? this.deps.clientTls,
      clusterCa: this.deps.cluster?.ca ?? null,
      timeoutMs: PEER_DIAL_TIMEOUT_MS,
    });
    const pending = this.conn;
    let conn: PeerConnection;
    try {
      conn = await pending;
    } catch (err) {
      if (this.conn === pending) this.conn = undefined;
      throw err;
    }
    try {
      return await conn.request(frame, timeoutMs);
    } catch (err) {
      // A failed or silent link is dialled afresh by the next request.
      if (this.conn === pending) this.conn = undefined;
      // The request's failure is what the shipper hears; the close is best effort.
      void conn.close().catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    const pending = this.conn;
    this.conn = undefined;
    // A link that never connected has nothing to close.
    const conn = await pending?.catch(() => undefined);
    // Closing at shutdown: a link that fails to close is gone anyway.
    await conn?.close().catch(() => undefined);
  }
}

interface Shipping {
  shipper: ShardShipper;
  ref: ShardRef;
  generation: number;
  log: SegmentLog;
  followers: string[];
  /** Followers whose loop halted until repaired (reported; never promoted). */
  halted: Map<string, 'diverged' | 'needs_bootstrap'>;
}

export class Replicator {
  private readonly shippers = new Map<string, Shipping>();
  private readonly links = new Map<string, LazyPeerLink>();

  constructor(private readonly deps: ReplicatorDeps) {}

  /**
   * Fences the replica set before this broker serves `ref` at its generation: resolves once a
   * majority (this broker counted) accepted it, or with why not (deposed, or the deadline).
   */
  fence(ref: ShardRef, followers: string[], deadlineMs: number): Promise<FenceOutcome> {
    return fenceReplicaSet({
      shard: ref,
      followers: followers.map((nodeId) => ({ nodeId, link: this.link(nodeId) })),
      deadlineMs,
    });
  }

  /**
   * Ships `log` to `followers` at `ref.generation` (restarting a shipper of an older one).
   * `genStart` is where this generation's records start in `log` (its tail when this broker
   * opened it as leader): the first batch overlaps the record just below it, so a returning
   * deposed leader's divergent suffix is compared from its first record.
   */
  async ship(
    key: string,
    log: SegmentLog,
    ref: ShardRef,
    followers: string[],
    genStart = log.tailOffset,
  ): Promise<void> {
    const current = this.shippers.get(key);
    if (current !== undefined && current.generation === ref.generation) return;
    await this.stop(key);
    if (followers.length === 0) return;
    const start = Math.max(log.baseOffset, Math.min(genStart, log.tailOffset) - 1);
    const halted = new Map<string, 'diverged' | 'needs_bootstrap'>();
    const shipper = new ShardShipper({
      log,
      shard: ref,
      followers: followers.map((nodeId) => ({ nodeId, link: this.link(nodeId), start })),
      onStopped: (nodeId, reason) => {
        if (isRepairable(reason)) halted.set(nodeId, reason);
        this.deps.log.warn({ shard: key, follower: nodeId, reason }, 'shipping stopped');
      },
    });
    this.shippers.set(key, { shipper, ref, generation: ref.generation, log, followers, halted });
  }

  /**
   * What each shipped shard's replicas hold, for the control plane (docs/replication.md,
   * "Replica reports and promotion"): the leader's durable offset, each follower's confirmed
   * offset, the commit mark over them (majority of the set, leader counted) and halted followers.
   */
  reports(): ShardReport[] {
    const out: ShardReport[] = [];
    for (const s of this.shippers.values()) {
      const own = s.log.durableOffset;
      const confirmed = s.followers.map((f) => s.shipper.confirmed(f));
      out.push({
        tenant_id: s.ref.tenantId,
        namespace: s.ref.namespace,
        kind: 'stream',
        stream: s.ref.stream,
        shard: s.ref.shard,
        generation: s.generation,
        leader_offset: own,
        commit_offset: Math.min(own, majorityHeld([own, ...confirmed], s.followers.length + 1)),
        replica_offsets: s.followers.map((f, i) => ({ node_id: f, durable_offset: confirmed[i]! })),
        halted: [...s.halted].map(([node_id, reason]) => ({ node_id, reason })),
      });
    }
    return out;
  }

  /** Stops shipping shard `key` (before its log closes). */
  async stop(key: string): Promise<void> {
    const current = this.shippers.get(key);
    if (current === undefined) return;
    this.shippers.delete(key);
    await current.shipper.stop();
  }

  /** What a follower confirmed of shard `key` (0 when unknown). */
  confirmed(key: string, nodeId: string): number {
    return this.shippers.get(key)?.shipper.confirmed(nodeId) ?? 0;
  }

  /** Records the leader holds that followers have not confirmed, over every shard shipped. */
  lagRecords(): number {
    let lag = 0;
    for (const s of this.shippers.values())
      for (const f of s.followers) lag += Math.max(0, s.log.tailOffset - s.shipper.confirmed(f));
    return lag;
  }

  async close(): Promise<void> {
    await Promise.all([...this.shippers.keys()].map((k) => this.stop(k)));
    await Promise.all([...this.links.values()].map((l) => l.close()));
    this.links.clear();
  }

  private link(nodeId: string): LazyPeerLink {
    let l = this.links.get(nodeId);
    if (l === undefined) {
      l = new LazyPeerLink(nodeId, this.deps);
      this.links.set(nodeId, l);
    }
    return l;
  }
}

function isRepairable(
  reason: HaltReason | 'fenced' | 'failed',
): reason is 'diverged' | 'needs_bootstrap' {
  return reason === 'diverged' || reason === 'needs_bootstrap';
}
