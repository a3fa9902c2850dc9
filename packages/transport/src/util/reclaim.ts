/**
 * Connections whose native handles are still live, per transport, and a full collection after
 * enough of them closed. A closed connection's native memory (quiche's connection and TLS state,
 * Node's TLS socket and OpenSSL objects) is freed only when V8 collects the JavaScript object
 * that owns it, and V8 does not count it when it decides to collect; with a large old space,
 * thousands of closed connections' native memory waited for the next full collection
 * (docs/perf.md, Memory). The process decides whether a collector exists (the broker passes
 * one); a library user without one pays nothing.
 */
import { RECLAIM_AFTER_CLOSED_CONNECTIONS, RECLAIM_INTERVAL_MS_MIN } from '../limits.js';
import type { TransportKind } from '../types.js';

const live: Record<TransportKind, number> = { quic: 0, tls: 0 };
let collector: (() => void) | null = null;
let closedSinceCollection = 0;
let lastCollectionAt = 0;
let timer: NodeJS.Timeout | null = null;

/** Connections of each transport whose native handles are not yet released (the socket closed,
 *  or the QUIC connection stopped): returns to zero once every connection is gone. */
export function liveConnections(): Record<TransportKind, number> {
  return { ...live };
}

/** Sets (or with null, removes) the full collection the transport may ask for. */
export function setNativeMemoryCollector(fn: (() => void) | null): void {
  collector = fn;
  if (fn === null && timer !== null) {
    clearTimeout(timer);
    timer = null;
  }
}

/** Counts a connection whose native handle now exists; answers its release, idempotent. */
export function trackConnection(kind: TransportKind): () => void {
  live[kind]++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    live[kind]--;
    closedSinceCollection++;
    if (
      collector !== null &&
      timer === null &&
      closedSinceCollection >= RECLAIM_AFTER_CLOSED_CONNECTIONS
    ) {
      const wait = Math.max(0, lastCollectionAt + RECLAIM_INTERVAL_MS_MIN - Date.now());
      timer = setTimeout(collect, wait);
      timer.unref();
    }
  };
}

function collect(): void {
  timer = null;
  closedSinceCollection = 0;
  lastCollectionAt = Date.now();
  collector?.();
}
