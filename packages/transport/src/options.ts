/**
 * Option defaults and validation shared by both transports: a bad value fails at start.
 */
import { BadOptionError } from './errors.js';
import {
  CLOSE_TIMEOUT_MS_DEFAULT,
  DIAL_TIMEOUT_MS_DEFAULT,
  IDLE_TIMEOUT_MS_DEFAULT,
  IDLE_TIMEOUT_MS_MIN,
  KEEPALIVE_INTERVAL_MS_DEFAULT,
  MUX_STREAM_WINDOW_BYTES_DEFAULT,
  MUX_STREAM_WINDOW_BYTES_MAX,
  STREAMS_PER_CONNECTION_DEFAULT,
  STREAMS_PER_CONNECTION_MAX,
  HANDSHAKES_IN_FLIGHT_DEFAULT,
  HANDSHAKES_IN_FLIGHT_MAX,
} from './limits.js';
import type { LimitOptions, ListenOptions, TimeoutOptions } from './types.js';

export interface ResolvedTimeouts {
  idleTimeoutMs: number;
  keepAliveIntervalMs: number;
  closeTimeoutMs: number;
}

export interface ResolvedLimits {
  maxStreams: number;
  streamWindowBytes: number;
}

function intIn(name: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new BadOptionError(name, `must be an integer in [${min}, ${max}], got ${v}`);
  }
  return v;
}

export function resolveTimeouts(o: TimeoutOptions): ResolvedTimeouts {
  const idleTimeoutMs = intIn(
    'idleTimeoutMs',
    o.idleTimeoutMs ?? IDLE_TIMEOUT_MS_DEFAULT,
    IDLE_TIMEOUT_MS_MIN,
    2 ** 31 - 1,
  );
  const keepAliveIntervalMs = intIn(
    'keepAliveIntervalMs',
    o.keepAliveIntervalMs ?? Math.min(KEEPALIVE_INTERVAL_MS_DEFAULT, Math.floor(idleTimeoutMs / 3)),
    0,
    2 ** 31 - 1,
  );
  if (keepAliveIntervalMs >= idleTimeoutMs) {
    throw new BadOptionError(
      'keepAliveIntervalMs',
      `must be below idleTimeoutMs (${idleTimeoutMs})`,
    );
  }
  const closeTimeoutMs = intIn(
    'closeTimeoutMs',
    o.closeTimeoutMs ?? CLOSE_TIMEOUT_MS_DEFAULT,
    1,
    2 ** 31 - 1,
  );
  return { idleTimeoutMs, keepAliveIntervalMs, closeTimeoutMs };
}

export function resolveLimits(o: LimitOptions): ResolvedLimits {
  return {
    maxStreams: intIn(
      'maxStreams',
      o.maxStreams ?? STREAMS_PER_CONNECTION_DEFAULT,
      1,
      STREAMS_PER_CONNECTION_MAX,
    ),
    streamWindowBytes: intIn(
      'streamWindowBytes',
      o.streamWindowBytes ?? MUX_STREAM_WINDOW_BYTES_DEFAULT,
      1024,
      MUX_STREAM_WINDOW_BYTES_MAX,
    ),
  };
}

export function resolveDialTimeout(ms: number | undefined): number {
  return intIn('dialTimeoutMs', ms ?? DIAL_TIMEOUT_MS_DEFAULT, 1, 2 ** 31 - 1);
}

export function resolveHandshakesInFlight(o: Pick<ListenOptions, 'handshakesInFlightMax'>): number {
  return intIn(
    'handshakesInFlightMax',
    o.handshakesInFlightMax ?? HANDSHAKES_IN_FLIGHT_DEFAULT,
    1,
    HANDSHAKES_IN_FLIGHT_MAX,
  );
}
