/**
 * Shared test fixtures: one dev certificate per test file, a listener/dialer pair per transport,
 * and small stream helpers.
 */
import { tempDir } from '@felix/testing-harness';
import {
  type Connection,
  type DialOptions,
  type ListenOptions,
  type Listener,
  type TransportKind,
  type TransportStream,
  type ValidatedMaterial,
  dial,
  listen,
  loadOrCreateDevCertificate,
} from '../src/index.js';

let material: Promise<ValidatedMaterial> | null = null;

export function devMaterial(): Promise<ValidatedMaterial> {
  material ??= (async () => {
    const dir = await tempDir('felix-transport-');
    try {
      return await loadOrCreateDevCertificate(dir.path);
    } finally {
      await dir.cleanup();
    }
  })();
  return material;
}

export interface Pair {
  listener: Listener;
  client: Connection;
  server: Connection;
  cleanup(): Promise<void>;
}

export async function startListener(
  transport: TransportKind,
  opts: Partial<ListenOptions> = {},
): Promise<Listener> {
  const m = await devMaterial();
  return listen({ transport, host: '127.0.0.1', port: 0, tls: m, ...opts });
}

export async function dialListener(
  transport: TransportKind,
  listener: Listener,
  opts: DialOptions = {},
): Promise<Connection> {
  const m = await devMaterial();
  return dial(`${transport}://127.0.0.1:${listener.port}`, { fingerprint: m.fingerprint, ...opts });
}

export async function connectPair(
  transport: TransportKind,
  listenOpts: Partial<ListenOptions> = {},
  dialOpts: DialOptions = {},
): Promise<Pair> {
  const listener = await startListener(transport, listenOpts);
  const accepted = listener.connections()[Symbol.asyncIterator]();
  const client = await dialListener(transport, listener, dialOpts);
  const next = await accepted.next();
  if (next.done) throw new Error('listener ended before accepting');
  const server = next.value;
  return {
    listener,
    client,
    server,
    async cleanup() {
      await client.close().catch(() => {}); // a test may have closed or broken it already
      await listener.close();
    },
  };
}

export async function nextStream(conn: Connection): Promise<TransportStream> {
  const it = conn.incoming()[Symbol.asyncIterator]();
  const r = await it.next();
  if (r.done) throw new Error('connection ended before a stream arrived');
  // Leave the iterator open: incoming() is a single long-lived queue.
  return r.value;
}

export async function readAll(stream: TransportStream): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of stream) {
    parts.push(c);
    n += c.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Rejection or resolution of a promise, as a value (so tests can assert on either). */
export function settle<T>(
  p: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

export const enc = new TextEncoder();
export const dec = new TextDecoder();
