/**
 * What a closed connection leaves behind: under churn, per-connection buffers and native state
 * that only a garbage collection frees grew the broker's RSS without bound (docs/perf.md,
 * Memory). Counted, not timed: live handles and pooled buffers return to zero.
 */
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import {
  type Connection,
  RECLAIM_QUIET_AFTER_CLOSED_CONNECTIONS,
  type TransportKind,
  liveConnections,
  setNativeMemoryCollector,
  tlsBufferStats,
} from '../src/index.js';
import { trackConnection } from '../src/util/reclaim.js';
import { dialListener, startListener } from './helpers.js';

const CYCLES = 20;
const RELEASE_DEADLINE_MS = 20_000;

/** `n` dial, exchange, close cycles; the server side of each is closed by the client's close. */
async function churn(transport: TransportKind, n: number): Promise<void> {
  const listener = await startListener(transport, { closeTimeoutMs: 1_000 });
  const accepted = (async () => {
    for await (const conn of listener.connections()) {
      void (async () => {
        for await (const s of conn.incoming()) {
          for await (const chunk of s) await s.write(chunk);
          await s.end();
        }
      })();
    }
  })();
  try {
    for (let i = 0; i < n; i++) {
      const client: Connection = await dialListener(transport, listener);
      const s = await client.openBidi();
      await s.write(new Uint8Array(100));
      await s.end();
      for await (const _ of s) {
        // the echo: the server read the stream and answered
      }
      await client.close();
    }
  } finally {
    await listener.close();
    await accepted;
  }
}

describe('connection release', () => {
  const releasesEveryHandle = async (transport: TransportKind) => {
    const before = liveConnections()[transport];
    await churn(transport, CYCLES);
    await waitFor(
      () => liveConnections()[transport] === before,
      `live ${transport} handles back to ${before}`,
      RELEASE_DEADLINE_MS,
    );
  };

  it(
    'closed_tls_connections_release_their_native_handles',
    () => releasesEveryHandle('tls'),
    60_000,
  );

  it(
    'closed_quic_connections_release_their_native_handles',
    () => releasesEveryHandle('quic'),
    60_000,
  );

  it('closed_tls_connections_return_their_read_regions_and_write_slabs_for_the_next_connection', async () => {
    const before = tlsBufferStats();
    await churn('tls', CYCLES);
    await waitFor(
      () => {
        const s = tlsBufferStats();
        return (
          s.readRegions.out === before.readRegions.out && s.writeSlabs.out === before.writeSlabs.out
        );
      },
      'every pooled TLS buffer given back',
      RELEASE_DEADLINE_MS,
    );
    const after = tlsBufferStats();
    // One connection at a time (two ends): reuse, not an allocation per connection.
    expect(after.writeSlabs.allocated - before.writeSlabs.allocated).toBeLessThanOrEqual(4);
    expect(after.readRegions.allocated - before.readRegions.allocated).toBeLessThanOrEqual(4);
  }, 60_000);
});

/** The library's objects behind a QUIC connection adapter (vendor/matrixai-quic, patch 8). */
interface QuicInternals {
  conn: {
    socket: { sendSlab: Buffer | null; server: { quicheConfig?: object } };
    streamMap: Map<number, { readableChunk?: Buffer }>;
  };
}

describe('quic per-connection memory', () => {
  it('accepted_quic_connections_share_their_tls_context_send_slab_and_read_scratch', async () => {
    const listener = await startListener('quic');
    const servers: Connection[] = [];
    const clients: Connection[] = [];
    const accepting = (async () => {
      for await (const c of listener.connections()) {
        servers.push(c);
        if (servers.length === 2) return;
      }
    })();
    try {
      for (let i = 0; i < 2; i++) {
        const c = await dialListener('quic', listener);
        clients.push(c);
        await (await c.openBidi()).write(new Uint8Array(10));
      }
      await accepting;
      const [a, b] = servers.map((s) => (s as unknown as QuicInternals).conn);
      await waitFor(() => a!.streamMap.size > 0 && b!.streamMap.size > 0, 'a stream on each');
      expect(a!.socket.server.quicheConfig).toBeDefined();
      expect(a!.socket.sendSlab).toBeInstanceOf(Buffer);
      expect(b!.socket).toBe(a!.socket); // one socket: its slab and its server's config are shared
      const chunk = (c: typeof a) => [...c!.streamMap.values()][0]!.readableChunk;
      expect(chunk(a)).toBeDefined();
      expect(chunk(b)).toBe(chunk(a));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await listener.close();
    }
  }, 30_000);
});

describe('native memory collection', () => {
  it('a_full_collection_follows_a_burst_of_closed_connections_once_closes_go_quiet', async () => {
    let collections = 0;
    setNativeMemoryCollector(() => collections++);
    try {
      for (let i = 0; i < RECLAIM_QUIET_AFTER_CLOSED_CONNECTIONS; i++) trackConnection('tls')();
      await waitFor(() => collections === 1, 'one collection after the burst', 20_000);
    } finally {
      setNativeMemoryCollector(null);
    }
  }, 30_000);
});
