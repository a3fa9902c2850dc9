// Goal: an idle group's in-memory state is dropped only when a load from its durable cursor and
// dead letters rebuilds everything that decides what it delivers: a state holding an owed
// record's attempt count or an ack above a gap stays (its records are not counted from attempt 1
// again, an acked record is not delivered again), and one holding nothing of the kind is still
// dropped, so memory is returned for groups nobody uses. Method: a GroupService over real cursor
// and dead-letter stores in a temp dir (support/group-service.ts) and a stand-in shard whose memory holds every record; the
// idle sweep is run with a clock past GROUP_IDLE_EVICT_MS.
import {
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RELEASE,
  type GroupRecord,
  type Message,
} from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupState } from '../src/groups/group-state.js';
import type { GroupService } from '../src/groups/group-service.js';
import type { GroupMsg } from '../src/groups/requests.js';
import { GROUP_IDLE_EVICT_HOLDING_MS, GROUP_IDLE_EVICT_MS } from '../src/limits.js';
import type { Negotiated } from '../src/session/negotiation.js';
import { groupServiceOver } from './support/group-service.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const auth: Negotiated = {
  tenant: 't1',
  flags: 0,
  features: 0,
  featuresHi: FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_NACK_BATCH | FEATURE_HI_GROUP_RELEASE,
  negotiating: false,
};
const conn = {};

/** A shard of `tail` records, all held in its memory (record `o`'s payload is `[o]`). */
function shard(tail: number) {
  return {
    store: {},
    appliedNext: tail,
    logBaseOffset: 0,
    visitHeld(from: number, until: number, visit: (o: number, p: Uint8Array, t: number) => void) {
      if (from >= until) return false;
      for (let o = from; o < until; o++) visit(o, new Uint8Array([o]), 0);
      return true;
    },
    async readLog() {
      throw new Error('every record is held in memory');
    },
  };
}

async function service(tail: number, maxAttempts = 5) {
  const { svc, close } = await groupServiceOver(shard(tail), { maxAttempts });
  cleanups.push(close);
  const key = JSON.stringify(['t1', 'default', 'jobs', 0, 'g']);
  const registry = (
    svc as unknown as { registry: { held(s: { key: string }): GroupState | undefined } }
  ).registry;
  return {
    svc,
    held: () => registry.held({ key }),
    /** Runs the idle sweep as if the group had not been used for longer than the eviction age. */
    evictIdle: () => svc.evictIdle(Date.now() + GROUP_IDLE_EVICT_MS + 1_000),
    /** The sweep as if nobody had used the group for a day. */
    evictAfterADay: () => svc.evictIdle(Date.now() + GROUP_IDLE_EVICT_HOLDING_MS + 1_000),
  };
}

const scope = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 0, group: 'g' };
let id = 0;

async function ask(svc: GroupService, msg: object): Promise<Message> {
  return svc.answer(auth, { ...scope, ...msg, request_id: ++id } as GroupMsg, conn);
}

async function poll(svc: GroupService, max = 10): Promise<GroupRecord[]> {
  const m = await ask(svc, { type: 'group_poll', max_records: max, wait_ms: 0, reclaim: false });
  return m.type === 'group_records' ? m.records : [];
}

const ack = (svc: GroupService, offset: number) =>
  ask(svc, { type: 'group_ack_batch', offsets: [offset] });
const nack = (svc: GroupService, offset: number) => ask(svc, { type: 'group_nack', offset });

async function deadLetters(svc: GroupService): Promise<number[]> {
  const m = await ask(svc, { type: 'group_dead_letters' });
  return m.type === 'group_dead_letter_list' ? m.offsets : [];
}

describe('idle group eviction', () => {
  it('an_idle_group_keeps_the_attempt_count_of_a_record_owed_again', async () => {
    const { svc, evictIdle } = await service(1, 2);
    expect((await poll(svc)).map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
    await nack(svc, 0);
    evictIdle();
    // Before, the state was dropped and the record came back as its first delivery.
    expect((await poll(svc)).map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
    await nack(svc, 0);
    evictIdle();
    // Its two attempts are used up (groups.max_attempts 2): given up on, as without the idle
    // period, rather than escaping the bound.
    expect(await poll(svc)).toEqual([]);
    expect(await deadLetters(svc)).toEqual([0]);
  });

  it('an_idle_group_never_redelivers_a_record_acked_above_a_gap', async () => {
    const { svc, evictIdle } = await service(2);
    expect((await poll(svc)).map((r) => r.offset)).toEqual([0, 1]);
    expect(await ack(svc, 1)).toMatchObject({ type: 'group_acked', stale: [] });
    // Offset 0 is handed back uncounted (a release): owed at 0 attempts, nothing a load would
    // not rebuild; the ack of 1 above the gap at 0 is what the cursor cannot hold.
    const released = { type: 'group_nack_batch', offsets: [0], attempts: [1], release: true };
    expect(await ask(svc, released)).toMatchObject({ type: 'group_nacked', stale: [] });
    evictIdle();
    const drained: number[] = [];
    for (let batch = await poll(svc); batch.length > 0; batch = await poll(svc)) {
      for (const r of batch) {
        drained.push(r.offset);
        await ack(svc, r.offset);
      }
    }
    // Before, the reloaded state started at offset 0 and handed 1 out again.
    expect(drained).toEqual([0]);
  });

  it('an_idle_group_holding_nothing_a_reload_would_lose_is_evicted', async () => {
    const { svc, held, evictIdle } = await service(3);
    expect((await poll(svc, 2)).map((r) => r.offset)).toEqual([0, 1]);
    await ack(svc, 0);
    // Handed back uncounted: a load hands it out at attempt 1 as this state would.
    const released = { type: 'group_nack_batch', offsets: [1], attempts: [1], release: true };
    expect(await ask(svc, released)).toMatchObject({ type: 'group_nacked', stale: [] });
    evictIdle();
    expect(held()).toBeUndefined();
    // Loaded again from the cursor: nothing acked comes back, and the record handed back is a
    // first delivery either way.
    expect((await poll(svc)).map((r) => [r.offset, r.attempts])).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it('an_idle_group_whose_consumers_are_gone_for_a_day_is_evicted_whatever_it_holds', async () => {
    const { svc, held, evictIdle, evictAfterADay } = await service(3);
    // A claim standing (its consumer died holding it) and an ack above a gap.
    expect((await poll(svc, 2)).map((r) => r.offset)).toEqual([0, 1]);
    await ack(svc, 1);
    evictIdle();
    expect(held()).toBeDefined(); // ten minutes: kept
    evictAfterADay();
    // A day: dropped, so abandoned groups do not add up toward GROUPS_IN_MEMORY_MAX. Loaded again
    // it is as after a restart: above the cursor, every record comes back at attempt 1.
    expect(held()).toBeUndefined();
    expect((await poll(svc)).map((r) => [r.offset, r.attempts])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
  });
});
