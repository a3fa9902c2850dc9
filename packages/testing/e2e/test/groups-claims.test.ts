// Goal: consumer groups served by the broker, as the client sees them: hand-out and claims. An
// offset in flight is not handed out again, a lapsed claim is, the cursor never advances over a
// gap, owed records go first, a record is given up on after its attempt bound, a waiting poll is
// woken by a publish or an ack at the cap, extend / dead-letter / redrive / discard / seek keep
// their contracts, and a long consume loop reuses its stream. Method: one shared durable
// felix-broker process per transport (group in-flight cap 4, no periodic re-check of waiting
// polls) driven through @felix/client; each test uses its own group starting at the tail.
import {
  type FelixClient,
  InvalidRequestError,
  NotFoundError,
  StaleClaimError,
} from '@felix/client';
import { withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../src/index.js';
import { TRANSPORTS, client, jobs, startProjectionsBroker } from './support.js';

for (const transport of TRANSPORTS) {
  describe(`broker consumer group claims over ${transport}`, () => {
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

    it('an_offset_in_flight_is_not_handed_out_again', async () => {
      const g = await freshGroup('inflight');
      const offsets = await publishJobs(2, 'inflight');
      const a = await g.poll({ max: 1, waitMs: 5_000 });
      expect(a.map((m) => m.offset)).toEqual([offsets[0]]);
      const b = await g.poll({ max: 4, waitMs: 0 });
      expect(b.map((m) => m.offset)).toEqual([offsets[1]]);
      expect(await g.poll({ max: 4, waitMs: 0 })).toEqual([]);
      await Promise.all([...a, ...b].map((m) => m.ack()));
    });

    it('a_lapsed_claim_is_handed_out_again', async () => {
      const g = await freshGroup('lapse');
      const [offset] = await publishJobs(1, 'lapse');
      const first = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      expect(first[0]).toMatchObject({ offset, attempts: 1 });
      // Nobody settles it; a later poll gets it again once the claim lapses.
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again[0]).toMatchObject({ offset, attempts: 2 });
      // The first delivery's claim no longer stands.
      await expect(first[0]!.nack()).rejects.toBeInstanceOf(StaleClaimError);
      await again[0]!.ack();
    });

    it('the_cursor_does_not_advance_over_a_gap', async () => {
      const g = await freshGroup('gap');
      const offsets = await publishJobs(3, 'gap');
      const msgs = await g.poll({ max: 3, waitMs: 5_000 });
      expect(msgs.map((m) => m.offset)).toEqual(offsets);
      await msgs[1]!.ack();
      await msgs[2]!.ack();
      expect((await g.describe()).committed).toBe(offsets[0]);
      await msgs[0]!.ack();
      expect((await g.describe()).committed).toBe(offsets[2]! + 1);
    });

    it('owed_records_go_out_before_new_ones', async () => {
      const g = await freshGroup('owed');
      const offsets = await publishJobs(2, 'owed');
      const [first] = await g.poll({ max: 1, waitMs: 5_000 });
      await first!.nack();
      await publishJobs(1, 'owed-later');
      const next = await g.poll({ max: 2, waitMs: 0 });
      expect(next.map((m) => [m.offset, m.attempts])).toEqual([
        [offsets[0], 2],
        [offsets[1], 1],
      ]);
      await Promise.all(next.map((m) => m.ack()));
    });

    it('a_record_is_given_up_on_after_the_attempt_bound', async () => {
      const g = await freshGroup('poison');
      const [poison] = await publishJobs(1, 'poison');
      for (let attempt = 1; attempt <= 5; attempt++) {
        const [m] = await g.poll({ max: 1, waitMs: 5_000 });
        expect(m).toMatchObject({ offset: poison, attempts: attempt });
        await m!.nack();
      }
      const [after] = await publishJobs(1, 'poison-after');
      // The sixth hand-out would pass the bound: the record is a dead letter and the group moves on.
      const next = await g.poll({ max: 1, waitMs: 5_000 });
      expect(next.map((m) => m.offset)).toEqual([after]);
      expect(await g.deadLetters()).toEqual([poison]);
      await next[0]!.ack();
      expect((await g.describe()).committed).toBe(after! + 1);
    });

    it('a_waiting_poll_is_woken_by_a_publish', async () => {
      const g = await freshGroup('wake');
      // The poll may wait 30 s and the broker never re-checks on its own inside that (see
      // FELIX_GROUP_WAIT_RECHECK_MS above): only the publish's wake can answer it within 15 s.
      const waiting = g.poll({ max: 1, waitMs: 30_000 });
      const [offset] = await publishJobs(1, 'wake');
      const got = await withDeadline(waiting, 15_000, 'the publish to wake the waiting poll');
      expect(got.map((m) => m.offset)).toEqual([offset]);
      await got[0]!.ack();
    });

    it('a_group_at_its_in_flight_cap_gets_nothing_more', async () => {
      const g = await freshGroup('cap');
      await publishJobs(6, 'cap');
      const held = await g.poll({ max: 10, waitMs: 5_000 });
      expect(held).toHaveLength(4);
      expect(await g.poll({ max: 10, waitMs: 0 })).toEqual([]);
      expect((await g.describe()).inFlight).toBe(4);
      await Promise.all(held.map((m) => m.ack()));
      const rest = await g.poll({ max: 10, waitMs: 0 });
      expect(rest).toHaveLength(2);
      await Promise.all(rest.map((m) => m.ack()));
    });

    it('a_poll_at_the_cap_is_woken_by_an_ack', async () => {
      const g = await freshGroup('cap-wake');
      const offsets = await publishJobs(5, 'capwake');
      const held = await g.poll({ max: 4, waitMs: 5_000 });
      expect(held).toHaveLength(4);
      const waiting = g.poll({ max: 4, waitMs: 30_000 });
      await held[0]!.ack();
      const got = await withDeadline(waiting, 15_000, 'the ack to wake the poll at the cap');
      expect(got.map((m) => m.offset)).toEqual([offsets[4]]);
      await Promise.all([...held.slice(1), ...got].map((m) => m.ack()));
    });

    it('an_extend_keeps_a_claim_and_a_dead_letter_can_be_redriven_and_discarded', async () => {
      const g = await freshGroup('admin');
      const [a, b] = await publishJobs(2, 'admin');
      const msgs = await g.poll({ max: 2, waitMs: 5_000, visibilityMs: 60_000 });
      expect(await msgs[0]!.extend(120_000)).toBe(120_000);
      await msgs[0]!.deadLetter();
      await msgs[1]!.deadLetter();
      expect(await g.deadLetters()).toEqual([a, b]);
      await g.discard(b!);
      await g.redrive(a!);
      expect(await g.deadLetters()).toEqual([]);
      const [again] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(again).toMatchObject({ offset: a, attempts: 1 });
      await again!.ack();
      await expect(g.discard(b!)).rejects.toBeInstanceOf(InvalidRequestError);
      expect(await g.delete()).toBe(true);
      await expect(g.describe()).rejects.toBeInstanceOf(NotFoundError);
      // A group that does not exist has no dead-letter list either (it answered an empty one,
      // which reads as a healthy group); deleting it says it did not exist.
      await expect(g.deadLetters()).rejects.toBeInstanceOf(NotFoundError);
      expect(await g.delete()).toBe(false);
    });

    it('a_seek_voids_standing_claims_so_their_settles_are_stale', async () => {
      const g = await freshGroup('seek');
      const [offset] = await publishJobs(1, 'seek');
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(m!.offset).toBe(offset);
      const pos = await g.seek('latest');
      expect(pos).toEqual({ offset: offset! + 1, moved: true });
      await expect(m!.extend(1_000)).rejects.toBeInstanceOf(StaleClaimError);
      expect(await g.seek('earliest', { ifNew: true })).toEqual({
        offset: offset! + 1,
        moved: false,
      });
      expect((await g.describe()).inFlight).toBe(0);
    });

    it('polls_reuse_their_stream_so_a_long_consume_loop_never_exhausts_the_connection', async () => {
      // The TLS multiplexer allows 4096 concurrent bidi streams per connection; a stream per
      // poll that was never retired used to end the connection after ~4096 polls.
      const g = await freshGroup('many-polls');
      const polls = transport === 'tls' ? 4200 : 1100; // QUIC: 1024 concurrent streams each way
      for (let i = 0; i < polls; i++) expect(await g.poll({ max: 1, waitMs: 0 })).toEqual([]);
      const [offset] = await publishJobs(1, 'many-polls');
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(m!.offset).toBe(offset);
      await m!.ack();
    });

    it('a_group_on_an_in_memory_stream_is_refused', async () => {
      await expect(felix.group('memjobs', 'x').poll({ waitMs: 0 })).rejects.toBeInstanceOf(
        InvalidRequestError,
      );
    });
  });
}
