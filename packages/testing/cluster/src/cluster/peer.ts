/**
 * The test speaking as a broker on a broker's internal listener: FLXI frames over the cluster's
 * transport, one request per stream after a `Hello`, as brokers speak to each other
 * (docs/replication.md, "Between brokers"). With a certificate of the cluster CA naming the node
 * it claims, the test can act as any member, a deposed leader among them; with another CA's
 * certificate, or none, as an outsider the listener must refuse. Written from the protocol, not
 * imported from the broker: the harness never imports a service.
 */
import { type Connection, type TlsMaterial, type TransportStream, dial } from '@felix/transport';
import {
  type InternalFrame,
  InternalFrameDecoder,
  type InternalMessage,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { PeerCallError } from '../errors.js';
import { PEER_CALL_DEADLINE_MS, scaled } from '../limits.js';

export interface PeerDialOptions {
  /** `host:port` of the broker's internal listener. */
  address: string;
  transport: 'quic' | 'tls';
  /** The node meant: the listener's certificate must name it (verified by `ca`). */
  nodeId: string;
  /** The node id the test's `Hello` claims. */
  selfId: string;
  /** The certificate the test presents; none dials with no client certificate. */
  tls?: TlsMaterial;
  /** The CA the listener's certificate is checked against. */
  ca: string;
}

/** Reads one whole frame from a stream; null when it ends first. */
async function readFrame(stream: TransportStream): Promise<InternalFrame | null> {
  const decoder = new InternalFrameDecoder();
  for await (const chunk of stream) {
    const frames = decoder.push(chunk);
    if (frames.length > 0) return frames[0]!;
  }
  return null;
}

export class PeerClient {
  private nextId = 100;

  private constructor(
    private readonly conn: Connection,
    readonly nodeId: string,
  ) {}

  /** Dials and greets; rejects when the transport or the listener refuses the test. */
  static async dial(o: PeerDialOptions): Promise<PeerClient> {
    const conn = await dial(`${o.transport}://${o.address}`, {
      ca: o.ca,
      serverName: o.nodeId,
      ...(o.tls === undefined ? {} : { clientTls: o.tls }),
      dialTimeoutMs: scaled(PEER_CALL_DEADLINE_MS),
    });
    const peer = new PeerClient(conn, o.nodeId);
    try {
      const answer = await peer.call({ kind: 'Hello', correlationId: 1, nodeId: o.selfId });
      if (answer.kind !== 'HelloOk') throw new PeerCallError(`${o.nodeId} answered ${answer.kind}`);
    } catch (err) {
      // The Hello's failure is what the test needs; the close is best effort.
      await conn.close().catch(() => undefined);
      throw err;
    }
    return peer;
  }

  /** A fresh correlation id for the next request. */
  correlationId(): number {
    this.nextId++;
    return this.nextId;
  }

  /** Sends one request; resolves with the decoded answer. */
  async call(message: InternalMessage): Promise<InternalMessage> {
    const stream = await this.conn.openBidi();
    let timer: NodeJS.Timeout | undefined;
    const deadlineMs = scaled(PEER_CALL_DEADLINE_MS);
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        stream.reset(1);
        reject(new PeerCallError(`${this.nodeId}: no answer within ${deadlineMs} ms`));
      }, deadlineMs);
    });
    const answered = (async () => {
      await stream.write(encodeInternalMessage(message));
      await stream.end();
      const got = await readFrame(stream);
      if (got === null) throw new PeerCallError(`${this.nodeId}: the stream ended unanswered`);
      return decodeInternalMessage(got);
    })();
    try {
      return await Promise.race([answered, deadline]);
    } finally {
      clearTimeout(timer);
      // A late failure of the abandoned side must not surface as unhandled.
      answered.catch(() => undefined);
    }
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}
