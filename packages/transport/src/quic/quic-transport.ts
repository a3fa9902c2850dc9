/**
 * QUIC on @matrixai/quic, made safe: idle timeout and keep-alive always set, stream limits
 * mapped to typed errors, TLS material validated at start, and every close bounded with a forced
 * path that does no further I/O.
 */
import {
  createHmac,
  randomBytes,
  randomFillSync,
  timingSafeEqual,
  X509Certificate,
} from 'node:crypto';
import { isIP } from 'node:net';
import * as patchedQuic from '@felix-vendor/matrixai-quic';
import * as patchedConfig from '@felix-vendor/matrixai-quic/config.js';
import * as stockQuic from '@matrixai/quic';
import type { QUICConnection, QUICStream } from '@matrixai/quic';
import * as stockConfig from '@matrixai/quic/config.js';
import {
  CLOSE_CODE_FORCED,
  CLOSE_CODE_IDLE_TIMEOUT,
  CLOSE_CODE_INTERNAL,
  CLOSE_CODE_NORMAL,
  CLOSE_CODE_PEER_LOST,
} from '../codes.js';
import {
  BadTlsMaterialError,
  ConnectionClosedError,
  DialError,
  FingerprintMismatchError,
  IdleTimeoutError,
  StreamLimitError,
} from '../errors.js';
import {
  ACCEPT_BACKLOG_MAX,
  QUIC_CONNECTION_WINDOW_BYTES,
  QUIC_LOOPBACK_DATAGRAM_BYTES,
  QUIC_STREAM_WINDOW_BYTES,
} from '../limits.js';
import {
  fingerprintsEqual,
  normalizeFingerprint,
  presentedCertificate,
  validateTlsMaterial,
} from '../material/certificate.js';
import {
  type ResolvedLimits,
  type ResolvedTimeouts,
  resolveDialTimeout,
  resolveHandshakesInFlight,
  resolveLimits,
  resolveTimeouts,
} from '../options.js';
import type {
  Connection,
  ConnectionCloseInfo,
  ConnectionStats,
  DialOptions,
  ListenOptions,
  Listener,
  StreamKind,
  TransportStream,
} from '../types.js';
import { alertInText, quicCryptoAlert, tlsAlertReason } from '../tls-alert.js';
import { AsyncQueue } from '../util/async-queue.js';
import { trackConnection } from '../util/reclaim.js';
import { warnInsecure } from '../util/warn.js';
import { quicErrorText } from './error-text.js';
import { PeerWatch, RefusalProbe } from './refusal-probe.js';
import { PeerResetReason, QuicStreamAdapter, ResetReason } from './quic-stream.js';
import { tuneQuicSocket } from './tuning.js';

export const QUIC_ALPN = 'felix/1';
/** TLS alert "bad certificate" offset into QUIC's crypto error range (RFC 9001 §4.8). */
const CRYPTO_ERROR_BAD_CERTIFICATE = 0x100 + 42;
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

type QuicLib = typeof stockQuic;
type QuicConfigLib = typeof stockConfig;

/** The patched library (vendor/matrixai-quic) unless the caller asks for the stock one. */
function lib(stock: boolean): { quic: QuicLib; config: QuicConfigLib } {
  return stock
    ? { quic: stockQuic, config: stockConfig }
    : {
        quic: patchedQuic as unknown as QuicLib,
        config: patchedConfig as unknown as QuicConfigLib,
      };
}

/** The library logs at INFO to stderr by default; Felix keeps its own logs. */
const silentLogger = {
  info() {},
  debug() {},
  warn() {},
  error() {},
  getChild() {
    return silentLogger;
  },
};

type Logger = ConstructorParameters<typeof stockQuic.QUICServer>[0]['logger'];
const logger = silentLogger as unknown as Logger;

function reasonToCode(_type: 'read' | 'write', reason?: unknown): number {
  if (reason instanceof ResetReason) return reason.resetCode;
  return 0;
}

