// Goal: client behaviours a user leans on: several servers are seeds (a dead one is skipped),
// an AbortSignal ends a subscription's iterator and a waiting call, a closed client fails
// calls with its typed error, and an ack that never comes is an unknown outcome, not a hang.
// Method: one real broker process over TLS (stopped with SIGSTOP where it must not answer),
// plus a port nothing listens on as the dead seed.
import {
  AbortedError,
  ClientClosedError,
  ConnectError,
  TimeoutError,
  connect,
} from '@felix/client';
import { freePort, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import type { Connection } from '@felix/transport';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';

describe('client behaviour', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: 'streams:\n  - { tenant: t1, name: s }\n', dir: dir.path });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('a_dead_seed_is_skipped_for_a_live_one', async () => {
    const dead = await freePort();
    const felix = await connect({
      servers: [`tls://127.0.0.1:${dead}`, broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
      connectTimeoutMs: 2_000,
    });
    expect((await felix.publish('s', 'x')).offset).not.toBeNull();
    await felix.close();
  });

  it('a_connect_failure_says_why_the_server_was_refused', async () => {
    // A wrong pin is the commonest first mistake: the error must say so, not only "could not".
    const err = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: 'AB'.repeat(32) },
      connectTimeoutMs: 2_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as Error).message).toMatch(/could not connect to tls:\/\/.*: .*fingerprint/i);
  });

  it('an_abort_signal_ends_a_subscription_and_a_waiting_call', async () => {
    const felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
    });
    const ac = new AbortController();
    const it = felix.subscribe('s', { signal: ac.signal })[Symbol.asyncIterator]();
    const pending = it.next();
    ac.abort();
    expect((await pending).done).toBe(true);
    const aborted = new AbortController();
    aborted.abort();
    await expect(felix.publish('s', 'x', { signal: aborted.signal })).rejects.toBeInstanceOf(
      AbortedError,
    );
    await felix.close();
    await expect(felix.publish('s', 'x')).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('a_subscription_opening_on_a_stopped_broker_ends_at_once_when_its_signal_aborts', async () => {
    // A stopped broker answers nothing while the connection stays up: the opening must end on
    // the abort, over both transports, not when the silence check gives the connection up.
    for (const transport of ['tls', 'quic'] as const) {
      const felix = await connect({
        servers: [broker.url(transport)],
        tenant: 't1',
        tls: { fingerprint: broker.fingerprint },
      });
      await felix.publish('s', 'warm-up');
      broker.child.proc.kill('SIGSTOP');
      try {
        // The client's own count of streams it opened: the opening has sent its `auth` (or is
        // about to) to a broker that will not answer. (A watch's opening: opening-abort.test.ts
        // in the client, as this in-memory broker offers no watches.)
        const opened = () =>
          (felix as unknown as { current: { conn: Connection } }).current.conn.stats()
            .streamsOpened;
        const before = opened();
        const ac = new AbortController();
        const pending = felix
          .subscribe('s', { shard: 0, signal: ac.signal })
          [Symbol.asyncIterator]()
          .next();
        await waitFor(() => opened() > before, `the opening over ${transport}`);
        ac.abort();
        const ended = await withDeadline(pending, 1_000, `the opening over ${transport}`);
        expect(ended.done).toBe(true);
      } finally {
        broker.child.proc.kill('SIGCONT');
      }
      await felix.close();
    }
  });

  it('acked_publishes_made_together_share_one_frame_and_keep_their_own_offsets', async () => {
    const felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
    });
    await felix.publish('s', 'warm-up');
    const frames = async () => {
      const text = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith('felix_broker_publishes_total{'));
      return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? 0);
    };
    const before = await frames();
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) => felix.publish('s', `r${i}`)),
    );
    expect(await frames()).toBe(before + 1);
    const offsets = results.map((r) => r.offset!);
    expect(offsets).toEqual(offsets.map((_, i) => offsets[0]! + i));
    const seen: string[] = [];
    for await (const ev of felix.subscribe('s', { from: offsets[0]!, shard: 0 })) {
      seen.push(new TextDecoder().decode(ev.data));
      if (ev.offset === offsets[63]) break;
    }
    expect(seen).toEqual(offsets.map((_, i) => `r${i}`));
    await felix.close();
  });

  it('gathered_publishes_whose_ack_never_comes_fail_as_unknown_outcomes_on_one_timer', async () => {
    const felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
      requestTimeoutMs: 400,
    });
    await felix.publish('s', 'warm-up');
    // A stopped broker answers nothing while the connection stays up.
    broker.child.proc.kill('SIGSTOP');
    const timers = vi.spyOn(globalThis, 'setTimeout');
    try {
      const settled = await Promise.allSettled(
        Array.from({ length: 16 }, (_, i) => felix.publish('s', `late${i}`)),
      );
      for (const s of settled) {
        expect(s.status).toBe('rejected');
        const err = (s as PromiseRejectedResult).reason as TimeoutError;
        expect(err).toBeInstanceOf(TimeoutError);
        expect(err.retry).toBe('unknown_outcome');
      }
      // One ack timer for the batch the sixteen shared, not one per caller.
      expect(timers.mock.calls.filter(([, ms]) => ms === 400)).toHaveLength(1);
    } finally {
      timers.mockRestore();
      broker.child.proc.kill('SIGCONT');
    }
    // The late ack is taken in stride: the connection carries on.
    expect((await felix.publish('s', 'after')).offset).not.toBeNull();
    await felix.close();
  });
});
