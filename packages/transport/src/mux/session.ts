/**
 * A multiplexed connection over one byte stream (a TLS socket): stream ids, credit flow control,
 * keep-alive, idle timeout, bounded close, and per-turn write coalescing. Implements Connection.
 */
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import {
  CLOSE_CODE_FORCED,
  CLOSE_CODE_IDLE_TIMEOUT,
  CLOSE_CODE_INTERNAL,
  CLOSE_CODE_NORMAL,
  CLOSE_CODE_PEER_LOST,
  CLOSE_CODE_PROTOCOL_ERROR,
} from '../codes.js';
import {
  ConnectionClosedError,
  IdleTimeoutError,
  ProtocolError,
  StreamLimitError,
} from '../errors.js';
import {
  MUX_FRAME_PAYLOAD_BYTES_MAX,
  MUX_SOCKET_BUFFER_BYTES_MAX,
  MUX_STREAM_WINDOW_BYTES_MAX,
  MUX_WRITE_BATCH_BYTES_MAX,
  TLS_BUFFER_POOL_MAX,
} from '../limits.js';
import { alertInText, tlsAlertReason } from '../tls-alert.js';
import type { ResolvedTimeouts } from '../options.js';
import type {
  Connection,
  ConnectionCloseInfo,
  ConnectionStats,
  StreamKind,
  TransportStream,
} from '../types.js';
import { AsyncQueue } from '../util/async-queue.js';
import { BufferPool } from '../util/buffer-pool.js';
import { trackConnection } from '../util/reclaim.js';
import {
  FRAME_CLOSE,
  FRAME_CREDIT,
  FRAME_DATA,
  FRAME_FIN,
  FRAME_PING,
  FRAME_PONG,
  FRAME_RESET,
  FRAME_SETTINGS,
  FRAME_STREAMS,
  type FrameSink,
  MUX_HEADER_BYTES,
  MUX_PREFACE,
  MuxDecoder,
  readU32,
  type Settings,
  decodeClose,
  decodeSettings,
  encodeClose,
  encodeSettings,
  encodeU32Pair,
  writeHeader,
  writeU32,
} from './frame.js';
import { MuxStream, type StreamHost } from './stream.js';

/** Payloads up to this size are copied into the batch slab; larger ones are written by reference. */
const COPY_PAYLOAD_BYTES_MAX = 2048;
const SLAB_BYTES = 64 * 1024;
/** Write slabs reused across connections: a session takes one when it starts and gives its
 *  last one back when its socket closed (earlier ones may still be viewed by queued writes). */
export const writeSlabPool = new BufferPool(SLAB_BYTES, TLS_BUFFER_POOL_MAX);
/** Stream indexes stay below 2^30 so ids fit in u32. */
const STREAM_INDEX_LIMIT = 2 ** 30;
const RESOLVED = Promise.resolve();
const EMPTY_SLAB = Buffer.alloc(0);

export interface MuxSessionOptions {
  role: 'client' | 'server';
  remote: string;
  timeouts: ResolvedTimeouts;
  settings: Settings;
  /** Where the socket's reads come from (the socket itself is only written to). */
  feed: { attach(sink: (chunk: Uint8Array) => void): void };
}

const KINDS = { bidi: 0, uni: 1 } as const;

export class MuxSession implements Connection, FrameSink, StreamHost {
  readonly transport = 'tls' as const;
  readonly remote: string;
  readonly closed: Promise<ConnectionCloseInfo>;
  /** Resolves once the peer's SETTINGS arrived (or rejects when the connection failed first). */
  readonly ready: Promise<void>;

  private resolveClosed!: (info: ConnectionCloseInfo) => void;
  private resolveReady!: () => void;
  private rejectReady!: (e: Error) => void;
  private readonly decoder: MuxDecoder;
  private readonly isClient: boolean;
  private readonly streams = new Map<number, MuxStream>();
  private readonly incomingQueue: AsyncQueue<TransportStream>;
  private peerSettings: Settings | null = null;

