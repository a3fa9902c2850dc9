// Goal: a seek holds against the acks that race it. Acks that arrive while the seek's cursor
// write is in flight neither undo it on disk nor hang: they answer (stale: the seek voided their
// claims), and the cursor, the state's committed position and its position are the seek's.
// Method: the group service's settle and seek over a group registry on real cursor and
// dead-letter stores in a temp dir, the acks sent from inside the seek's write (the store's
// `seek`, wrapped) so they land in that window every run.
import { tempDir, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import type { StreamConfig } from '../src/config/types.js';
import { seek } from '../src/groups/admin.js';
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

describe('group seek', () => {
  it('acks_racing_a_seek_backwards_neither_undo_it_on_disk_nor_hang_the_broker', async () => {
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
    // A group at 50 whose consumers hold what was handed out before a restart (below the tail).
    await registry.cursors.commit(id, 'workers', 50);
    const st = await registry.state(scope);
    const ack = (offset: number) =>
      settle(core, scope, { type: 'group_ack', ...wire, offset, request_id: offset } as never).then(
        () => 'ok',
        (e: { reason?: string }) => e.reason ?? String(e),
      );
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
});
