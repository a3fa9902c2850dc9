/**
 * Plaintext from a TLS socket handed to the multiplexer without Node's Readable machinery.
 *
 * By default every TLS read costs Node a managed buffer of its own, a Buffer around it, and the
 * stream path (push, addChunk, emit('data'), maybeReadMore on the next tick) before the
 * multiplexer sees a byte. On this project's machines that was 6-10 µs of CPU per small read on
 * each side of a round trip (docs/perf.md, session 7). Here the socket decrypts straight into a
 * region of ours (Node's documented `onread` option on the dialing side; the same hook installed
 * on an accepted socket), and a view the multiplexer hands on stays valid: see `ReadFeed`.
 */
import type { TLSSocket } from 'node:tls';
import { ProtocolError } from '../errors.js';
import { BufferPool } from '../util/buffer-pool.js';
import {
  TLS_BUFFER_POOL_MAX,
  TLS_EARLY_READ_BYTES_MAX,
  TLS_READ_HANDOFF_BYTES_MIN,
  TLS_READ_REGION_BYTES,
} from '../limits.js';

/** A plain Uint8Array over a Buffer's bytes: slices taken downstream (DATA pieces, frames,
 *  records) are then typed-array builtins, not Buffer's own subarray. */
function plain(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

/** Regions sockets decrypt into (not zero-filled: they are written first), reused across
 *  connections. */
export const readRegionPool = new BufferPool(TLS_READ_REGION_BYTES, TLS_BUFFER_POOL_MAX);

/**
 * A copy of `buf[0, n)` in memory of its own, as Node's own read buffer was: a view a reader
 * keeps (a record in a ring) then pins exactly its read, never a slab shared with other reads.
 */
function copyOut(buf: Uint8Array, n: number): Uint8Array {
  const b = Buffer.allocUnsafeSlow(n);
  b.set(buf.subarray(0, n));
  return plain(b);
}

/**
 * Where a socket's reads go. A large read is handed on as a view of its region and the next read
 * gets a fresh region; a smaller one is copied out at its exact size and the region is reused, so
 * a kept view never pins more than twice what it holds. Reads that arrive before the multiplexer
 * attaches (the peer's preface can land in the same turn as the handshake) are held, bounded,
 * and delivered first.
 */
export class ReadFeed {
  private sink: ((chunk: Uint8Array) => void) | null = null;
  private early: Uint8Array[] = [];
  private earlyBytes = 0;
  private regionBuffer: Buffer | null = readRegionPool.take();
  private region = plain(this.regionBuffer!);
  private handedOff = false;

  /** The `onread` option for `tls.connect` (`buffer` as a function: a region per read). */
  readonly onread = {
    buffer: (): Uint8Array => this.nextRegion(),
    callback: (n: number, buf: Uint8Array): boolean => {
      this.onRead(n, buf);
      return true;
    },
  };

  /** The region the next read goes to: the same one unless the last read was handed on. */
  readonly nextRegion = (): Uint8Array => {
    if (this.handedOff) {
      this.regionBuffer = readRegionPool.take();
      this.region = plain(this.regionBuffer);
      this.handedOff = false;
    }
    return this.region;
  };

  /** Gives the region back once the socket closed (no read can land in it any more); a region
   *  handed on belongs to its reader. Idempotent. */
  release(): void {
    if (this.regionBuffer !== null && !this.handedOff) readRegionPool.give(this.regionBuffer);
    this.regionBuffer = null;
    this.handedOff = true; // a late nextRegion() then takes a fresh region instead of this one
  }

  private onRead(n: number, buf: Uint8Array): void {
    if (n >= TLS_READ_HANDOFF_BYTES_MIN) {
      this.handedOff = true;
      readRegionPool.forget();
      this.regionBuffer = null;
      this.push(buf.subarray(0, n));
    } else {
      this.push(copyOut(buf, n));
    }
  }

  push(chunk: Uint8Array): void {
    const sink = this.sink;
    if (sink !== null) {
      sink(chunk);
      return;
    }
    this.earlyBytes += chunk.length;
    // Past the bound nothing more is held: `attach` then refuses the connection.
    if (this.earlyBytes > TLS_EARLY_READ_BYTES_MAX) this.early = [];
    else this.early.push(chunk);
  }

  /** Delivers what was held, then every later read, to `sink`. Throws if too much was held. */
  attach(sink: (chunk: Uint8Array) => void): void {
    if (this.earlyBytes > TLS_EARLY_READ_BYTES_MAX) {
      throw new ProtocolError(
        `peer sent more than ${TLS_EARLY_READ_BYTES_MAX} bytes before the multiplexer started`,
      );
    }
    const early = this.early;
    this.early = [];
    this.sink = sink;
    for (const c of early) sink(c);
  }
}

/** Node's private slots behind the `onread` option; looked up once, by their descriptions. */
let slots: { buffer: symbol; callback: symbol; gen: symbol } | null | undefined;

function onreadSlots(socket: TLSSocket): typeof slots {
  if (slots !== undefined) return slots;
  const own = Object.getOwnPropertySymbols(socket);
  const find = (d: string) => own.find((s) => s.description === d);
  const buffer = find('kBuffer');
  const callback = find('kBufferCb');
  const gen = find('kBufferGen');
  slots = buffer && callback && gen ? { buffer, callback, gen } : null;
  return slots;
}

/**
 * Feeds an accepted socket's reads to `feed` the way `onread` feeds a dialed one. Node offers
 * `onread` only to sockets it opens itself, so the same three slots are set here and the handle
 * is pointed at the scratch region. Whatever the socket had already buffered is taken first, so
 * no byte is reordered. Falls back to 'data' events where this Node keeps the slots elsewhere;
 * answers whether the hook was installed. The region goes back to the pool when the socket closes.
 */
export function feedAcceptedSocket(socket: TLSSocket, feed: ReadFeed): boolean {
  socket.once('close', () => feed.release());
  const s = onreadSlots(socket);
  const handle = (socket as unknown as { _handle?: { useUserBuffer?(b: Uint8Array): void } })
    ._handle;
  const target = socket as unknown as Record<symbol, unknown>;
  if (s === null || s === undefined || typeof handle?.useUserBuffer !== 'function') {
    socket.on('data', (chunk: Buffer) => feed.push(plain(chunk)));
    return false;
  }
  for (let c = socket.read() as Buffer | null; c !== null; c = socket.read() as Buffer | null) {
    feed.push(plain(c));
  }
  const region = feed.nextRegion();
  target[s.buffer] = region;
  target[s.gen] = feed.nextRegion;
  target[s.callback] = feed.onread.callback;
  handle.useUserBuffer(region);
  return true;
}
