/**
 * The broker-to-broker listener: FLXI frames, one request per stream, behind a Hello. With the
 * cluster CA (mutual TLS), the transport admits only peers presenting a certificate it signed,
 * and the Hello's node id must be a name of that certificate: a peer cannot claim to be another
 * broker. Without it (`internal_allow_unauthenticated`) any host reaching the port may speak.
 * Requests go to `serve` (the replica server); a frame that does not decode resets its stream,
 * and a peer that sends no Hello in time, or a wrong one, is closed.
 */
import { X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type Connection,
  type Listener,
  type TlsMaterial,
  type TransportStream,
  listen,
} from '@felix/transport';
import { type InternalFrame, decodeInternalMessage, encodeInternalMessage } from '@felix/wire';
import { ListenError } from '../errors.js';
import {
  INTERNAL_CONNECTIONS_MAX,
  INTERNAL_HELLO_TIMEOUT_MS,
  INTERNAL_STREAMS_PER_CONNECTION_MAX,
} from '../limits.js';
import { readFrame } from './internal-frames.js';

/** Close and reset code of the internal protocol's refusals. */
const REFUSED = 1;

export interface InternalListenerOptions {
  host: string;
  port: number;
  transport: 'quic' | 'tls';
  selfId: string;
  /** This broker's certificate (the cluster's, or the client one when unauthenticated). */
  tls: TlsMaterial;
  /** The cluster CA; null runs unauthenticated. */
  clusterCa: string | null;
  serve: (request: InternalFrame) => Promise<Uint8Array>;
  /** The capability bits this broker answers a `HelloCapable` with (INTERNAL_CAPABILITY). */
  capabilities?: bigint;
  log: Logger;
}

export class InternalListener {
  private readonly live = new Set<Connection>();

  private constructor(
    private readonly listener: Listener,
    private readonly o: InternalListenerOptions,
  ) {}

  static async start(o: InternalListenerOptions): Promise<InternalListener> {
    let listener: Listener;
    try {
      listener = await listen({
        transport: o.transport,
        host: o.host,
        port: o.port,
        tls: o.tls,
        maxStreams: INTERNAL_STREAMS_PER_CONNECTION_MAX,
        ...(o.clusterCa === null ? {} : { clientCa: o.clusterCa }),
      });
    } catch (err) {
      throw new ListenError(`internal ${o.transport} ${o.host}:${o.port}`, { cause: err });
    }
    const l = new InternalListener(listener, o);
    if (o.clusterCa === null)
      o.log.warn({ port: listener.port }, 'internal listener is unauthenticated');
    void l.accept();
    return l;
  }

  get port(): number {
    return this.listener.port;
  }

  close(): Promise<void> {
    return this.listener.close();
  }

  private async accept(): Promise<void> {
    try {
      for await (const conn of this.listener.connections()) {
        if (this.live.size >= INTERNAL_CONNECTIONS_MAX) {
          // Over the bound: the peer retries with backoff; its close needs no answer.
          void conn.close({ code: REFUSED, reason: 'too many peer connections' }).catch(() => {});
          continue;
        }
        this.live.add(conn);
        void conn.closed.then(() => this.live.delete(conn));
        void this.serveConnection(conn);
      }
    } catch (err) {
      this.o.log.error({ err }, 'internal listener failed');
    }
  }

  private async serveConnection(conn: Connection): Promise<void> {
    const streams = conn.incoming()[Symbol.asyncIterator]();
    try {
      const peer = await this.greet(conn, streams);
      if (peer === null) return;
      for (;;) {
        const next = await streams.next();
        if (next.done) return;
        void this.serveStream(peer, next.value);
      }
    } catch (err) {
      // A Hello that did not even decode, or a connection that failed: free its slot.
      this.o.log.debug({ err, remote: conn.remote }, 'internal connection ended');
      // Already closed by the peer or the failure: nothing more to free.
      await conn.close({ code: REFUSED, reason: 'internal connection failed' }).catch(() => {});
    }
  }

  /** Reads the Hello of a new connection; answers it, or closes the connection and says null. */
  private async greet(
    conn: Connection,
    streams: AsyncIterator<TransportStream>,
  ): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), INTERNAL_HELLO_TIMEOUT_MS);
    });
    const hello = (async () => {
      const first = await streams.next();
      if (first.done) return null;
      const frame = await readFrame(first.value);
      return frame === null ? null : { stream: first.value, frame };
    })();
    const got = await Promise.race([hello, deadline]).finally(() => clearTimeout(timer));
    const why = got === null ? 'no Hello in time' : this.refusal(conn, got.frame);
    if (got === null || why !== null) {
      this.o.log.warn({ remote: conn.remote, why }, 'peer refused');
      await conn.close({ code: REFUSED, reason: why ?? 'no Hello' });
      return null;
    }
    const m = decodeInternalMessage(got.frame) as {
      kind: 'Hello' | 'HelloCapable';
      correlationId: number;
      nodeId: string;
    };
    const self = { correlationId: m.correlationId, nodeId: this.o.selfId };
    // A plain Hello (an older peer) gets a plain answer: it would not read the capabilities.
    await got.stream.write(
      encodeInternalMessage(
        m.kind === 'HelloCapable'
          ? { kind: 'HelloCapableOk', ...self, capabilities: this.o.capabilities ?? 0n }
          : { kind: 'HelloOk', ...self },
      ),
    );
    await got.stream.end();
    return m.nodeId;
  }

  /** Why a Hello is refused, or null when the peer is who it says. */
  private refusal(conn: Connection, frame: InternalFrame): string | null {
    let m: ReturnType<typeof decodeInternalMessage>;
    try {
      m = decodeInternalMessage(frame);
    } catch (err) {
      return `bad Hello: ${(err as Error).message}`;
    }
    if (m.kind !== 'Hello' && m.kind !== 'HelloCapable') return `expected Hello, got ${m.kind}`;
    if (this.o.clusterCa === null) return null;
    const der = conn.peerCertificate();
    if (der === undefined) return 'no peer certificate';
    if (new X509Certificate(der).checkHost(m.nodeId) === undefined)
      return `the peer's certificate does not name node ${m.nodeId}`;
    return null;
  }

  private async serveStream(peer: string, stream: TransportStream): Promise<void> {
    try {
      const frame = await readFrame(stream);
      if (frame === null) return;
      await stream.write(await this.o.serve(frame));
      await stream.end();
    } catch (err) {
      // A bad frame or a failed answer concerns this request only: reset its stream.
      this.o.log.debug({ err, peer }, 'internal request failed');
      stream.reset(REFUSED);
    }
  }
}
