// Goal: what a consumer group keeps when the log or the broker changes under it: a record after
// a retention skip reports how many were skipped, a group's position and its redrives survive a
// restart (a finished redrive is not delivered again), a waiting poll is answered when the
// broker drains, and a group deleted and made again is not finished by its old consumers. Method: a fresh durable felix-broker process per test over TLS, driven through
// @felix/client; restarts reuse the data directory and ports.
import { CursorTooOldError, StaleClaimError } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { brokerMetric as metric, startBroker } from '../src/index.js';
import { PROJECTIONS_YAML as YAML, acrossRestart, client } from './support.js';

describe('a consumer group behind retention', () => {
  it('a_record_after_a_retention_skip_reports_how_many_were_skipped', async () => {
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: `
  durable: { segment_bytes: 4096, retention_check_interval_ms: 50 }
  streams:
  - { tenant: t1, name: trimmed, durable: true, fsync: none, retention: { max_bytes: 8192 } }
  `,
      dir: dir.path,
      durable: true,
    });
    const felix = await client(broker);
    try {
      const g = felix.group('trimmed', 'behind', { shard: 0 });
      await g.seek('earliest');
      const first = (await felix.publish('trimmed', 'first')).offset;
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(m).toMatchObject({ offset: first, skippedBefore: 0 });
      await m!.ack();
      // Publish until retention has removed records the group never reached.
      const payload = new Uint8Array(512).fill(7);
      const next = first! + 1;
      const available = await waitFor(
        async () => {
          await felix.publishBatch(
            'trimmed',
            Array.from({ length: 10 }, () => payload),
          );
          const it = felix.subscribe('trimmed', { from: next, shard: 0 })[Symbol.asyncIterator]();
          try {
            await it.next();
            await it.return?.();
            return null;
          } catch (e) {
            return e instanceof CursorTooOldError ? e.available : null;
          }
        },
        'retention to trim past the group',
        20_000,
      );
      const [after] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(after!.offset).toBeGreaterThanOrEqual(available);
      expect(after!.skippedBefore).toBe(after!.offset - next);
      expect(after!.skippedBefore).toBeGreaterThan(0);
      await after!.ack();
      const [later] = await g.poll({ max: 1, waitMs: 5_000 });
      // Retention may trim once more after the last publish (its pass runs every 50 ms): what
      // it removed since is reported on `later`, and nothing is reported twice.
      expect(later!.offset).toBe(after!.offset + 1 + later!.skippedBefore);
      expect(await metric(broker, /^felix_group_records_skipped_total (\d+)/m)).toBe(
        after!.skippedBefore + later!.skippedBefore,
      );
    } finally {
      await felix.close();
      await broker.stop();
      await dir.cleanup();
    }
  });
});

