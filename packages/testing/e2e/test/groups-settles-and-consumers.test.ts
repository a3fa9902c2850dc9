// Goal: consumer groups served by the broker, as the client sees them: batched settles and
// named consumers. Acks and nacks made in one turn travel as one batch and each fails as its own
// settle would (stale claims named), a consume loop that stops hands its batch back in one
// request, and a named consumer on a new connection reclaims its own claims (only its own),
// ahead of new records. Method: one shared durable felix-broker process per transport (group
// in-flight cap 4) driven through @felix/client; the broker's request counters show how many
// requests a settle took.
import {
  ConnectionLostError,
  type FelixClient,
  type GroupMessage,
  InvalidArgumentError,
  StaleClaimError,
} from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, brokerMetric as metric } from '../src/index.js';
import { TRANSPORTS, client, jobs, startProjectionsBroker, tcpRelay } from './support.js';

for (const transport of TRANSPORTS) {
  describe(`broker consumer group settles and consumers over ${transport}`, () => {
    let shared: BrokerProcess;
    let felix: FelixClient;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ broker: shared, cleanup } = await startProjectionsBroker());
      felix = await client(shared, transport);
    });
    afterAll(async () => {
      await felix?.close();
      await shared?.stop();
      await cleanup?.();
    });
    const { freshGroup, publishJobs } = jobs(() => felix);

    /** Requests of `type` the broker has counted. */
    const requests = (type: string) =>
      metric(
        shared,
        new RegExp(`felix_broker_projection_requests_total\\{type="${type}"\\} (\\d+)`),
      );

    it('a_batched_ack_names_stale_offsets_and_finishes_the_rest', async () => {
      const g = await freshGroup('ack-batch');
      const offsets = await publishJobs(2, 'ack-batch');
      const old = await g.poll({ max: 2, waitMs: 5_000 });
      expect(old.map((m) => m.offset)).toEqual(offsets);
      // A seek voids both claims; the first record is handed out again, the second is not.
      await g.seek({ offset: offsets[0]! });
      const again = await g.poll({ max: 1, waitMs: 5_000 });
      expect(again.map((m) => m.offset)).toEqual([offsets[0]]);
      const batches = () =>
        metric(shared, /felix_broker_projection_requests_total\{type="group_ack_batch"\} (\d+)/);
      const before = await batches();
      // Both acks are made in one turn, so they travel as one group_ack_batch.
      const settled = await Promise.all(
        old.map((m) =>
          m.ack().then(
            () => 'acked',
            (err: unknown) => err,
          ),
        ),
      );
      expect(settled[0]).toBe('acked');
      expect(settled[1]).toBeInstanceOf(StaleClaimError);
      expect(await batches()).toBe(before + 1);
      expect((await g.describe()).committed).toBe(offsets[0]! + 1);
    });

    it('a_batched_nack_names_stale_offsets_and_hands_the_rest_back', async () => {
      const g = await freshGroup('nack-batch');
      const offsets = await publishJobs(2, 'nack-batch');
      const [kept] = await g.poll({ max: 1, waitMs: 5_000 });
      const [lapsing] = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      expect([kept?.offset, lapsing?.offset]).toEqual(offsets);
      // The second claim lapses and its record goes out again: the first delivery's claim is gone.
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offsets[1], 2]]);
      const batchesBefore = await requests('group_nack_batch');
      const nacksBefore = await requests('group_nack');
      const settled = await Promise.all(
        g.handBack([kept!, lapsing!]).map((p) =>
          p.then(
            () => 'handed back',
            (err: unknown) => err,
          ),
        ),
      );
      expect(settled[0]).toBe('handed back');
      expect(settled[1]).toBeInstanceOf(StaleClaimError);
      expect(await requests('group_nack_batch')).toBe(batchesBefore + 1);
      expect(await requests('group_nack')).toBe(nacksBefore);
      // The record handed back goes out again, its hand-back a release that did not count a
      // delivery; the other's second delivery still stands.
      const redelivered = await g.poll({ max: 4, waitMs: 5_000 });
      expect(redelivered.map((m) => [m.offset, m.attempts])).toEqual([[offsets[0], 1]]);
      await Promise.all([...redelivered, ...again].map((m) => m.ack()));
      expect((await g.describe()).committed).toBe(offsets[1]! + 1);
    });

    it('nacks_made_in_one_turn_go_as_one_batch_and_each_fails_as_its_own_nack_would', async () => {
      const g = await freshGroup('nack-turn');
      const offsets = await publishJobs(3, 'nack-turn');
      const held = await g.poll({ max: 2, waitMs: 5_000 });
      const [lapsing] = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      expect([...held, lapsing].map((m) => m?.offset)).toEqual(offsets);
      // The third claim lapses and goes out again: its first delivery is no longer the one that
      // stands, which a single nack refuses as a fatal stale_claim.
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offsets[2], 2]]);
      const single = await g.settle('group_nack', offsets[2]!, { attempts: 1 }).catch((e) => e);
      expect(single).toBeInstanceOf(StaleClaimError);
      const batchesBefore = await requests('group_nack_batch');
      const nacksBefore = await requests('group_nack');
      const settled = await Promise.all(
        [held[0]!, held[1]!, lapsing!].map((m) =>
          m.nack().then(
            () => 'handed back',
            (err: unknown) => err,
          ),
        ),
      );
      expect(settled.slice(0, 2)).toEqual(['handed back', 'handed back']);
      expect(settled[2]).toBeInstanceOf(StaleClaimError);
      expect((settled[2] as StaleClaimError).retry).toBe((single as StaleClaimError).retry);
      expect(await requests('group_nack_batch')).toBe(batchesBefore + 1);
      expect(await requests('group_nack')).toBe(nacksBefore);
      const redelivered = await g.poll({ max: 4, waitMs: 5_000 });
      expect(redelivered.map((m) => [m.offset, m.attempts])).toEqual([
        [offsets[0], 2],
        [offsets[1], 2],
      ]);
      await Promise.all([...redelivered, ...again].map((m) => m.ack()));
      expect((await g.describe()).committed).toBe(offsets[2]! + 1);
    });

    it('a_consume_loop_that_stops_hands_its_batch_back_in_one_request', async () => {
      const g = await freshGroup('nack-batch-loop');
      const offsets = await publishJobs(4, 'nack-batch-loop');
      const capped = () => metric(shared, /felix_group_polls_capped_total (\d+)/);
      const cappedBefore = await capped();
      const batchesBefore = await requests('group_nack_batch');
      const nacksBefore = await requests('group_nack');
      // The first poll takes all four (the group's in-flight cap), so the poll made ahead is
      // answered empty; only then does the loop stop, with three records never yielded.
      let first: GroupMessage | undefined;
      for await (const m of g.consume({ max: 4, waitMs: 0 })) {
        first = m;
        await waitFor(async () => (await capped()) > cappedBefore, 'the poll ahead is answered');
        break;
      }
      expect(first?.offset).toBe(offsets[0]);
      await waitFor(async () => (await g.describe()).owed === 3, 'the rest is handed back');
      expect(await requests('group_nack_batch')).toBe(batchesBefore + 1);
      expect(await requests('group_nack')).toBe(nacksBefore);
      // Never given to the application, so their deliveries were not counted.
      const again = await g.poll({ max: 4, waitMs: 5_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual(offsets.slice(1).map((o) => [o, 1]));
      await Promise.all([first!, ...again].map((m) => m.ack()));
    });

    it('records_a_consume_loop_never_yielded_do_not_count_toward_their_attempts', async () => {
      // A worker taking one job per loop (break after each): the loop polls four at a time and
      // hands back three it never yielded, again and again. Before, each hand-back counted as
      // a failed delivery, and jobs nobody had seen went to the dead letters after five loops.
      const g = await freshGroup('break-each');
      const offsets = await publishJobs(12, 'break-each');
      const seen: Array<[number, number]> = [];
      for (let round = 0; round < offsets.length; round++) {
        // Bounded: with jobs lost to the dead letters a later loop would find nothing to take.
        const signal = AbortSignal.timeout(10_000);
        const took = await (async () => {
          for await (const m of g.consume({ max: 4, waitMs: 1_000, signal })) {
            seen.push([m.offset, m.attempts]);
            await m.ack();
            return true;
          }
          return false;
        })().catch(() => false);
        if (!took) break;
        await waitFor(async () => (await g.describe()).inFlight === 0, 'the rest handed back');
      }
      expect(seen).toEqual(offsets.map((o) => [o, 1]));
      expect(await g.deadLetters()).toEqual([]);
      expect((await g.describe()).committed).toBe(offsets[offsets.length - 1]! + 1);
    });

    it('a_nack_with_a_delay_that_is_not_whole_milliseconds_is_refused_not_thrown', async () => {
      const g = await freshGroup('nack-delay');
      await publishJobs(1, 'nack-delay');
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      for (const delayMs of [-1, 1.5, Number.NaN]) {
        await expect(m!.nack({ delayMs }), String(delayMs)).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      }
      await expect(m!.extend(1.5)).rejects.toBeInstanceOf(InvalidArgumentError);
      // The claim still stands and settles as usual.
      await m!.nack({ delayMs: 10 });
      const [again] = await g.poll({ max: 1, waitMs: 5_000 });
      expect([again?.offset, again?.attempts]).toEqual([m!.offset, 2]);
      await again!.ack();
    });

    it('a_dead_letter_from_a_delivery_whose_record_went_out_again_is_refused', async () => {
      const g = await freshGroup('late-dead-letter');
      const [offset] = await publishJobs(1, 'late-dead-letter');
      // A slow holder: its claim lapses and the record goes to the next poller.
      const [first] = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offset, 2]]);
      // The first holder gives up late: refused, so the second holder's work is not ended
      // under it (before, the record became a dead letter and the second holder's extend failed).
      await expect(first!.deadLetter()).rejects.toBeInstanceOf(StaleClaimError);
      expect(await again[0]!.extend(1_000)).toBeGreaterThan(0);
      await again[0]!.ack();
      expect(await g.deadLetters()).toEqual([]);
      expect((await g.describe()).committed).toBe(offset! + 1);
    });

    it('a_poll_parked_on_a_deleted_group_answers_empty', async () => {
      const g = await freshGroup('deleted-under-poll');
      const polls = await requests('group_poll');
      const parked = g.poll({ max: 5, waitMs: 20_000 });
      await waitFor(async () => (await requests('group_poll')) > polls, 'the poll is parked');
      expect(await felix.group('jobs', 'deleted-under-poll', { shard: 0 }).delete()).toBe(true);
      // Before, the parked poll handed this record out from the deleted group's state, and its
      // ack then failed with not_found.
      await publishJobs(1, 'deleted-under-poll');
      expect((await parked).map((m) => m.offset)).toEqual([]);
    });

    // ---- named consumers (FEATURE_GROUP_CONSUMER) ----

    it('a_named_consumer_on_a_new_connection_gets_its_claims_back_at_once', async () => {
      const g = await freshGroup('reclaim', { consumer: 'worker-1' });
      const offsets = await publishJobs(2, 'reclaim');
      // Claims that would stand for a minute: only a reclaim can hand them out again now.
      const held = await g.poll({ max: 2, waitMs: 5_000, visibilityMs: 60_000 });
      expect(held.map((m) => m.offset)).toEqual(offsets);
      const anon = felix.group('jobs', 'reclaim', { shard: 0 });
      expect(await anon.poll({ max: 2, waitMs: 0 })).toEqual([]);
      // The same worker, restarted: a new connection under the same name.
      const restarted = await client(shared, transport);
      try {
        const again = await restarted
          .group('jobs', 'reclaim', { shard: 0, consumer: 'worker-1' })
          .poll({ max: 4, waitMs: 0 });
        expect(again.map((m) => [m.offset, m.attempts])).toEqual(offsets.map((o) => [o, 2]));
        // The first delivery's claims no longer stand.
        await expect(held[0]!.nack()).rejects.toBeInstanceOf(StaleClaimError);
        await Promise.all(again.map((m) => m.ack()));
        expect((await g.describe()).committed).toBe(offsets[1]! + 1);
      } finally {
        await restarted.close();
      }
    });

    it.skipIf(transport !== 'tls')(
      'a_named_consumer_that_reconnects_is_not_handed_again_what_it_still_holds',
      async () => {
        // A network blip, not a restart: the worker's connection is cut under it (a TCP relay
        // in front of the broker drops both sides) while it holds a record. Before, the first
        // poll of the new connection reclaimed, and the same process got that record a second
        // time while it was still working on it.
        const g0 = await freshGroup('blip', { consumer: 'w-blip' });
        const relay = await tcpRelay(shared.port);
        const worker = await client(shared, transport, {
          servers: [`tls://127.0.0.1:${relay.port}`],
        });
        try {
          const g = worker.group('jobs', 'blip', { shard: 0, consumer: 'w-blip' });
          const [a, b] = await publishJobs(2, 'blip');
          const held = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 60_000 });
          expect(held.map((m) => m.offset)).toEqual([a]);
          relay.cut();
          // A poll made before the client noticed the cut fails with the connection; the
          // worker polls again, as a consume loop does.
          let next: GroupMessage[] = [];
          await waitFor(
            () =>
              g.poll({ max: 2, waitMs: 1_000, visibilityMs: 60_000 }).then(
                (got) => {
                  next = got;
                  return true;
                },
                (err: unknown) => {
                  if (err instanceof ConnectionLostError) return false;
                  throw err;
                },
              ),
            'a poll on the new connection',
          );
          expect(next.map((m) => [m.offset, m.attempts])).toEqual([[b, 1]]);
          // The record still held settles on the new connection as it would have on the old.
          await held[0]!.ack();
          await next[0]!.ack();
          expect((await g0.describe()).committed).toBe(b! + 1);
        } finally {
          await worker.close();
          await relay.close();
        }
      },
    );

    it('a_poll_whose_client_has_gone_claims_nothing', async () => {
      const g = await freshGroup('gone');
      const connections = () => metric(shared, /^felix_broker_connections (\d+)/m);
      const open = await connections();
      const polls = await requests('group_poll');
      // A worker parks a long poll (nothing to hand out yet), then its process goes away.
      const gone = await client(shared, transport);
      const parked = gone.group('jobs', 'gone', { shard: 0 }).poll({ max: 1, waitMs: 20_000 });
      parked.catch(() => undefined); // its connection is closed under it on purpose
      await waitFor(async () => (await requests('group_poll')) > polls, 'the poll arrives', 10_000);
      await gone.close();
      await waitFor(async () => (await connections()) === open, 'its connection ends', 10_000);
      // The next record goes to a live consumer now, not to the dead poll's 30 s claim.
      const [offset] = await publishJobs(1, 'gone');
      const got = await g.poll({ max: 1, waitMs: 5_000 });
      expect(got.map((m) => [m.offset, m.attempts])).toEqual([[offset, 1]]);
      await got[0]!.ack();
    });

    it('a_reserved_record_refuses_the_old_deliverys_extend_and_dead_letter', async () => {
      const g = await freshGroup('reserved-stale', { consumer: 'worker-r' });
      const offsets = await publishJobs(3, 'reserved-stale');
      const held = await g.poll({ max: 3, waitMs: 5_000, visibilityMs: 60_000 });
      expect(held.map((m) => m.offset)).toEqual(offsets);
      const restarted = await client(shared, transport);
      try {
        const again = restarted.group('jobs', 'reserved-stale', { shard: 0, consumer: 'worker-r' });
        // The reclaim reserves all three; this poll takes one, the other two wait reserved.
        const first = await again.poll({ max: 1, waitMs: 0 });
        expect(first.map((m) => [m.offset, m.attempts])).toEqual([[offsets[0], 2]]);
        // The old deliveries of the reserved records no longer stand: before, their extend was
        // taken and their dead letter ended the record under the worker it was reserved for.
        await expect(held[2]!.extend(1_000)).rejects.toBeInstanceOf(StaleClaimError);
        await expect(held[1]!.deadLetter()).rejects.toBeInstanceOf(StaleClaimError);
        const rest = await again.poll({ max: 3, waitMs: 0 });
        expect(rest.map((m) => [m.offset, m.attempts])).toEqual([
          [offsets[1], 2],
          [offsets[2], 2],
        ]);
        expect(await again.deadLetters()).toEqual([]);
        await Promise.all([...first, ...rest].map((m) => m.ack()));
      } finally {
        await restarted.close();
      }
    });

    it('a_reclaim_takes_only_its_own_names_claims', async () => {
      const mine = await freshGroup('reclaim-own', { consumer: 'w-a' });
      const [a, b] = await publishJobs(2, 'reclaim-own');
      const [ma] = await mine.poll({ max: 1, waitMs: 5_000, visibilityMs: 60_000 });
      const theirs = felix.group('jobs', 'reclaim-own', { shard: 0, consumer: 'w-b' });
      const [mb] = await theirs.poll({ max: 1, waitMs: 5_000, visibilityMs: 60_000 });
      expect([ma!.offset, mb!.offset]).toEqual([a, b]);
      const other = await client(shared, transport);
      try {
        const got = await other
          .group('jobs', 'reclaim-own', { shard: 0, consumer: 'w-a' })
          .poll({ max: 4, waitMs: 0 });
        expect(got.map((m) => m.offset)).toEqual([a]);
        await got[0]!.ack();
        await mb!.ack(); // w-b's claim was left alone
      } finally {
        await other.close();
      }
    });

    it('reclaimed_records_beyond_one_poll_go_to_the_reclaiming_connection_first', async () => {
      const g = await freshGroup('reclaim-rest', { consumer: 'w-r' });
      const offsets = await publishJobs(3, 'reclaim-rest');
      const held = await g.poll({ max: 3, waitMs: 5_000, visibilityMs: 60_000 });
      expect(held).toHaveLength(3);
      const [fresh] = await publishJobs(1, 'reclaim-rest-new');
      const other = await client(shared, transport);
      try {
        const og = other.group('jobs', 'reclaim-rest', { shard: 0, consumer: 'w-r' });
        const first = await og.poll({ max: 2, waitMs: 0 });
        expect(first.map((m) => m.offset)).toEqual(offsets.slice(0, 2));
        // The group is at its cap of 4 with the new record not yet handed out; the third
        // reclaimed record still comes, ahead of the new one, then the new one.
        const second = await og.poll({ max: 4, waitMs: 0 });
        expect(second.map((m) => [m.offset, m.attempts])).toEqual([
          [offsets[2], 2],
          [fresh, 1],
        ]);
        await Promise.all([...first, ...second].map((m) => m.ack()));
      } finally {
        await other.close();
      }
    });
  });
}
