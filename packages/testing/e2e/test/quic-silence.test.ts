// Goal: packages/client/README.md ("Errors", reconnects) says a SIGKILLed broker is noticed over
// QUIC as soon as its host refuses the client's probe of its port, and after 3 s of silence at
// most (no close arrives). A worker's consume() loop has a long poll waiting for its answer and a
// subscriber waits for events: both should notice a SIGKILLed broker within about
// PEER_SILENCE_MS, not only at the idle bound; a quiet client says why it lost the broker.
// Method: a durable felix-broker process, a client over QUIC with its default idle bound, the
// broker SIGKILLed (not restarted), and the time until the client's status says `disconnected`,
// with its reason.
import type { StatusEvent } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { startBroker } from '../src/index.js';
import { PROJECTIONS_YAML, client } from './support.js';

/** PEER_SILENCE_MS (3 s) plus two connection checks and a loaded machine's slack: far below the
 *  idle bound (15 s) that readers waited for before. */
const NOTICED_WITHIN_MS = 6_000;

/** Starts `read` (resolving once it waits on the broker), SIGKILLs the broker, and answers how
 *  long the client took to say `disconnected`, and the reason it gave. */
async function noticeKill(
  read: (felix: Awaited<ReturnType<typeof client>>, signal: AbortSignal) => Promise<void>,
) {
  const dir = await tempDir();
  const broker = await startBroker({ yaml: PROJECTIONS_YAML, dir: dir.path, durable: true });
  // The client's own default idle bound (IDLE_TIMEOUT_MS_DEFAULT), not the suite's 2 s.
  const felix = await client(broker, 'quic', { idleTimeoutMs: 15_000 });
  const ac = new AbortController();
  try {
    let lostAt = 0;
    let reason = '';
    void (async () => {
      for await (const s of felix.status() as AsyncIterable<StatusEvent>) {
        if (s.type === 'disconnected' && lostAt === 0) {
          lostAt = Date.now();
          reason = s.reason;
        }
      }
    })();
    await read(felix, ac.signal);
    const killedAt = Date.now();
    await broker.kill();
    await waitFor(async () => lostAt > 0, 'the client to notice the lost broker', 20_000);
    return { ms: lostAt - killedAt, reason };
  } finally {
    ac.abort();
    await felix.close();
    await dir.cleanup();
  }
}

describe('a SIGKILLed broker over QUIC', () => {
  it('a_consume_loop_waiting_on_a_long_poll_notices_a_sigkilled_broker_within_its_peer_silence_bound', async () => {
    const { ms } = await noticeKill(async (felix, signal) => {
      // One job done: the loop's next poll is parked at the broker.
      let done = 0;
      void (async () => {
        for await (const m of felix.group('jobs', 'idle', { shard: 0 }).consume({ signal })) {
          await m.ack();
          done++;
        }
      })().catch(() => {
        // Ended by the kill or the abort: the verdict is the time to notice.
      });
      await felix.publish('jobs', 'one');
      await waitFor(() => done === 1, 'the loop to finish its one job');
    });
    expect(ms).toBeLessThan(NOTICED_WITHIN_MS);
  }, 40_000);

  it('a_subscriber_waiting_for_events_notices_a_sigkilled_broker_within_its_peer_silence_bound', async () => {
    const { ms } = await noticeKill(async (felix, signal) => {
      const sub = felix.subscribe('jobs', { signal });
      await sub.ready();
      void (async () => {
        for await (const _ of sub) {
          // Waits for events that never come.
        }
      })().catch(() => {
        // Ended by the kill or the abort: the verdict is the time to notice.
      });
    });
    expect(ms).toBeLessThan(NOTICED_WITHIN_MS);
  }, 40_000);

  it('a_quic_client_hears_a_sigkilled_brokers_closed_port_instead_of_waiting_out_its_silence', async () => {
    // The client is connected and quiet when the broker dies: no close comes, but the broker's
    // host refuses the client's probe of its port (before, the silence bound ended it, 3 s).
    const { reason } = await noticeKill(async (felix) => {
      await felix.publish('jobs', 'before');
    });
    expect(reason).toMatch(
      /^the connection to quic:\/\/127\.0\.0\.1:\d+ was lost: peer gone: nothing listens on UDP port \d+ \(connection refused\)$/,
    );
  }, 40_000);
});
