/**
 * One connection per peer broker, shared by everything that talks to it (the leader's shippers
 * and the forwarder): dialled on first use at the internal address the node book names, with the
 * cluster certificate, and dialled afresh after a request fails on it. A peer the test partition
 * cuts (`dialAllowed` false) is not dialled, and its open link is closed when the cut begins.
 */
import type { Logger } from 'pino';
import type { PeerLink } from '@felix/replication';
import type { TlsMaterial } from '@felix/transport';
import { PeerUnreachableError } from '../errors.js';
import { PEER_DIAL_TIMEOUT_MS } from '../limits.js';
import { PeerConnection, syncsOf } from './peer-dial.js';

export interface PeerPoolDeps {
  selfId: string;
  transport: 'quic' | 'tls';
  /** This broker's certificate and the cluster CA; null dials unauthenticated. */
  cluster: { tls: TlsMaterial; ca: string } | null;
  clientTls: TlsMaterial;
  /** The internal address of a node, from the node book (which may be read afresh first). */
  address: (nodeId: string) => string | undefined | Promise<string | undefined>;
  /** The partition gate (cluster/peer-links.ts `dialAllowed`); absent: every peer. */
  dialAllowed?: (nodeId: string) => boolean;
  /** The capability bits this broker's Hellos state (cluster/internal-node.ts ownCapabilities). */
  capabilities?: bigint;
  log: Logger;
}

/**
 * The link to one peer. A request that fails before anything was sent (no address, a dial or
 * Hello that failed, a cut) throws PeerUnreachableError; any later failure (a timeout, a reset,
 * a link that dropped) throws what the connection threw, and the request may have been done.
 */
export class LazyPeerLink implements PeerLink {
  private conn: Promise<PeerConnection> | undefined;
  /** `conn` once it resolved: a request on an open link takes no timer or listener. */
  private opened: Promise<PeerConnection> | undefined;
  /** The capability bits the peer last stated in a Hello answer. A later connection greeted
   *  with a plain Hello (the fallback for an earlier build) keeps them: a peer of this build
   *  that once said its copies answer once written stays uncounted rather than pass as one
   *  that states nothing. */
  private stated: bigint | undefined;

  constructor(
    private readonly nodeId: string,
    private readonly deps: PeerPoolDeps,
  ) {}

  /** What the peer's Hello said of its confirmed stream offsets (PeerConnection): synced,
   *  possibly written only, or unknown (not connected yet, or a peer that states nothing). */
  answersSynced(): boolean | undefined {
    return syncsOf(this.stated);
  }

  /**
   * Sends `frame` and answers the peer's answer within `timeoutMs`. `linkWaitMs`: how long to
   * wait for the link when it is not open yet, past which the request fails unsent
   * (PeerUnreachableError) while the dial goes on for later requests; absent, the dial's own
   * bound. `withdrawn` aborted during that wait fails it unsent at once (a stopping shipper).
   */
  async request(
    frame: Uint8Array,
    timeoutMs: number,
    linkWaitMs?: number,
    withdrawn?: AbortSignal,
  ): Promise<Uint8Array> {
    const { conn, pending } = await this.connectedWithin(linkWaitMs, withdrawn);
    try {
      return await conn.request(frame, timeoutMs);
    } catch (err) {
      // A failed or silent link is dialled afresh by the next request.
      if (this.conn === pending) this.conn = undefined;
      // The request's failure is what the caller hears; the close is best effort.
      void conn.close().catch(() => undefined);
      throw err;
    }
  }

  private async connected() {
    if (this.deps.dialAllowed?.(this.nodeId) === false)
      throw new PeerUnreachableError(this.nodeId, 'partitioned (test partition file)');
    const address = await this.deps.address(this.nodeId);
    if (address === undefined)
      throw new PeerUnreachableError(this.nodeId, 'no internal address in the node book yet');
    this.conn ??= PeerConnection.dial({
      address,
      transport: this.deps.transport,
      nodeId: this.nodeId,
      selfId: this.deps.selfId,
      tls: this.deps.cluster?.tls ?? this.deps.clientTls,
      clusterCa: this.deps.cluster?.ca ?? null,
      timeoutMs: PEER_DIAL_TIMEOUT_MS,
      ...(this.deps.capabilities === undefined ? {} : { capabilities: this.deps.capabilities }),
    });
    const pending = this.conn;
    try {
      const conn = await pending;
      // Only the current connection speaks for the peer (a request that waited on one replaced
      // meanwhile must not bring back a restarted peer's old Hello).
      if (this.conn === pending && conn.capabilities !== undefined) this.stated = conn.capabilities;
      this.opened = pending;
      return { conn, pending };
    } catch (err) {
      if (this.conn === pending) this.conn = undefined;
      throw new PeerUnreachableError(this.nodeId, (err as Error).message, { cause: err });
    }
  }

  /** `connected()`, or PeerUnreachableError once `ms` passed or `withdrawn` is aborted (the
   *  dial is left running for later requests). */
  private async connectedWithin(ms: number | undefined, withdrawn: AbortSignal | undefined) {
    const open = this.conn !== undefined && this.conn === this.opened;
    if (open || (ms === undefined && withdrawn === undefined)) return this.connected();
    if (withdrawn?.aborted)
      throw new PeerUnreachableError(this.nodeId, 'the request was withdrawn before it was sent');
    let timer: NodeJS.Timeout | undefined;
    let onAbort = (): void => undefined;
    const late = new Promise<never>((_, reject) => {
      const fail = (why: string) => reject(new PeerUnreachableError(this.nodeId, why));
      if (ms !== undefined)
        timer = setTimeout(() => fail(`no link within ${ms} ms (its dial goes on)`), ms);
      onAbort = () => fail('the request was withdrawn before its link opened');
      withdrawn?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([this.connected(), late]);
    } finally {
      clearTimeout(timer);
      withdrawn?.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    const pending = this.conn;
    this.conn = undefined;
    // A link that never connected has nothing to close.
    const conn = await pending?.catch(() => undefined);
    // Closing at shutdown or at a cut: a link that fails to close is gone anyway.
    await conn?.close().catch(() => undefined);
  }
}

export class PeerPool {
  private readonly links = new Map<string, LazyPeerLink>();

  constructor(readonly deps: PeerPoolDeps) {}

  /** The one link to `nodeId` (made on first use, never dialled until a request). */
  link(nodeId: string): LazyPeerLink {
    let l = this.links.get(nodeId);
    if (l === undefined) {
      l = new LazyPeerLink(nodeId, this.deps);
      this.links.set(nodeId, l);
    }
    return l;
  }

  /** Closes the open link to `nodeId` (a partition cut it); the next request dials again. */
  cut(nodeId: string): void {
    void this.links.get(nodeId)?.close();
  }

  async close(): Promise<void> {
    await Promise.all([...this.links.values()].map((l) => l.close()));
    this.links.clear();
  }
}
