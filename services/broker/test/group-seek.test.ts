// Goal: a seek and a delete hold against the acks that race them. Acks that arrive while the
// seek's cursor write is in flight neither undo it on disk nor hang: they answer (stale: the seek
// voided their claims), and the cursor, the state's committed position and its position are the
// seek's. An ack that arrives while a delete runs, or a load that was under way when it began,
// does not bring the group back. Method: the
// group service's settle, seek and delete over a group registry on real cursor and dead-letter
// stores in a temp dir, the acks sent from inside the store call under way (wrapped) so they
// land in that window every run.
import { tempDir, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import type { StreamConfig } from '../src/config/types.js';
import { remove, seek } from '../src/groups/admin.js';
import type { GroupCore } from '../src/groups/core.js';
import type { RecordSource } from '../src/groups/record-source.js';
import { GroupRegistry } from '../src/groups/registry.js';
import type { Scope } from '../src/groups/requests.js';
import { settle } from '../src/groups/settles.js';
import { PollWaiters } from '../src/groups/waiters.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const metrics = {
  groupsInMemory: { set: () => undefined },
  groupRecordsSkipped: { inc: () => undefined },
} as unknown as ProjectionMetrics;
const id = { tenant: 't1', namespace: 'default', stream: 'jobs', shard: 0 };
const wire = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 0, group: 'workers' };
const scope: Scope = {
  source: { appliedNext: 100, logBaseOffset: 0 } as unknown as RecordSource,
  id,
  group: 'workers',
  key: JSON.stringify(['t1', 'default', 'jobs', 0, 'workers']),
  stream: { name: 'jobs' } as StreamConfig,
};

/** A group at 50 whose consumers hold what was handed out before a restart (below the tail),
 *  and an ack that answers 'ok' or its refusal's reason. */
async function groupAt50() {
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  const registry = new GroupRegistry(dir.path, metrics, {
    cursor_fsync: 'onCommit',
    cursor_fsync_interval_ms: 250,
  });
  cleanups.push(() => registry.close());
  const core = {
    groups: { max_visibility_ms: 60_000, max_attempts: 5 },
    metrics,
    registry,
    waiters: new PollWaiters(),
  } as unknown as GroupCore;
  await registry.cursors.commit(id, 'workers', 50);
  const st = await registry.state(scope);
  const ack = (offset: number) =>
    settle(core, scope, { type: 'group_ack', ...wire, offset, request_id: offset } as never).then(
      () => 'ok',
      (e: { reason?: string }) => e.reason ?? String(e),
    );
  return { registry, core, st, ack };
}

describe('group seek and delete racing acks', () => {
  it('acks_racing_a_seek_backwards_neither_undo_it_on_disk_nor_hang_the_broker', async () => {
    const { registry, st, ack, core } = await groupAt50();
    const storeSeek = registry.cursors.seek.bind(registry.cursors);
    const racing: Array<Promise<string>> = [];
    registry.cursors.seek = (...args: Parameters<typeof storeSeek>) => {
      const written = storeSeek(...args);
      racing.push(ack(51), ack(52)); // while the seek's write is in flight
      return written;
    };
    const first = ack(50);
    const replay = seek(core, scope, {
      type: 'group_seek',
      ...wire,
      start: 'earliest',
      if_new: false,
      request_id: 1,
    } as never);
    expect(await withDeadline(replay, 5_000, 'the seek')).toMatchObject({ offset: 0, moved: true });
    // Before, the ack of 51 wrote 52 after the seek's 0, and the ack of 52 spun without yielding
    // (this deadline never fired: the event loop was starved).
    const answers = await withDeadline(Promise.all([first, ...racing]), 5_000, 'the acks');
    expect(answers[0]).toBe('ok');
    expect(answers.slice(1)).toEqual(['stale_claim', 'stale_claim']);
    expect(await registry.cursors.position(id, 'workers')).toBe(0);
    expect([st.position, st.committed]).toEqual([0, 0]);
  });

  it('an_ack_racing_a_group_delete_does_not_bring_the_group_back_position', () =>
    ackDuringDelete('position'));

  it('an_ack_racing_a_group_delete_does_not_bring_the_group_back_delete', () =>
    ackDuringDelete('delete'));
});

/** A worker of the group acks while the delete reads (`position`) or removes (`delete`) its
 *  cursor: the ack is not_found and the group stays deleted. */
async function ackDuringDelete(during: 'position' | 'delete'): Promise<void> {
  const { registry, core, ack } = await groupAt50();
  const storeCall = registry.cursors[during].bind(registry.cursors) as (
    ...args: unknown[]
  ) => Promise<unknown>;
  const racing: Array<Promise<string>> = [];
  let sent = false;
  (registry.cursors as unknown as Record<string, unknown>)[during] = (...args: unknown[]) => {
    if (!sent) {
      sent = true; // once: the ack reads the cursor too
      racing.push(ack(50));
    }
    return storeCall(...args);
  };
  const deleted = remove(core, scope, { type: 'group_delete', ...wire, request_id: 1 } as never);
  expect(await withDeadline(deleted, 5_000, 'the delete')).toMatchObject({ existed: true });
  // Before, the ack loaded the group again from the cursor not yet deleted, was taken, and
  // wrote 51 after the delete: the group was back at its old position.
  expect(await withDeadline(Promise.all(racing), 5_000, 'the ack')).toEqual(['unknown_group']);
  expect(await registry.cursors.position(id, 'workers')).toBeUndefined();
  expect(registry.held(scope)).toBeUndefined();
}

describe('group delete racing a load', () => {
  it('a_group_loading_when_its_delete_starts_is_not_left_behind_in_memory', async () => {
    const { registry, core, ack } = await groupAt50();
    registry.forget(scope); // idle-evicted, say: the next request loads it from disk
    // A poll or settle begins loading the group, and the delete starts before the load ends.
    const loading = registry.state(scope);
    const deleted = remove(core, scope, { type: 'group_delete', ...wire, request_id: 1 } as never);
    expect(await withDeadline(deleted, 5_000, 'the delete')).toMatchObject({ existed: true });
    await loading;
    // Before, the load finished after the delete and left the group in memory at 50, so a late
    // ack from one of its workers was taken and wrote the cursor back at 51.
    expect(await ack(50)).toBe('unknown_group');
    expect(await registry.cursors.position(id, 'workers')).toBeUndefined();
  });
});
