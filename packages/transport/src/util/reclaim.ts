/**
 * Connections whose native handles are still live, per transport, and a full collection after
 * enough of them closed. A closed connection's native memory (quiche's connection and TLS state,
 * Node's TLS socket and OpenSSL objects) is freed only when V8 collects the JavaScript object
 * that owns it, and V8 does not count it when it decides to collect; with a large old space,
 * thousands of closed connections' native memory waited for the next full collection
 * (docs/perf.md, Memory). The process decides whether a collector exists (the broker passes
 * one); a library user without one pays nothing.
 */
import {
  RECLAIM_AFTER_CLOSED_CONNECTIONS,
  RECLAIM_INTERVAL_MS_MIN,
  RECLAIM_QUIET_AFTER_CLOSED_CONNECTIONS,
  RECLAIM_QUIET_INTERVAL_MS_MIN,
  RECLAIM_QUIET_MS,
} from '../limits.js';
import type { TransportKind } from '../types.js';

const live: Record<TransportKind, number> = { quic: 0, tls: 0 };
let collector: (() => void) | null = null;
let closedSinceCollection = 0;
let lastCollectionAt = 0;
let lastCloseAt = 0;
let timer: NodeJS.Timeout | null = null;
let timerDue = 0;

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
    lastCloseAt = Date.now();
    schedule();
  };
}

/** When the next collection is due: soon after enough closes, else once closes went quiet. */
function dueAt(): number | null {
  const earliest = lastCollectionAt + RECLAIM_INTERVAL_MS_MIN;
  if (closedSinceCollection >= RECLAIM_AFTER_CLOSED_CONNECTIONS) return earliest;
  if (closedSinceCollection < RECLAIM_QUIET_AFTER_CLOSED_CONNECTIONS) return null;
  const quietEarliest = lastCollectionAt + RECLAIM_QUIET_INTERVAL_MS_MIN;
  return Math.max(earliest, quietEarliest, lastCloseAt + RECLAIM_QUIET_MS);
}

function schedule(): void {
  const due = collector === null ? null : dueAt();
  if (due === null || (timer !== null && timerDue <= due)) return;
  if (timer !== null) clearTimeout(timer);
  timerDue = due;
  timer = setTimeout(fire, Math.max(0, due - Date.now()));
  timer.unref();
}

/** Collects if still due (a close since the timer was set may have moved the quiet time). */
function fire(): void {
  timer = null;
  const due = dueAt();
  if (due === null) return;
  if (due > Date.now()) {
    schedule();
    return;
  }
  closedSinceCollection = 0;
  lastCollectionAt = Date.now();
  collector?.();
}