function codeToReason(_type: 'read' | 'write', code: number): Error {
  return new PeerResetReason(code);
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

function quicConfig(t: ResolvedTimeouts, l: ResolvedLimits, stock: boolean, loopback: boolean) {
  const datagram =
    !stock && loopback
      ? {
          maxRecvUdpPayloadSize: QUIC_LOOPBACK_DATAGRAM_BYTES,
          maxSendUdpPayloadSize: QUIC_LOOPBACK_DATAGRAM_BYTES,
        }
      : {};
  return {
    ...datagram,
    maxIdleTimeout: t.idleTimeoutMs,
    ...(t.keepAliveIntervalMs > 0 ? { keepAliveIntervalTime: t.keepAliveIntervalMs } : {}),
    applicationProtos: [QUIC_ALPN],
    initialMaxStreamsBidi: l.maxStreams,
    initialMaxStreamsUni: l.maxStreams,
    ...(stock
      ? {}
      : {
          initialMaxData: QUIC_CONNECTION_WINDOW_BYTES,
          // quiche grows windows while the reader keeps up; these are the ceilings (patch 20).
          maxConnectionWindow: QUIC_CONNECTION_WINDOW_BYTES,
          maxStreamWindow: QUIC_STREAM_WINDOW_BYTES,
          initialMaxStreamDataBidiLocal: QUIC_STREAM_WINDOW_BYTES,
          initialMaxStreamDataBidiRemote: QUIC_STREAM_WINDOW_BYTES,
          initialMaxStreamDataUni: QUIC_STREAM_WINDOW_BYTES,
          readableChunkSize: 64 * 1024,
        }),
  };
}

/** The parts of quiche's native connection the adapter drives directly. */
interface NativeConn {
  isClosed(): boolean;
  isDraining(): boolean;
  close(app: boolean, code: number, reason: Uint8Array): void;
  peerStreamsLeftBidi(): number;
  peerStreamsLeftUni(): number;
}

/** Connection internals used only by the forced close. */
interface StockInternals {
  forceDestroy?: () => void;
  send: () => Promise<void>;
  connTimeoutTimer?: { cancel(): void };
  keepAliveIntervalTimer?: { cancel(): void };
  resolveClosedP?: () => void;
}

/** One QUIC connection behind the Connection interface. */
class QuicConnectionAdapter implements Connection {
  readonly transport = 'quic' as const;
  readonly remote: string;
  readonly closed: Promise<ConnectionCloseInfo>;
  private resolveClosed!: (i: ConnectionCloseInfo) => void;
  private info: ConnectionCloseInfo | null = null;
  private closeError: ConnectionClosedError | null = null;
  private readonly incomingQueue: AsyncQueue<TransportStream>;
  private readonly streams = new Set<QuicStreamAdapter>();
  private sendBufferedBytes = 0;
  private opened = 0;
  private accepted = 0;
  private closing: Promise<void> | null = null;
  /** Counts this connection's native handle as released (once the library stopped it). */
  private readonly release = trackConnection('quic');
  /** Probes a dialed connection's silent peer for a closed port (none for servers). */
  private peerWatch: PeerWatch | null = null;

  private readonly errs: QuicLib['errors'];

  constructor(
    quic: QuicLib,
    private readonly conn: QUICConnection,
    private readonly timeouts: ResolvedTimeouts,
    private readonly limits: ResolvedLimits,
    /** Tears down what owns the UDP socket (the client) on the forced path; none for servers. */
    private readonly forceTeardown: (() => Promise<void>) | null,
  ) {
    this.errs = quic.errors;
    const quicEvents = quic.events;
    this.remote = `${conn.remoteHost.includes(':') ? `[${conn.remoteHost}]` : conn.remoteHost}:${conn.remotePort}`;
    this.incomingQueue = new AsyncQueue(limits.maxStreams * 2);
    this.closed = new Promise((r) => {
      this.resolveClosed = r;
    });
    conn.addEventListener(quicEvents.EventQUICConnectionStream.name, (evt: Event) => {
      const stream = (evt as stockQuic.events.EventQUICConnectionStream).detail;
      const s = this.track(stream, false);
      this.accepted++;
      if (!this.incomingQueue.push(s)) s.reset(0);
    });
    conn.addEventListener(quicEvents.EventQUICConnectionError.name, (evt: Event) => {
      this.onError((evt as stockQuic.events.EventQUICConnectionError).detail);
    });
    conn.addEventListener(
      quicEvents.EventQUICConnectionStopped.name,
      () => {
        this.finish({ code: CLOSE_CODE_INTERNAL, reason: 'connection stopped' });
        this.release();
      },
      { once: true },
    );
  }

  private track(stream: QUICStream, local: boolean): QuicStreamAdapter {
    const s = new QuicStreamAdapter(stream, this, local);
    this.streams.add(s);
    s.closed.then(() => this.streams.delete(s));
    return s;
  }

  closedError(): ConnectionClosedError | null {
    return this.closeError;
  }

  sendBuffered(delta: number): void {
    this.sendBufferedBytes += delta;
  }

  private onError(err: Error): void {
    const quicErrors = this.errs;
    if (err instanceof quicErrors.ErrorQUICConnectionIdleTimeout) {
      const e = new IdleTimeoutError(this.timeouts.idleTimeoutMs);
      this.finish({ code: CLOSE_CODE_IDLE_TIMEOUT, reason: e.message, error: e });
    } else if (err instanceof quicErrors.ErrorQUICConnectionPeer) {
      const d = err.data;
      const reason = utf8Decoder.decode(d.reason);
      if (d.isApp) this.finish({ code: d.errorCode, reason });
      else {
        const alert = quicCryptoAlert(d.errorCode);
        const e = new ConnectionClosedError(
          CLOSE_CODE_PEER_LOST,
          alert === undefined
            ? `peer closed with transport code ${d.errorCode}: ${reason}`
            : tlsAlertReason(alert),
          { cause: err },
        );
        this.finish({ code: CLOSE_CODE_PEER_LOST, reason: e.reason, error: e });
      }
    } else if (err instanceof quicErrors.ErrorQUICConnectionLocal) {
      const d = err.data;
      if (d?.isApp) this.finish({ code: d.errorCode, reason: utf8Decoder.decode(d.reason) });
      else this.finishInternal(err);
    } else this.finishInternal(err);
  }

  /** Ends on a library error; a refused certificate (ErrorQUICConnectionPeerTLS, a local error
   *  in the library's classes) says only the peer's TLS alert, as a number in its text. */
  private finishInternal(err: Error): void {
    const text = quicErrorText(err);
    const alert = alertInText(text);
    const reason = alert === undefined ? text : tlsAlertReason(alert);
    const e = new ConnectionClosedError(CLOSE_CODE_INTERNAL, reason, { cause: err });
    this.finish({ code: CLOSE_CODE_INTERNAL, reason, error: e });
  }

  /**
   * Closes a dialed connection as soon as its peer's host says nothing listens on the peer's
   * UDP port (a killed process sends no CONNECTION_CLOSE; refusal-probe.ts). Servers do not
   * watch: their peers are clients, whose loss costs only the idle timeout.
   */
  watchPeer(): void {
    const ip = this.conn.remoteHost;
    const port = this.conn.remotePort;
    if (isIP(ip) === 0 || this.info !== null) return;
    this.peerWatch = new PeerWatch(
      ip,
      port,
      this.timeouts.keepAliveIntervalMs,
      () => this.stats().packetsReceived,
      (err) => {
        const reason = `peer gone: nothing listens on UDP port ${port} (connection refused)`;
        const e = new ConnectionClosedError(CLOSE_CODE_PEER_LOST, reason, { cause: err });
        this.finish({ code: CLOSE_CODE_PEER_LOST, reason, error: e });
        // Releases the library's connection and the socket, bounded; nothing left to report.
        this.close({ code: CLOSE_CODE_PEER_LOST, reason }).catch(() => {});
      },
    );
  }

  private finish(info: ConnectionCloseInfo): void {
    if (this.info) return;
    this.info = info;
    this.peerWatch?.stop();
    this.closeError =
      info.error instanceof ConnectionClosedError
        ? info.error
        : new ConnectionClosedError(
            info.code,
            info.reason,
            info.error ? { cause: info.error } : undefined,
          );
    this.incomingQueue.end();
    this.resolveClosed(info);
  }

  openBidi(): Promise<TransportStream> {
    return this.open('bidi');
  }

  openUni(): Promise<TransportStream> {
    return this.open('uni');
  }

  private async open(kind: StreamKind): Promise<TransportStream> {
    if (this.closeError) throw this.closeError;
    // Asked of quiche before the library is: a `newStream` refused at the limit has already
    // marked its stream id used without moving past it, so every later open on the connection
    // failed with the library's "repeated stream id" error (read as a closed connection).
    const native = (this.conn as unknown as { conn: NativeConn }).conn;
    const left = kind === 'bidi' ? native.peerStreamsLeftBidi() : native.peerStreamsLeftUni();
    if (left <= 0) throw new StreamLimitError(kind, this.limits.maxStreams);
    let stream: QUICStream;
    try {
      stream = this.conn.newStream(kind);
    } catch (err) {
      if (err instanceof this.errs.ErrorQUICStreamLimit)
        throw new StreamLimitError(kind, this.limits.maxStreams);
      if (this.closeError) throw this.closeError;
      throw new ConnectionClosedError(CLOSE_CODE_INTERNAL, quicErrorText(err), { cause: err });
    }
    this.opened++;
    return this.track(stream, true);
  }

  incoming(): AsyncIterable<TransportStream> {
    return this.incomingQueue;
  }

  /**
   * Bounded close. Streams are cancelled first (a graceful stop waits on open streams forever),
   * then the connection sends CONNECTION_CLOSE with our code. If the library has not finished
   * within `closeTimeoutMs`, the forced path drops the socket (clients) and returns.
   */
  close(opts: { code?: number; reason?: string } = {}): Promise<void> {
    this.closing ??= (async () => {
      const code = (opts.code ?? CLOSE_CODE_NORMAL) >>> 0;
      const reason = opts.reason ?? 'closed';
      this.finish({ code, reason });
      const graceful = (async () => {
        try {
          // Close at the QUIC layer first: quiche sends CONNECTION_CLOSE and drains, which ends
          // every stream. Stopping via the library's stream teardown instead can leave it
          // spinning on a stream whose write is in flight.
          const native = (this.conn as unknown as { conn: NativeConn }).conn;
          if (!native.isClosed() && !native.isDraining())
            native.close(true, code, Buffer.from(utf8.encode(reason)));
          await (this.conn as unknown as { send(): Promise<void> }).send();
          await this.conn.stop({
            isApp: true,
            errorCode: code,
            reason: utf8.encode(reason),
            force: true,
          });
          if (this.forceTeardown) await this.forceTeardown();
        } catch {
          // already stopping or stopped: the bound below still applies
        }
      })();
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), this.timeouts.closeTimeoutMs);
      });
      const outcome = await Promise.race([graceful.then(() => 'done' as const), bound]);
      clearTimeout(timer);
      if (outcome === 'timeout') this.forceClose();
    })();
    return this.closing;
  }

  /** Forced path: no waiting on the library; drop our side and the socket if we own it. */
  forceClose(): void {
    this.finish({ code: CLOSE_CODE_FORCED, reason: 'forced close' });
    // The patched library can end a connection with no further I/O. The stock one cannot, so
    // this one connection's send is replaced by a no-op and its timers cancelled: whatever
    // the library still runs for it can no longer put a packet on the wire or loop.
    const c = this.conn as unknown as StockInternals;
    if (c.forceDestroy) {
      c.forceDestroy(); // forgets the connection in the socket's map: nothing holds it now
      this.release();
    } else {
      c.send = async () => {};
      c.connTimeoutTimer?.cancel();
      c.keepAliveIntervalTimer?.cancel();
      c.resolveClosedP?.();
    }
    // A forced close reports nothing: the socket's own stop failing leaves nothing to undo.
    if (this.forceTeardown) void this.forceTeardown().catch(() => {});
  }

  peerCertificate(): Uint8Array | undefined {
    return this.conn.getRemoteCertsChain()[0];
  }

  stats(): ConnectionStats {
    let s: { sent: number; recv: number; sentBytes: number; recvBytes: number } | null = null;
    try {
      s = (this.conn as unknown as { conn: { stats(): typeof s } }).conn.stats();
    } catch {
      s = null;
    }
    return {
      bytesSent: s?.sentBytes ?? 0,
      bytesReceived: s?.recvBytes ?? 0,
      streamsOpened: this.opened,
      streamsAccepted: this.accepted,
      streamsActive: this.streams.size,
      packetsSent: s?.sent ?? 0,
      packetsReceived: s?.recv ?? 0,
      recvBufferedBytes: 0,
      sendBufferedBytes: this.sendBufferedBytes,
      ...(this.peerWatch === null ? {} : { peerProbesSent: this.peerWatch.probesSent }),
    };
  }
}