  /** Next index we open, per kind; how many the peer allows us in total, per kind. */
  private readonly localNext = [0, 0];
  private readonly localAllowed = [0, 0];
  /** Next index the peer may open, per kind; how many we allow in total; grants not yet sent. */
  private readonly peerNext = [0, 0];
  private readonly peerAllowed: number[];
  private readonly pendingGrant = [0, 0];

  // write batching
  private slab = writeSlabPool.take();
  private slabUsed = 0;
  private slabSealed = 0;
  private out: Uint8Array[] = [];
  private outBytes = 0;
  private flushScheduled = false;
  private drainWaiter: Promise<void> | null = null;
  private resolveDrain: (() => void) | null = null;

  // liveness
  private lastReceivedAt = Date.now();
  private idleTimer: NodeJS.Timeout | null = null;
  private keepAliveTimer: NodeJS.Timeout | null = null;
  private forceTimer: NodeJS.Timeout | null = null;
  private closeInfo: ConnectionCloseInfo | null = null;
  private socketClosed: Promise<void>;

  private counters = {
    bytesSent: 0,
    bytesReceived: 0,
    streamsOpened: 0,
    streamsAccepted: 0,
    packetsSent: 0,
    packetsReceived: 0,
    recvBufferedBytes: 0,
  };

  constructor(
    private readonly socket: Duplex,
    private readonly opts: MuxSessionOptions,
  ) {
    this.remote = opts.remote;
    this.isClient = opts.role === 'client';
    this.peerAllowed = [opts.settings.maxStreamsBidi, opts.settings.maxStreamsUni];
    this.incomingQueue = new AsyncQueue(opts.settings.maxStreamsBidi + opts.settings.maxStreamsUni);
    this.decoder = new MuxDecoder(this);
    this.closed = new Promise((r) => {
      this.resolveClosed = r;
    });
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => {}); // observed by dial/accept; never an unhandled rejection
    this.socketClosed = new Promise((r) => socket.once('close', () => r()));
    void this.socketClosed.then(trackConnection('tls'));
    void this.socketClosed.then(() => this.releaseSlab());

    socket.on('drain', () => this.onDrain());
    socket.on('error', (err: Error) => this.onSocketGone(err));
    socket.on('end', () => this.onSocketGone(null));
    socket.on('close', () => this.onSocketGone(null));

