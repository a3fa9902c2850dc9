/**
 * A link to one peer broker: dialled with the cluster certificate (the listener must present
 * one naming the node we mean, and we present ours), greeted with our node id, then one request
 * per stream. Implements @felix/replication's PeerLink.
 */
import { type Connection, type TlsMaterial, dial } from '@felix/transport';
import type { PeerLink } from '@felix/replication';
import { INTERNAL_CAPABILITY, decodeInternalMessage, encodeInternalMessage } from '@felix/wire';
import { PeerIdentityError, PeerRequestError } from '../errors.js';
import { PEER_KEEPALIVE_INTERVAL_MS } from '../limits.js';
import { frameBytes, readFrame } from './internal-frames.js';

/** Reset code of a request abandoned at its deadline. */
const ABANDONED = 2;

export interface PeerDialOptions {
  /** `host:port` of the peer's internal listener. */
  address: string;
  transport: 'quic' | 'tls';
  /** The node we mean to reach: its certificate must name it. */
  nodeId: string;
  selfId: string;
  tls: TlsMaterial;
  /** The cluster CA; null dials unauthenticated (accepts any listener). */
  clusterCa: string | null;
  timeoutMs: number;
  /** The capability bits our Hello states (INTERNAL_CAPABILITY). */
  capabilities?: bigint;
}

export class PeerConnection implements PeerLink {
  /** The peer's capability bits from its Hello answer; undefined from a plain `HelloOk` (a
   *  broker that states none, whose answers are taken as they always were). */
  private peerCapabilities: bigint | undefined;

  private constructor(
    private readonly conn: Connection,
    readonly nodeId: string,
  ) {}

  /** The capability bits the peer's Hello answer stated; undefined from a plain `HelloOk`. */
  get capabilities(): bigint | undefined {
    return this.peerCapabilities;
  }

  /** Whether the peer's confirmed stream offsets are synced (true), possibly only written
   *  (false), or not stated (undefined). */
  answersSynced(): boolean | undefined {
    return syncsOf(this.peerCapabilities);
  }

  /**
   * Dials and greets with a `HelloCapable`. A broker of an earlier build knows only the plain
   * `Hello` and closes on any other greeting: a greeting the peer closed on unanswered is tried
   * once more as a plain `Hello` on a fresh connection. One that timed out is not (a slow peer of
   * this build must not end up on a connection that states nothing), nor a dial that failed.
   */
  static async dial(o: PeerDialOptions): Promise<PeerConnection> {
    const capable = await PeerConnection.greet(o, true);
    if (capable instanceof PeerConnection) return capable;
    const plain = capable.timedOut ? capable : await PeerConnection.greet(o, false);
    if (plain instanceof PeerConnection) return plain;
    throw new PeerIdentityError(o.nodeId, `no Hello answer: ${plain.error.message}`);
  }

  /** One connection and its greeting: the greeted connection, or why nothing answered. */
  private static async greet(
    o: PeerDialOptions,
    capable: boolean,
  ): Promise<PeerConnection | { error: Error; timedOut: boolean }> {
    const verify =
      o.clusterCa === null
        ? { insecureSkipVerify: true }
        : { ca: o.clusterCa, serverName: o.nodeId, clientTls: o.tls };
    const conn = await dial(`${o.transport}://${o.address}`, {
      ...verify,
      dialTimeoutMs: o.timeoutMs,
      keepAliveIntervalMs: PEER_KEEPALIVE_INTERVAL_MS,
    });
    const peer = new PeerConnection(conn, o.nodeId);
    const hello = capable
      ? { kind: 'HelloCapable' as const, capabilities: o.capabilities ?? 0n }
      : { kind: 'Hello' as const };
    let answer: ReturnType<typeof decodeInternalMessage>;
    const timing = { timedOut: false };
    try {
      answer = decodeInternalMessage(
        await peer.exchange(
          encodeInternalMessage({ ...hello, correlationId: 1, nodeId: o.selfId }),
          o.timeoutMs,
          timing,
        ),
      );
    } catch (err) {
      // Why nothing answered is what the caller needs; the close is best effort.
      await conn.close().catch(() => undefined);
      return { error: err as Error, timedOut: timing.timedOut };
    }
    const wrong =
      answer.kind !== 'HelloOk' && answer.kind !== 'HelloCapableOk'
        ? `answered ${answer.kind}`
        : answer.nodeId !== o.nodeId
          ? `it says it is node ${answer.nodeId}`
          : null;
    if (wrong !== null) {
      // A peer that answered as something else is refused, not asked again.
      await conn.close().catch(() => undefined);
      throw new PeerIdentityError(o.nodeId, wrong);
    }
    if (answer.kind === 'HelloCapableOk') peer.peerCapabilities = answer.capabilities;
    return peer;
  }

  /** Sends one request frame; resolves with the answer frame's bytes. */
  async request(frame: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    const answer = await this.exchange(frame, timeoutMs);
    return frameBytes(answer);
  }

  close(): Promise<void> {
    return this.conn.close();
  }

  /** One request and its answer; `timing.timedOut` says whether the deadline ended it. */
  private async exchange(frame: Uint8Array, timeoutMs: number, timing?: { timedOut: boolean }) {
    const stream = await this.conn.openBidi();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (timing !== undefined) timing.timedOut = true;
        stream.reset(ABANDONED);
        reject(new PeerRequestError(this.nodeId, `no answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    const answered = (async () => {
      await stream.write(frame);
      await stream.end();
      const got = await readFrame(stream);
      if (got === null)
        throw new PeerRequestError(this.nodeId, 'the stream ended without an answer');
      return got;
    })();
    try {
      return await Promise.race([answered, deadline]);
    } finally {
      clearTimeout(timer);
      // A late failure of the abandoned side must not surface as unhandled.
      answered.catch(() => undefined);
    }
  }
}

/** What capability bits say of a peer's confirmed stream offsets: synced (true), possibly only
 *  written (false), or nothing (undefined: no bits stated). */
export function syncsOf(capabilities: bigint | undefined): boolean | undefined {
  return capabilities === undefined
    ? undefined
    : (capabilities & INTERNAL_CAPABILITY.SYNCS_BEFORE_ANSWER) !== 0n;
}