/** Validates the material and builds the native TLS config once, so a bad key fails now. */
function checkQuicMaterial(config: QuicConfigLib, certPem: string, keyPem: string): void {
  validateTlsMaterial({ certPem, keyPem });
  try {
    config.buildQuicheConfig({
      ...config.serverDefault,
      key: keyPem,
      cert: certPem,
      verifyPeer: false,
    });
  } catch (err) {
    throw new BadTlsMaterialError(
      `QUIC (BoringSSL) rejects the TLS material: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}

/**
 * Bounds the connections `server` holds in their handshake. An Initial without a token only
 * gets a stateless Retry; one with a token makes the server hold a connection until its
 * handshake completes or fails (acceptConnection resolves only then), so those are counted,
 * and past `max` dropped before any state exists: the client sends its Initial again, and gets
 * in once a slot is free or gives up at its dial timeout.
 */
function boundQuicHandshakes(
  server: stockQuic.QUICServer,
  max: number,
  onRefused: (() => void) | undefined,
): void {
  type Accept = (remote: unknown, header: { token?: Uint8Array }, ...rest: unknown[]) => unknown;
  const s = server as unknown as { acceptConnection: Accept };
  const accept = s.acceptConnection.bind(server);
  let inFlight = 0;
  // The socket calls its server's acceptConnection for every packet of an unknown connection.
  s.acceptConnection = async (remote, header, ...rest) => {
    if ((header.token?.byteLength ?? 0) === 0) return accept(remote, header, ...rest);
    if (inFlight >= max) {
      onRefused?.();
      return undefined;
    }
    inFlight += 1;
    try {
      return await accept(remote, header, ...rest);
    } finally {
      inFlight -= 1;
    }
  };
}

/** The server's key and HMAC for connection ids and Retry tokens, fresh per listener. */
function serverCrypto() {
  const hmacKey = randomBytes(32);
  return {
    key: hmacKey.buffer.slice(hmacKey.byteOffset, hmacKey.byteOffset + hmacKey.byteLength),
    ops: {
      async sign(key: ArrayBuffer, data: ArrayBuffer) {
        const mac = createHmac('sha256', Buffer.from(key)).update(Buffer.from(data)).digest();
        return mac.buffer.slice(mac.byteOffset, mac.byteOffset + mac.byteLength);
      },
      async verify(key: ArrayBuffer, data: ArrayBuffer, sig: ArrayBuffer) {
        const mac = createHmac('sha256', Buffer.from(key)).update(Buffer.from(data)).digest();
        const s = Buffer.from(sig);
        return s.length === mac.length && timingSafeEqual(s, mac);
      },
    },
  };
}

export async function listenQuic(opts: ListenOptions): Promise<Listener> {
  const stock = opts.quicStock === true;
  const { quic, config } = lib(stock);
  checkQuicMaterial(config, opts.tls.certPem, opts.tls.keyPem);
  const host = opts.host ?? '127.0.0.1';
  const timeouts = resolveTimeouts(opts);
  const limits = resolveLimits(opts);
  const server = new quic.QUICServer({
    crypto: serverCrypto(),
    config: {
      key: opts.tls.keyPem,
      cert: opts.tls.certPem,
      // Mutual TLS: the handshake refuses a dialer without a certificate of this CA.
      verifyPeer: opts.clientCa !== undefined,
      ...(opts.clientCa === undefined ? {} : { ca: opts.clientCa }),
      ...quicConfig(timeouts, limits, stock, isLoopback(host)),
    },
    reasonToCode,
    codeToReason,
    logger,
  });
  boundQuicHandshakes(server, resolveHandshakesInFlight(opts), opts.onHandshakeRefused);
  const accepted = new AsyncQueue<Connection>(ACCEPT_BACKLOG_MAX);
  const live = new Set<QuicConnectionAdapter>();
  server.addEventListener(quic.events.EventQUICServerConnection.name, (evt: Event) => {
    const conn = (evt as stockQuic.events.EventQUICServerConnection).detail;
    const c = new QuicConnectionAdapter(quic, conn, timeouts, limits, null);
    live.add(c);
    c.closed.then(() => live.delete(c));
    if (!accepted.push(c)) void c.close({ code: CLOSE_CODE_NORMAL, reason: 'accept backlog full' });
  });
  await server.start({ host, port: opts.port });
  if (!stock) tuneQuicSocket(server);
  let closing: Promise<void> | null = null;
  return {
    port: server.port,
    transport: 'quic',
    connections: () => accepted,
    close() {
      closing ??= (async () => {
        accepted.end();
        await Promise.all(
          [...live].map((c) => c.close({ code: CLOSE_CODE_NORMAL, reason: 'listener closed' })),
        );
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          server.stop({ force: true }).catch(() => {}), // closing anyway; the timer bounds it
          new Promise<void>((r) => {
            timer = setTimeout(r, timeouts.closeTimeoutMs);
          }),
        ]);
        clearTimeout(timer);
      })();
      return closing;
    },
  };
}

export async function dialQuic(host: string, port: number, opts: DialOptions): Promise<Connection> {
  const address = `quic://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const stock = opts.quicStock === true;
  const { quic } = lib(stock);
  const timeouts = resolveTimeouts(opts);
  const limits = resolveLimits(opts);
  const dialTimeoutMs = resolveDialTimeout(opts.dialTimeoutMs);
  const pinned = opts.fingerprint === undefined ? null : normalizeFingerprint(opts.fingerprint);
  if (opts.insecureSkipVerify) warnInsecure(address);
  let pinMismatch: FingerprintMismatchError | null = null;
  const verify = pinnedVerify(pinned, (err) => {
    pinMismatch = err;
  });
  const serverName = opts.serverName ?? (isIP(host) ? undefined : host);
  let client: stockQuic.QUICClient;
  // A closed port fails the dial at once, as TCP's does (refusal-probe.ts).
  const probe = new RefusalProbe(host, port);
  try {
    client = await quic.QUICClient.createQUICClient(
      {
        host,
        port,
        localHost: isIP(host) === 6 ? '::' : '0.0.0.0',
        ...(serverName === undefined ? {} : { serverName }),
        crypto: {
          ops: {
            async randomBytes(data: ArrayBuffer) {
              randomFillSync(new Uint8Array(data));
            },
          },
        },
        config: {
          verifyPeer: !opts.insecureSkipVerify,
          ...(opts.ca === undefined ? {} : { ca: opts.ca }),
          ...presentedCertificate(opts.clientTls),
          ...verify,
          ...quicConfig(timeouts, limits, stock, isLoopback(host)),
        } as Parameters<typeof stockQuic.QUICClient.createQUICClient>[0]['config'],
        reasonToCode,
        codeToReason,
        logger,
        resolveHostname: probe.resolveHostname,
      },
      { timer: dialTimeoutMs, signal: probe.signal },
    );
  } catch (err) {
    throw (
      probe.failure(address) ??
      quicDialError(address, err, pinMismatch, dialTimeoutMs, quic.errors, opts)
    );
  } finally {
    probe.stop();
  }
  if (!stock) tuneQuicSocket(client);
  // The client owns its UDP socket; stopping the socket ends the client (QUICClient.destroy
  // waits for an error event that a direct quiche close never raises).
  const teardown = async () => {
    const socket = (client as unknown as { socket: { stop(o: { force: boolean }): Promise<void> } })
      .socket;
    await socket.stop({ force: true }).catch(() => {}); // teardown of a closed client: best effort
  };
  const conn = new QuicConnectionAdapter(quic, client.connection, timeouts, limits, teardown);
  conn.watchPeer();
  return conn;
}

/** The QUIC config's check of a pinned server certificate (none without a pin): a mismatch is
 *  told to `mismatched` (quiche reports it only as a TLS failure) and refused. */
function pinnedVerify(
  pinned: string | null,
  mismatched: (err: FingerprintMismatchError) => void,
): { verifyCallback?: (certs: Uint8Array[]) => Promise<number | undefined> } {
  if (pinned === null) return {};
  return {
    verifyCallback: async (certs: Uint8Array[]) => {
      const leaf = certs[0];
      const actual = leaf ? new X509Certificate(leaf).fingerprint256 : '(none)';
      if (leaf && fingerprintsEqual(actual, pinned)) return undefined;
      mismatched(new FingerprintMismatchError(pinned, actual));
      return CRYPTO_ERROR_BAD_CERTIFICATE;
    },
  };
}

/** A failed QUIC dial in words: quiche reports a refused certificate as "TlsFail" only. */
function quicDialError(
  address: string,
  err: unknown,
  pinMismatch: FingerprintMismatchError | null,
  dialTimeoutMs: number,
  errors: typeof stockQuic.errors,
  opts: DialOptions,
): DialError {
  if (pinMismatch !== null) {
    return new DialError(address, pinMismatch.message, { cause: pinMismatch }, true);
  }
  if (err instanceof errors.ErrorQUICClientCreateTimeout) {
    return new DialError(address, `no handshake within ${dialTimeoutMs} ms`, { cause: err });
  }
  if (err instanceof errors.ErrorQUICConnectionLocalTLS) {
    // The library's own check (an address missing from the certificate) says what failed;
    // quiche's verification says nothing but "TlsFail".
    const said = quicErrorText(err);
    // With a client certificate of ours in play, the failure may be on our side: no hint.
    const ours = opts.clientTls !== undefined;
    const why = !said.startsWith('Failed connection due to native TLS')
      ? said
      : ours
        ? 'the TLS handshake failed (the server certificate, or this client certificate)'
        : 'the server certificate failed verification (not signed by a trusted CA, or not for this name)';
    return new DialError(address, why, { cause: err }, !ours);
  }
  return new DialError(address, quicErrorText(err), { cause: err });
}
