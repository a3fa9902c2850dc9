/**
 * The one interface both transports implement. It knows bytes and streams, never Felix frames.
 */

export type TransportKind = 'quic' | 'tls';
export type StreamKind = 'bidi' | 'uni';

/** One QUIC stream or one multiplexed TLS stream. */
export interface TransportStream {
  readonly id: number;
  readonly kind: StreamKind;
  /** Backpressured reads; ends at the peer's half-close; throws StreamResetError or
   *  ConnectionClosedError. Only one iterator per stream. */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array>;
  /**
   * Optional, instead of the iterator: hands each chunk to `sink` in the turn it arrives, in
   * order, with no promise or turn per chunk, then calls `end` once (null at the peer's
   * half-close, else the reset or close error). What `sink` is handed is credited back at once,
   * so only a reader whose peer sends a bounded amount unasked (answers to its own requests)
   * may use it. `sink` and `end` must not throw. One reader at a time: it may take over from
   * the iterator once no iterator read is waiting.
   */
  readChunks?(sink: (chunk: Uint8Array) => void, end: (err: Error | null) => void): void;
  /**
   * Optional, with `readChunks`: stops handing chunks to `sink` until `resumeChunks`. Chunks
   * that arrive meanwhile are queued and not credited, so the stream's window backs the peer
   * off as it does for an iterator that is not read; the peer's half-close is held behind them.
   * A reset or a closed connection still calls `end` at once.
   */
  pauseChunks?(): void;
  /** Hands over what was queued while paused, in order (the sink may pause again), then the
   *  half-close if it came. */
  resumeChunks?(): void;
  /** Resolves once the bytes are accepted within the buffer bound (not once delivered). The
   *  caller must not mutate `chunk` afterwards, unless `copiesWrites`. */
  write(chunk: Uint8Array): Promise<void>;
  /**
   * Optional: as `write`, but null instead of a promise that would already be resolved (the
   * bytes were accepted within the buffer bound), so a caller that writes an answer in the turn
   * it is made spends no promise or reaction on it. Otherwise the promise `write` gives.
   */
  writeNow?(chunk: Uint8Array): Promise<void> | null;
  /**
   * True when a write's promise settles (either way) only once the stream holds no reference
   * to its `chunk` (the bytes were copied out): the caller may then reuse the chunk's memory.
   * Absent or false: the stream may still read the chunk after its write resolved.
   */
  readonly copiesWrites?: boolean;
  /** Half-closes our side; the peer's reads end after the bytes already written. */
  end(): Promise<void>;
  /** Aborts both directions with an application code. */
  reset(code: number): void;
  /** Resolves once both directions are finished (ended or reset); never rejects. */
  readonly closed: Promise<void>;
}

export interface ConnectionCloseInfo {
  code: number;
  reason: string;
  /** Set when the close was not a clean application close: idle timeout, protocol error, peer
   *  death, forced close. */
  error?: Error;
}

export interface ConnectionStats {
  bytesSent: number;
  bytesReceived: number;
  streamsOpened: number;
  streamsAccepted: number;
  streamsActive: number;
  /** Datagrams (QUIC) or socket writes (TLS) sent and received. */
  packetsSent: number;
  packetsReceived: number;
  /** Bytes received and not yet read by the application, all streams. */
  recvBufferedBytes: number;
  /** Bytes accepted by write() and not yet handed to the kernel. */
  sendBufferedBytes: number;
  /** Refusal probes a dialed QUIC connection sent its silent peer (quic/refusal-probe.ts). */
  peerProbesSent?: number;
}

export interface Connection {
  /** "host:port" of the peer. */
  readonly remote: string;
  readonly transport: TransportKind;
  openBidi(): Promise<TransportStream>;
  openUni(): Promise<TransportStream>;
  /** Streams the peer opened, in order; ends when the connection closes. One consumer. */
  incoming(): AsyncIterable<TransportStream>;
  /** Bounded by `closeTimeoutMs`; the forced path does no more I/O and cannot spin. */
  close(opts?: { code?: number; reason?: string }): Promise<void>;
  readonly closed: Promise<ConnectionCloseInfo>;
  stats(): ConnectionStats;
  /** The peer's leaf certificate (DER), when it presented one: a listener's always, a dialer's
   *  only to a listener that requires one (`clientCa`). Identity checks are the caller's. */
  peerCertificate(): Uint8Array | undefined;
}

export interface Listener {
  readonly port: number;
  readonly transport: TransportKind;
  /** Accepted connections; ends when the listener closes. One consumer. */
  connections(): AsyncIterable<Connection>;
  /** Stops accepting and closes every connection it accepted (each bounded). */
  close(): Promise<void>;
}

export interface TimeoutOptions {
  /** Close the connection when nothing arrives for this long. Always on. */
  idleTimeoutMs?: number;
  /** Send a keep-alive this often. 0 turns keep-alives off (tests of the idle timeout only). */
  keepAliveIntervalMs?: number;
  /** Bound on a graceful close before it is forced. */
  closeTimeoutMs?: number;
}

export interface LimitOptions {
  /** Concurrent streams the peer may open, per kind. */
  maxStreams?: number;
  /** Per-stream receive window in bytes. */
  streamWindowBytes?: number;
}

export interface TlsMaterial {
  certPem: string;
  keyPem: string;
}

export interface ListenOptions extends TimeoutOptions, LimitOptions {
  transport: TransportKind;
  host?: string;
  /** 0 picks a free port. */
  port: number;
  tls: TlsMaterial;
  /** Mutual TLS: every dialer must present a certificate signed by this CA (PEM); a dialer
   *  without one, or with one from another CA, fails its handshake. */
  clientCa?: string;
  /** QUIC only: the stock library without Felix's performance settings (benchmarks). */
  quicStock?: boolean;
  /** Connections held in their handshake at once; further ones are refused on arrival (TLS:
   *  closed, counted from the TCP accept; QUIC: their Initial dropped, counted from the one that
   *  carries a valid Retry token, so the client retries it within its dial timeout). */
  handshakesInFlightMax?: number;
  /** Told each time a connection is refused on arrival by `handshakesInFlightMax`. */
  onHandshakeRefused?: () => void;
}

export interface DialOptions extends TimeoutOptions, LimitOptions {
  /** PEM CA bundle that must have signed the server's certificate. */
  ca?: string;
  /** Pinned SHA-256 fingerprint of the server's certificate (hex, colons optional). */
  fingerprint?: string;
  /** Accept any server certificate. Dangerous: development only. */
  insecureSkipVerify?: boolean;
  /** Name checked against the certificate; defaults to the host of the address. */
  serverName?: string;
  /** Bound on connecting plus handshaking. */
  dialTimeoutMs?: number;
  /** The certificate this dialer presents, for listeners that require one (mutual TLS). */
  clientTls?: TlsMaterial;
  /** QUIC only: the stock library without Felix's performance settings (benchmarks). */
  quicStock?: boolean;
}
