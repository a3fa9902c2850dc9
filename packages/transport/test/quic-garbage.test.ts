/**
 * Goal: hostile datagrams cannot crash a QUIC listener or disturb its connections. Method: send
 * random datagrams (and ones shaped like QUIC long headers) at the listener's UDP port, then
 * check an established connection and a new one both still echo.
 */
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { describe, expect, it } from 'vitest';
import { connectPair, dec, dialListener, enc, readAll } from './helpers.js';

describe('quic listener under garbage', () => {
  it('garbage_datagrams_leave_a_quic_listener_and_its_connections_working', async () => {
    const p = await connectPair('quic');
    const udp = createSocket('udp4');
    try {
      const served = (async () => {
        for await (const s of p.server.incoming()) {
          void (async () => {
            const body = await readAll(s);
            await s.write(body);
            await s.end();
          })().catch(() => {}); // garbage may kill the stream: only the server's survival counts
        }
      })();
      for (let i = 0; i < 200; i++) {
        const d = randomBytes(1 + (i % 1300));
        if (i % 2 === 0) d[0] = 0xc0 | (d[0]! & 0x0f); // long-header form bit set
        await new Promise<void>((r) => udp.send(d, p.listener.port, '127.0.0.1', () => r()));
      }
      const s = await p.client.openBidi();
      await s.write(enc.encode('still-echoing'));
      await s.end();
      expect(dec.decode(await readAll(s))).toBe('still-echoing');
      const fresh = await dialListener('quic', p.listener);
      await fresh.close();
      void served;
    } finally {
      udp.close();
      await p.cleanup();
    }
  });
});