    // Preface and SETTINGS go out first, in one write.
    this.appendRaw(MUX_PREFACE);
    this.appendFrame(FRAME_SETTINGS, 0, encodeSettings(opts.settings));
    this.flush();
    try {
      opts.feed.attach((chunk) => this.onSocketData(chunk));
    } catch (err) {
      this.protocolFailure(err);
    }
    this.armIdle();
    if (opts.timeouts.keepAliveIntervalMs > 0) {
      this.keepAliveTimer = setInterval(() => this.sendPing(), opts.timeouts.keepAliveIntervalMs);
      this.keepAliveTimer.unref();
    }
  }

  // ---- Connection ---------------------------------------------------------------------------

  openBidi(): Promise<TransportStream> {
    return Promise.resolve().then(() => this.open('bidi'));
  }

  openUni(): Promise<TransportStream> {
    return Promise.resolve().then(() => this.open('uni'));
  }

  private open(kind: StreamKind): TransportStream {
    if (this.closeInfo) throw this.closedError();
    const k = KINDS[kind];
    const index = this.localNext[k]!;
    if (index >= this.localAllowed[k]! || index >= STREAM_INDEX_LIMIT) {
      const limit =
        kind === 'bidi' ? this.peerSettings?.maxStreamsBidi : this.peerSettings?.maxStreamsUni;
      throw new StreamLimitError(kind, limit ?? 0);
    }
    this.localNext[k] = index + 1;
    const id = index * 4 + (kind === 'uni' ? 2 : 0) + (this.isClient ? 0 : 1);
    const stream = new MuxStream(
      this,
      id,
      kind,
      true,
      this.opts.settings.streamWindowBytes,
      this.peerSettings!.streamWindowBytes,
    );
    this.streams.set(id, stream);
    this.counters.streamsOpened++;
    return stream;
  }

  incoming(): AsyncIterable<TransportStream> {
    return this.incomingQueue;
  }

  async close(opts: { code?: number; reason?: string } = {}): Promise<void> {
    if (!this.closeInfo) {
      const code = (opts.code ?? CLOSE_CODE_NORMAL) >>> 0;
      const reason = opts.reason ?? 'closed';
      this.appendFrame(FRAME_CLOSE, 0, encodeClose(code, reason));
      this.finish({ code, reason });
    }
    await this.socketClosed;
  }

  peerCertificate(): Uint8Array | undefined {
    // Only a TLS socket has one; a multiplexer over a plain Duplex has no peer identity.
    if (!(this.socket instanceof TLSSocket)) return undefined;
    return this.socket.getPeerX509Certificate()?.raw;
  }

  stats(): ConnectionStats {
    return {
      bytesSent: this.counters.bytesSent,
      bytesReceived: this.counters.bytesReceived,
      streamsOpened: this.counters.streamsOpened,
      streamsAccepted: this.counters.streamsAccepted,
      streamsActive: this.streams.size,
      packetsSent: this.counters.packetsSent,
      packetsReceived: this.counters.packetsReceived,
      recvBufferedBytes: this.counters.recvBufferedBytes,
      sendBufferedBytes: this.outBytes + this.socket.writableLength,
    };
  }

  // ---- StreamHost ---------------------------------------------------------------------------

  sendData(id: number, chunk: Uint8Array): void {
    if (this.closeInfo) return;
    let at = 0;
    while (chunk.length - at > MUX_FRAME_PAYLOAD_BYTES_MAX) {
      this.appendFrame(FRAME_DATA, id, chunk.subarray(at, at + MUX_FRAME_PAYLOAD_BYTES_MAX));
      at += MUX_FRAME_PAYLOAD_BYTES_MAX;
    }
    this.appendFrame(FRAME_DATA, id, at === 0 ? chunk : chunk.subarray(at));
  }

  sendFin(id: number): void {
    if (!this.closeInfo) this.appendFrame(FRAME_FIN, id, null);
  }

  sendReset(id: number, code: number): void {
    if (this.closeInfo) return;
    const p = new Uint8Array(4);
    writeU32(p, 0, code);
    this.appendFrame(FRAME_RESET, id, p);
  }

  sendCredit(id: number, bytes: number): void {
    if (this.closeInfo) return;
    const p = new Uint8Array(4);
    writeU32(p, 0, bytes);
    this.appendFrame(FRAME_CREDIT, id, p);
  }

  writeReady(): Promise<void> {
    return this.writeReadyNow() ?? RESOLVED;
  }

  writeReadyNow(): Promise<void> | null {
    if (this.closeInfo) return Promise.reject(this.closedError());
    if (this.outBytes + this.socket.writableLength < MUX_SOCKET_BUFFER_BYTES_MAX) return null;
    this.flush();
    if (this.socket.writableLength < MUX_SOCKET_BUFFER_BYTES_MAX) return null;
    if (!this.drainWaiter) {
      this.drainWaiter = new Promise((r) => {
        this.resolveDrain = r;
      });
    }
    return this.drainWaiter;
  }

  onStreamDone(stream: MuxStream): void {
    this.streams.delete(stream.id);
  }

  onStreamReleased(stream: MuxStream): void {
    if (stream.local || this.closeInfo) return;
    // The slot is granted back to the peer and accepted here alike (granting it only to the
    // peer made its next stream past the first `maxStreams` a protocol error).
    this.grant(stream.kind === 'bidi' ? 0 : 1, 1);
  }

  recvBuffered(delta: number): void {
    this.counters.recvBufferedBytes += delta;
  }

  // ---- inbound ------------------------------------------------------------------------------

  private onSocketData(chunk: Uint8Array): void {
    this.lastReceivedAt = Date.now();
    this.counters.bytesReceived += chunk.length;
    this.counters.packetsReceived++;
    if (this.closeInfo) return;
    try {
      this.decoder.push(chunk);
    } catch (err) {
      this.protocolFailure(err);
    }
  }

  onFrame(type: number, id: number, payload: Uint8Array): void {
    if (this.closeInfo) return;
    // A listener refusing this dialer (mutual TLS) may open with CLOSE, to say why.
    if (this.peerSettings === null && type !== FRAME_SETTINGS && type !== FRAME_CLOSE) {
      throw new ProtocolError('the first multiplexer frame must be SETTINGS or CLOSE');
    }
    switch (type) {
      case FRAME_DATA: {
        const s = this.streamFor(id, type);
        if (s === null) return;
        if (!s.canRead) throw new ProtocolError(`DATA on send-only stream ${id}`);
        if (!s.onData(payload))
          throw new ProtocolError(`stream ${id} exceeded its flow-control window`);
        return;
      }
      case FRAME_FIN: {
        const s = this.streamFor(id, type);
        if (s === null) return;
        if (!s.canRead) throw new ProtocolError(`FIN on send-only stream ${id}`);
        s.onFin();
        return;
      }
      case FRAME_RESET: {
        const s = this.streamFor(id, type);
        if (s !== null) s.onPeerReset(readU32(payload, 0));
        return;
      }
      case FRAME_CREDIT: {
        const s = this.streamFor(id, type);
        if (s === null) return;
        if (!s.canWrite) throw new ProtocolError(`CREDIT on receive-only stream ${id}`);
        const bytes = readU32(payload, 0);
        if (bytes === 0 || bytes > MUX_STREAM_WINDOW_BYTES_MAX) {
          throw new ProtocolError(`CREDIT of ${bytes} bytes is out of range`);
        }
        s.onCredit(bytes);
        return;
      }
      case FRAME_SETTINGS: {
        if (this.peerSettings !== null) throw new ProtocolError('SETTINGS sent twice');
        const s = decodeSettings(payload);
        if (s.streamWindowBytes < 1024 || s.streamWindowBytes > MUX_STREAM_WINDOW_BYTES_MAX) {
          throw new ProtocolError(`SETTINGS stream window ${s.streamWindowBytes} is out of range`);
        }
        this.peerSettings = s;
        this.localAllowed[0] = s.maxStreamsBidi;
        this.localAllowed[1] = s.maxStreamsUni;
        this.resolveReady();
        return;
      }
      case FRAME_PING:
        this.appendFrame(FRAME_PONG, 0, payload.slice());
        return;
      case FRAME_PONG:
        return;
      case FRAME_CLOSE: {
        const { code, reason } = decodeClose(payload);
        this.finish({ code, reason });
        return;
      }
      case FRAME_STREAMS: {
        const bidi = readU32(payload, 0);
        const uni = readU32(payload, 4);
        this.localAllowed[0]! += bidi;
        this.localAllowed[1]! += uni;
        return;
      }
    }
  }

  /** The stream a peer frame addresses; null for a finished stream (late frames are dropped). */
  private streamFor(id: number, type: number): MuxStream | null {
    const existing = this.streams.get(id);
    if (existing !== undefined) return existing;
    const kind: StreamKind = (id & 2) === 0 ? 'bidi' : 'uni';
    const k = KINDS[kind];
    const index = Math.floor(id / 4);
    const initiatorIsClient = (id & 1) === 0;
    if (initiatorIsClient === this.isClient) {
      if (index < this.localNext[k]!) return null;
      throw new ProtocolError(`frame for stream ${id}, which we never opened`);
    }
    if (index < this.peerNext[k]!) return null;
    if (type === FRAME_CREDIT) throw new ProtocolError(`CREDIT for unopened stream ${id}`);
    if (index >= this.peerAllowed[k]!) {
      throw new ProtocolError(`peer opened stream ${id} beyond its ${kind} stream limit`);
    }
    // As in QUIC, a frame for stream N opens every lower stream of that kind the peer has not
    // used yet: the opener may write to its streams in any order. Each is delivered in order.
    for (let i = this.peerNext[k]!; i < index; i++) this.acceptStream(i * 4 + (id & 3), kind);
    this.peerNext[k] = index + 1;
    if (type === FRAME_RESET) {
      this.grant(k, 1); // opened and reset before any data: nothing to deliver
      return null;
    }
    return this.acceptStream(id, kind);
  }

  private acceptStream(id: number, kind: StreamKind): MuxStream {
    const stream = new MuxStream(
      this,
      id,
      kind,
      false,
      this.opts.settings.streamWindowBytes,
      this.peerSettings!.streamWindowBytes,
    );
    this.streams.set(id, stream);
    this.counters.streamsAccepted++;
    if (!this.incomingQueue.push(stream)) {
      // Cannot happen while the peer respects the limit (the queue holds the whole limit).
      throw new ProtocolError('incoming stream queue overflow');
    }
    return stream;
  }

  private grant(k: number, n: number): void {
    this.peerAllowed[k]! += n;
    this.pendingGrant[k]! += n;
    this.scheduleFlush();
  }

  // ---- outbound batching --------------------------------------------------------------------

  private appendRaw(bytes: Uint8Array): void {
    this.sealSlab();
    this.out.push(bytes);
    this.outBytes += bytes.length;
  }

  private appendFrame(type: number, id: number, payload: Uint8Array | null): void {
    const len = payload === null ? 0 : payload.length;
    const copy = len <= COPY_PAYLOAD_BYTES_MAX;
    const need = MUX_HEADER_BYTES + (copy ? len : 0);
    if (SLAB_BYTES - this.slabUsed < need) {
      this.sealSlab();
      // Queued writes may still view the full slab: the GC frees it.
      if (this.slab !== EMPTY_SLAB) writeSlabPool.forget();
      this.slab = writeSlabPool.take();
      this.slabUsed = 0;
      this.slabSealed = 0;
    }
    writeHeader(this.slab, this.slabUsed, type, id, len);
    this.slabUsed += MUX_HEADER_BYTES;
    if (payload !== null && len > 0) {
      if (copy) {
        this.slab.set(payload, this.slabUsed);
        this.slabUsed += len;
      } else {
        this.sealSlab();
        this.out.push(payload);
      }
    }
    this.outBytes += MUX_HEADER_BYTES + len;
    if (this.outBytes >= MUX_WRITE_BATCH_BYTES_MAX) this.flush();
    else this.scheduleFlush();
  }

  private sealSlab(): void {
    if (this.slabUsed > this.slabSealed) {
      // The socket keeps a view of this region; we only ever write beyond slabUsed.
      this.out.push(this.slab.subarray(this.slabSealed, this.slabUsed));
      this.slabSealed = this.slabUsed;
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    process.nextTick(this.scheduledFlush);
  }

  /** The flush `scheduleFlush` queues (one function for the session, not a closure per turn). */
  private readonly scheduledFlush = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  private flush(): void {
    if (this.pendingGrant[0]! > 0 || this.pendingGrant[1]! > 0) {
      const p = encodeU32Pair(this.pendingGrant[0]!, this.pendingGrant[1]!);
      this.pendingGrant[0] = 0;
      this.pendingGrant[1] = 0;
      if (!this.closeInfo) this.appendFrameNoFlush(FRAME_STREAMS, p);
    }
    this.sealSlab();
    const out = this.out;
    if (out.length === 0) return;
    this.out = [];
    this.counters.bytesSent += this.outBytes;
    this.outBytes = 0;
    this.counters.packetsSent++;
    if (this.socket.destroyed) return;
    if (out.length === 1) {
      this.socket.write(out[0]!);
    } else {
      this.socket.cork();
      for (const c of out) this.socket.write(c);
      this.socket.uncork();
    }
  }

  private appendFrameNoFlush(type: number, payload: Uint8Array): void {
    this.sealSlab();
    const h = Buffer.allocUnsafe(MUX_HEADER_BYTES + payload.length);
    writeHeader(h, 0, type, 0, payload.length);
    h.set(payload, MUX_HEADER_BYTES);
    this.out.push(h);
    this.outBytes += h.length;
  }

  private onDrain(): void {
    if (this.resolveDrain && this.socket.writableLength < MUX_SOCKET_BUFFER_BYTES_MAX) {
      const r = this.resolveDrain;
      this.resolveDrain = null;
      this.drainWaiter = null;
      r();
    }
  }

  private sendPing(): void {
    if (this.closeInfo) return;
    this.appendFrame(FRAME_PING, 0, new Uint8Array(8));
  }

  // ---- liveness and close -------------------------------------------------------------------

  private armIdle(): void {
    const idle = this.opts.timeouts.idleTimeoutMs;
    const check = () => {
      if (this.closeInfo) return;
      const quiet = Date.now() - this.lastReceivedAt;
      if (quiet >= idle) {
        const error = new IdleTimeoutError(idle);
        this.finish({ code: CLOSE_CODE_IDLE_TIMEOUT, reason: error.message, error }, true);
        return;
      }
      this.idleTimer = setTimeout(check, idle - quiet);
      this.idleTimer.unref();
    };
    this.idleTimer = setTimeout(check, idle);
    this.idleTimer.unref();
  }

  private protocolFailure(err: unknown): void {
    const error =
      err instanceof ProtocolError ? err : new ProtocolError('multiplexer failure', { cause: err });
    if (!this.closeInfo) {
      this.appendFrame(FRAME_CLOSE, 0, encodeClose(CLOSE_CODE_PROTOCOL_ERROR, error.message));
    }
    this.finish({ code: CLOSE_CODE_PROTOCOL_ERROR, reason: error.message, error });
  }

  private onSocketGone(err: Error | null): void {
    if (this.closeInfo) {
      if (!this.socket.destroyed && err) this.socket.destroy();
      return;
    }
    const error = new ConnectionClosedError(
      CLOSE_CODE_PEER_LOST,
      err ? `connection lost: ${lostReason(err)}` : PEER_CLOSED_SILENTLY,
      err ? { cause: err } : undefined,
    );
    this.finish({ code: CLOSE_CODE_PEER_LOST, reason: error.reason, error }, true);
  }

  /**
   * Ends the connection once: fails pending stream operations, flushes what is queued (CLOSE
   * included), half-closes the socket and destroys it after the close bound. `abrupt` destroys
   * at once (the peer is gone or silent).
   */
  private finish(info: ConnectionCloseInfo, abrupt = false): void {
    if (this.closeInfo) return;
    this.closeInfo = info;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    const err = info.error instanceof ConnectionClosedError ? info.error : this.closedError();
    for (const s of this.streams.values()) s.onConnectionClosed(err);
    this.streams.clear();
    this.incomingQueue.end();
    this.rejectReady(err);
    if (this.resolveDrain) {
      const r = this.resolveDrain;
      this.resolveDrain = null;
      this.drainWaiter = null;
      r();
    }
    if (abrupt || this.socket.destroyed) {
      this.out = [];
      this.outBytes = 0;
      this.socket.destroy();
    } else {
      this.flush();
      this.socket.end();
      this.forceTimer = setTimeout(() => {
        // Forced path: no more I/O, just drop the socket.
        this.socket.destroy();
      }, this.opts.timeouts.closeTimeoutMs);
      this.forceTimer.unref();
      this.socketClosed.then(() => {
        if (this.forceTimer) clearTimeout(this.forceTimer);
      });
    }
    this.resolveClosed(info);
  }

  private closedError(): ConnectionClosedError {
    const info = this.closeInfo;
    if (info?.error instanceof ConnectionClosedError) return info.error;
    return new ConnectionClosedError(
      info?.code ?? CLOSE_CODE_INTERNAL,
      info?.reason ?? 'connection closed',
      info?.error ? { cause: info.error } : undefined,
    );
  }

  /** Once the socket closed no write views the slab: it goes back to the pool, and a late
   *  append (none is expected) takes a fresh one. */
  private releaseSlab(): void {
    writeSlabPool.give(this.slab);
    this.slab = EMPTY_SLAB;
    this.slabUsed = SLAB_BYTES;
    this.slabSealed = SLAB_BYTES;
  }

  /** Destroys at once, no CLOSE frame: the forced path used by listeners on shutdown. */
  destroy(): void {
    this.finish({ code: CLOSE_CODE_FORCED, reason: 'forced close' }, true);
  }
}

/** Why a session ended whose socket closed without an error or a CLOSE frame. */
export const PEER_CLOSED_SILENTLY = 'peer closed the connection without CLOSE';

/** A socket error in words: a TLS alert the peer ended with is named, not left as OpenSSL's
 *  "SSL alert number N" at the end of a long line. */
function lostReason(err: Error): string {
  const alert = alertInText(err.message);
  return alert === undefined ? err.message : tlsAlertReason(alert);
}
