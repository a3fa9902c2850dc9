// Goal: a consume loop's requests are answered in the turn they are read when nothing in them
// needs an await (a poll of a group held in memory whose records the shard's memory holds; an
// ack batch under `periodic`, settled in memory), with the same claims and answers as the
// awaited path; an `onCommit` ack still waits for its cursor write, and a poll arriving while
// another poll's hand-out awaits the log is answered after it, in hand-out order. Method: a
// GroupService over a real cursor store in a temp dir and a stand-in shard whose memory holds
// the offsets the test says (the rest are read from a "log" the test releases).
import type { Message } from '@felix/wire';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamConfig } from '../src/config/types.js';
import type { GroupState } from '../src/groups/group-state.js';
import type { GroupService } from '../src/groups/group-service.js';
import { GROUP_IDLE_EVICT_MS } from '../src/limits.js';
import type { GroupMsg } from '../src/groups/requests.js';
import type { StoredRecord } from '../src/streams/shard.js';
import { GROUP_AUTH, GROUP_SCOPE, groupServiceOver } from './support/group-service.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const auth = GROUP_AUTH;
const conn = {};

/** A shard of `tail` records whose memory holds offsets from `heldFrom`; below it the log is
 *  read, each read waiting for `release()`. */
function shard(tail: number, heldFrom: number) {
  const payload = (o: number) => new Uint8Array([o]);
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => {
    release = r;
  });
  const s = {
    store: {},
    appliedNext: tail,
    logBaseOffset: 0,
    visitHeld(from: number, until: number, visit: (o: number, p: Uint8Array, t: number) => void) {
      if (from < heldFrom || from >= until) return false;
      for (let o = from; o < until; o++) visit(o, payload(o), 0);
      return true;
    },
    async readLog(from: number, budget: { maxRecords: number }) {
      await gate;
      const records: StoredRecord[] = [];
      for (let o = from; o < Math.min(tail, from + budget.maxRecords); o++) {
        records.push({ offset: o, payload: payload(o), timestampMicros: 0 });
      }
      return { kind: 'records' as const, records, next: from + records.length };
    },
  };
  return {
    s,
    release: () => {
      release();
      gate = new Promise<void>((r) => {
        release = r;
      });
    },
  };
}

async function service(
  stream: Partial<StreamConfig>,
  src: object,
  maxAttempts = 5,
): Promise<GroupService> {
  const { svc, close } = await groupServiceOver(src, { stream, maxAttempts });
  cleanups.push(close);
  return svc;
}

const scope = GROUP_SCOPE;
let id = 0;
const poll = (): GroupMsg =>
  ({
    type: 'group_poll',
    ...scope,
    max_records: 1,
    wait_ms: 0,
    reclaim: false,
    request_id: ++id,
  }) as GroupMsg;
const ack = (offset: number): GroupMsg =>
  ({ type: 'group_ack_batch', ...scope, offsets: [offset], request_id: ++id }) as GroupMsg;

const offsetsOf = (m: Message) =>
  m.type === 'group_records' ? m.records.map((r) => r.offset) : [];

describe('group requests answered in their turn', () => {
  it('a_held_poll_and_a_periodic_ack_batch_are_answered_in_their_turn_and_an_on_commit_ack_is_not', async () => {
    const periodic = await service({ group_cursor_fsync: 'periodic' }, shard(3, 0).s);
    // The first poll loads the group (an await); from then on the loop is answered in the turn.
    expect(offsetsOf(await periodic.answer(auth, poll(), conn))).toEqual([0]);
    const ackNow = periodic.answer(auth, ack(0), conn);
    expect(ackNow).not.toBeInstanceOf(Promise);
    expect(ackNow).toMatchObject({ type: 'group_acked', stale: [] });
    const pollNow = periodic.answer(auth, poll(), conn);
    expect(pollNow).not.toBeInstanceOf(Promise);
    expect(offsetsOf(pollNow as Message)).toEqual([1]);
    // A refusal stays a rejected promise, made before anything is settled.
    const past = periodic.answer(auth, ack(7), conn);
    await expect(past).rejects.toMatchObject({ reason: 'offset_past_tail' });

    const onCommit = await service({}, shard(3, 0).s);
    expect(offsetsOf(await onCommit.answer(auth, poll(), conn))).toEqual([0]);
    const durable = onCommit.answer(auth, ack(0), conn);
    expect(durable).toBeInstanceOf(Promise); // answered once the cursor is fsynced
    expect(await durable).toMatchObject({ type: 'group_acked', stale: [] });
  });

  it('a_poll_read_while_another_polls_hand_out_awaits_is_answered_after_it_in_hand_out_order', async () => {
    const svc = await service({ group_cursor_fsync: 'periodic' }, shard(4, 0).s, 1);
    // Offset 0 is handed out for 1 ms with one attempt allowed: once lapsed, the next poll's
    // hand-out gives it up and awaits its dead letter's write before taking offset 1.
    const first = { ...poll(), visibility_ms: 1 } as GroupMsg;
    expect(offsetsOf(await svc.answer(auth, first, conn))).toEqual([0]);
    const lapsed = Date.now() + 2;
    while (Date.now() < lapsed) {
      // spins past the 1 ms visibility (no timer: the claim lapses by the clock alone)
    }
    const order: number[][] = [];
    const a = svc.answer(auth, poll(), conn);
    const b = svc.answer(auth, poll(), conn); // read while a's hand-out awaits the dead letter
    expect(b).toBeInstanceOf(Promise);
    await Promise.all([
      Promise.resolve(a).then((m) => order.push(offsetsOf(m))),
      Promise.resolve(b).then((m) => order.push(offsetsOf(m))),
    ]);
    expect(order).toEqual([[1], [2]]);
  });

  it('a_group_with_a_long_poll_waiting_is_not_evicted_and_hands_a_record_out_once', async () => {
    const src = shard(0, 0);
    const svc = await service({}, src.s);
    const waiting = svc.answer(auth, { ...poll(), wait_ms: 20_000 } as GroupMsg, conn);
    const key = JSON.stringify(['t1', 'default', 'jobs', 0, 'g']);
    const held = () =>
      (
        svc as unknown as { registry: { held(s: { key: string }): GroupState | undefined } }
      ).registry.held({ key });
    const waiters = (svc as unknown as { waiters: { size: number } }).waiters;
    await waitFor(() => waiters.size > 0, 'the poll to wait on its group', 5_000);
    // The idle sweep runs while the poll waits (as with `wait_recheck_ms` as long as the
    // eviction age): a state a poll waits on is in use.
    svc.evictIdle(Date.now() + GROUP_IDLE_EVICT_MS + 1_000);
    src.s.appliedNext = 1;
    svc.wake(src.s as never);
    const other = await svc.answer(auth, poll(), {});
    const handed = [...offsetsOf(await waiting), ...offsetsOf(other)];
    // Before, the woken poll handed 0 out from the evicted state and the other poll from the
    // state loaded again: one record held by two consumers at once.
    expect(handed).toEqual([0]);
    expect(held()?.parked).toBe(0);
  });
});
