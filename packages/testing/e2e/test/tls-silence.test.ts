// Goal: a subscriber over TLS whose broker stops answering without closing (SIGSTOP here; a dead
// host or a partition alike: no RST arrives) notices within about PEER_SILENCE_MS and says
// `disconnected`, as over QUIC, instead of at its idle bound (15 s): a connection that sends
// little besides its keep-alives is judged by its silence even with no request waiting.
// Method: a durable felix-broker process, a client over TLS with its default idle bound holding
// only a subscription, the broker SIGSTOPped, and the time until the client says `disconnected`.
import type { StatusEvent } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { startBroker } from '../src/index.js';
import { PROJECTIONS_YAML, client } from './support.js';

/** PEER_SILENCE_MS (3 s) plus two connection checks and a loaded machine's slack: far below the
 *  idle bound (15 s) that such a subscriber waited for before. */
const NOTICED_WITHIN_MS = 8_000;

describe('a stopped broker over TLS', () => {
  it('a_tls_subscriber_notices_a_stopped_broker_within_its_peer_silence_bound', async () => {
    const dir = await tempDir();
    const broker = await startBroker({ yaml: PROJECTIONS_YAML, dir: dir.path, durable: true });
    // The client's own default idle bound (IDLE_TIMEOUT_MS_DEFAULT), not the suite's 2 s.
    const felix = await client(broker, 'tls', { idleTimeoutMs: 15_000 });
    const ac = new AbortController();
    try {
      let lost: { at: number; reason: string } | undefined;
      void (async () => {
        for await (const s of felix.status() as AsyncIterable<StatusEvent>) {
          if (s.type === 'disconnected' && lost === undefined)
            lost = { at: Date.now(), reason: s.reason };
        }
      })();
      const sub = felix.subscribe('jobs', { signal: ac.signal });
      await sub.ready();
      void (async () => {
        for await (const _ of sub) {
          // Waits for events that never come.
        }
      })().catch(() => {
        // Ended by the stop or the abort: the verdict is the time to notice.
      });
      const stoppedAt = Date.now();
      broker.child.proc.kill('SIGSTOP');
      await waitFor(() => lost !== undefined, 'the client to notice the stopped broker', 30_000);
      expect(lost!.at - stoppedAt).toBeLessThan(NOTICED_WITHIN_MS);
      expect(lost!.reason).toMatch(/was lost: nothing received for \d+ ms$/);
    } finally {
      ac.abort();
      broker.child.proc.kill('SIGCONT');
      await felix.close();
      await broker.kill();
      await dir.cleanup();
    }
  }, 60_000);
});
