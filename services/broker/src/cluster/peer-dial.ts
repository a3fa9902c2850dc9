/**
 * A link to one peer broker: dialled with the cluster certificate (the listener must present
 * one naming the node we mean, and we present ours), greeted with our node id, then one request
 * per stream. Implements @felix/replication's PeerLink.
 */
import { type Connection, type TlsMaterial, dial } from '@felix/transport';
import type { PeerLink } from '@felix/replication';
import { decodeInternalMessage, encodeInternalMessage } from '@felix/wire';
import { PeerIdentityError, PeerRequestError } from '../errors.js';
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
}

export class PeerConnection implements PeerLink {
  private constructor(
    private readonly conn: Connection,
    readonly nodeId: string,
  ) {}

  static async dial(o: PeerDialOptions): Promise<PeerConnection> {
    const verify =
      o.clusterCa === null
        ? { insecureSkipVerify: true }
        : { ca: o.clusterCa, serverName: o.nodeId, clientTls: o.tls };
    const conn = await dial(`${o.transport}://${o.address}`, {
      ...verify,
      dialTimeoutMs: o.timeoutMs,
    });
    const peer = new PeerConnection(conn, o.nodeId);
    try {
      const answer = decodeInternalMessage(
        await peer.exchange(
          encodeInternalMessage({ kind: 'Hello', correlationId: 1, nodeId: o.selfId }),
          o.timeoutMs,
        ),
      );
      if (answer.kind !== 'HelloOk')
        throw new PeerIdentityError(o.nodeId, `answered ${answer.kind}`);
      if (answer.nodeId !== o.nodeId)
        throw new PeerIdentityError(o.nodeId, `it says it is node ${answer.nodeId}`);
    } catch (err) {
      // The Hello's failure is what the caller needs; the close is best effort.
      await conn.close().catch(() => undefined);
      throw err instanceof PeerIdentityError
        ? err
        : new PeerIdentityError(o.nodeId, `no Hello answer: ${(err as Error).message}`);
    }
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

  private async exchange(frame: Uint8Array, timeoutMs: number) {
    const stream = await this.conn.openBidi();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
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
