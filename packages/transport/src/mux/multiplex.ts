/**
 * The TLS transport's multiplexer over a byte stream the caller already holds (any Node Duplex:
 * a TCP or Unix socket, an in-memory pair). Public so the multiplexer's own cost can be measured
 * with no TLS and no kernel in the way (scripts/bench/transport/mux-js.ts) through the same entry
 * point users import, and so Felix streams can ride a connection we do not dial ourselves.
 */
import type { Duplex } from 'node:stream';
import { resolveLimits, resolveTimeouts } from '../options.js';
import type { Connection, LimitOptions, TimeoutOptions } from '../types.js';
import { MuxSession } from './session.js';

export interface MultiplexOptions extends TimeoutOptions, LimitOptions {
  /** Which end this is: stream ids differ by role, so the two ends must differ. */
  role: 'client' | 'server';
  /** How the peer is named in errors and close info; default `duplex`. */
  remote?: string;
}

/**
 * Runs the multiplexer over `socket` (its `'data'` events are the reads) and resolves once the
 * peer's SETTINGS arrived, with a Connection that reports transport `tls`. Both ends must be
 * started before either is awaited: each waits for the other's preface. Rejects with the
 * transport's typed error when the stream fails or closes first; the Connection owns `socket`
 * from here on (closing it ends the stream).
 */
export async function multiplex(socket: Duplex, options: MultiplexOptions): Promise<Connection> {
  const limits = resolveLimits(options);
  const session = new MuxSession(socket, {
    role: options.role,
    remote: options.remote ?? 'duplex',
    timeouts: resolveTimeouts(options),
    settings: {
      maxStreamsBidi: limits.maxStreams,
      maxStreamsUni: limits.maxStreams,
      streamWindowBytes: limits.streamWindowBytes,
    },
    feed: { attach: (sink) => void socket.on('data', sink) },
  });
  await session.ready;
  return session;
}