describe('broker consumer groups across restarts', () => {
  it('a_group_position_survives_a_broker_restart', async () => {
    let offsets: number[] = [];
    await acrossRestart(
      {},
      async (f) => {
        for (let i = 0; i < 3; i++) offsets.push((await f.publish('jobs', `p${i}`)).offset!);
        const g = f.group('jobs', 'restart');
        const msgs = await g.poll({ max: 3, waitMs: 5_000 });
        await msgs[0]!.ack();
        await msgs[1]!.ack();
        // msgs[2] stays in flight: in-memory state, gone with the process.
      },
      async (f) => {
        const g = f.group('jobs', 'restart');
        expect((await g.describe()).committed).toBe(offsets[2]);
        const again = await g.poll({ max: 3, waitMs: 5_000 });
        expect(again.map((m) => m.offset)).toEqual([offsets[2]]);
      },
      'kill',
    );
    offsets = [];
  });

  it('a_redriven_record_is_still_owed_after_a_restart', async () => {
    let target = -1;
    await acrossRestart(
      {},
      async (f) => {
        target = (await f.publish('jobs', 'redrive-me')).offset!;
        await f.publish('jobs', 'other');
        const g = f.group('jobs', 'redrive');
        const [m, other] = await g.poll({ max: 2, waitMs: 5_000 });
        await m!.deadLetter();
        await other!.ack();
        await g.redrive(target);
      },
      async (f) => {
        const g = f.group('jobs', 'redrive');
        const got = await g.poll({ max: 2, waitMs: 5_000 });
        expect(got.map((m) => m.offset)).toEqual([target]);
      },
    );
  });

  it('a_dead_letter_above_an_unfinished_record_is_not_delivered_again_after_a_restart', async () => {
    // The cursor cannot pass the unfinished record below the dead letter, so before, a restart
    // handed the dead letter out again as new work while it was still listed.
    let below = -1;
    let dead = -1;
    await acrossRestart(
      {},
      async (f) => {
        below = (await f.publish('jobs', 'still-out')).offset!;
        dead = (await f.publish('jobs', 'poison')).offset!;
        const g = f.group('jobs', 'dead-above-gap');
        const [m0, m1] = await g.poll({ max: 2, waitMs: 5_000 });
        expect([m0!.offset, m1!.offset]).toEqual([below, dead]);
        await m1!.deadLetter();
      },
      async (f) => {
        const g = f.group('jobs', 'dead-above-gap');
        const got = await g.poll({ max: 2, waitMs: 5_000 });
        expect(got.map((m) => [m.offset, m.attempts])).toEqual([[below, 1]]);
        expect(await g.deadLetters()).toEqual([dead]);
        await got[0]!.ack();
        expect((await g.describe()).committed).toBe(dead + 1);
      },
    );
  });

  it('a_finished_redrive_is_not_redelivered_after_a_restart', async () => {
    let after = -1;
    await acrossRestart(
      {},
      async (f) => {
        await f.publish('jobs', 'finish-me');
        const g = f.group('jobs', 'finished');
        const [m] = await g.poll({ max: 1, waitMs: 5_000 });
        await m!.deadLetter();
        await g.redrive(m!.offset);
        const [again] = await g.poll({ max: 1, waitMs: 5_000 });
        expect(again!.offset).toBe(m!.offset);
        await again!.ack();
      },
      async (f) => {
        after = (await f.publish('jobs', 'next')).offset!;
        const g = f.group('jobs', 'finished');
        const got = await g.poll({ max: 2, waitMs: 5_000 });
        expect(got.map((m) => m.offset)).toEqual([after]);
        expect(await g.deadLetters()).toEqual([]);
      },
    );
  });

  it('a_consumer_that_outlived_a_restart_can_ack_what_a_group_that_never_committed_handed_it', async () => {
    // A group's first poll, then a SIGKILL before any ack: the group had no cursor on disk, so
    // after the restart the consumer's acks were refused with not_found (and so was describe),
    // although the docs promise a consumer that outlived the broker can finish what it held.
    const dir = await tempDir();
    const spec = { yaml: YAML, dir: dir.path, durable: true };
    const first = await startBroker(spec);
    const f = await client(first);
    let second: Awaited<ReturnType<typeof startBroker>> | undefined;
    try {
      const offsets: number[] = [];
      for (let i = 0; i < 3; i++) offsets.push((await f.publish('jobs', `p${i}`)).offset!);
      const g = f.group('jobs', 'first-poll-then-crash');
      const held = await g.poll({ max: 3, waitMs: 5_000 });
      expect(held.map((m) => m.offset)).toEqual(offsets);
      await first.kill();
      second = await startBroker({ ...spec, port: first.port, httpPort: first.httpPort });
      // The same client, reconnected: it finishes the first record it held.
      await held[0]!.ack();
      expect((await g.describe()).committed).toBe(offsets[1]);
      const again = await g.poll({ max: 3, waitMs: 5_000 });
      expect(again.map((m) => m.offset)).toEqual(offsets.slice(1));
    } finally {
      await f.close();
      await second?.stop();
      await dir.cleanup();
    }
  });

  it('a_waiting_poll_is_answered_when_the_broker_drains', async () => {
    const dir = await tempDir();
    const broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    const f = await client(broker);
    try {
      const g = f.group('jobs', 'drain');
      await g.seek('latest');
      const waiting = g.poll({ max: 1, waitMs: 30_000 });
      await waitFor(
        async () =>
          (await metric(
            broker,
            /felix_broker_projection_requests_total\{type="group_poll"\} (\d+)/,
          )) >= 1,
        'the poll to reach the broker',
      );
      const stopping = broker.stop();
      expect(await waiting).toEqual([]);
      await stopping;
    } finally {
      await f.close();
      await dir.cleanup();
    }
  });
});

describe('a consumer group deleted and made again', () => {
  it('a_stale_ack_from_before_a_delete_does_not_finish_a_record_of_the_group_made_again', async () => {
    const dir = await tempDir();
    const broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    const f = await client(broker);
    try {
      const offsets: number[] = [];
      for (let i = 0; i < 5; i++) offsets.push((await f.publish('jobs', `p${i}`)).offset!);
      const g = f.group('jobs', 'made-again');
      const old = await g.poll({ max: 5, waitMs: 5_000, visibilityMs: 60_000 });
      expect(old.map((m) => m.offset)).toEqual(offsets);
      expect(await g.delete()).toBe(true);
      // The group is made again by its first poll, from the earliest record.
      const [first] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(first!.offset).toBe(offsets[0]);
      // A worker of the deleted group acks late: that delivery belongs to no live group. Before,
      // it was taken as an ack of the new group and offsets[3] was never handed out to it.
      await expect(old[3]!.ack()).rejects.toBeInstanceOf(StaleClaimError);
      await first!.ack();
      const rest = await g.poll({ max: 10, waitMs: 1_000 });
      expect(rest.map((m) => m.offset)).toEqual(offsets.slice(1));
    } finally {
      await f.close();
      await broker.stop();
      await dir.cleanup();
    }
  });
});
