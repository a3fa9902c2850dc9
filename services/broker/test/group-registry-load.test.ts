// Goal: a group loaded from its durable halves (after a restart or an idle eviction) holds every
// dead letter the store keeps, however many: one given up on above the cursor stays finished,
// one redriven is owed again. Method: the group registry over real cursor and dead-letter stores
// in a temp dir, reopened on the same directory as a restarted broker would.
import { tempDir } from '@felix/testing-harness';
import { DEAD_LETTER_LIST_MAX } from '@felix/storage';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import type { StreamConfig } from '../src/config/types.js';
import type { RecordSource } from '../src/groups/record-source.js';
import { describe as describeGroup, listDeadLetters } from '../src/groups/admin.js';
import type { GroupCore } from '../src/groups/core.js';
import { GroupRegistry } from '../src/groups/registry.js';
import type { Scope } from '../src/groups/requests.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const metrics = {
  groupsInMemory: { set: () => undefined },
  groupRecordsSkipped: { inc: () => undefined },
} as unknown as ProjectionMetrics;
const defaults = { cursor_fsync: 'onCommit' as const, cursor_fsync_interval_ms: 250 };
const id = { tenant: 't1', namespace: 'default', stream: 'jobs', shard: 0 };

function scopeAt(tail: number): Scope {
  return {
    source: { appliedNext: tail, logBaseOffset: 0 } as unknown as RecordSource,
    id,
    group: 'workers',
    key: JSON.stringify(['t1', 'default', 'jobs', 0, 'workers']),
    stream: { name: 'jobs' } as StreamConfig,
  };
}

describe('group registry load', () => {
  it('a_restarted_group_keeps_every_dead_letter_and_redrive_past_the_first_thousand', async () => {
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const first = new GroupRegistry(dir.path, metrics, defaults);
    const old = DEAD_LETTER_LIST_MAX + 500; // more than one list call answers, all below the cursor
    await Promise.all(
      [...Array(old).keys()].map((o) => first.deadLetters.record(id, 'workers', o)),
    );
    const cursor = old + 100;
    await first.cursors.commit(id, 'workers', cursor);
    // Redriven and not yet finished: owed again after the restart.
    await first.deadLetters.record(id, 'workers', cursor - 50);
    expect(await first.deadLetters.redrive(id, 'workers', cursor - 50)).toBe(true);
    // Given up on above a record still unfinished (the cursor's): never handed out again.
    await first.deadLetters.record(id, 'workers', cursor + 1);
    await first.close();

    const again = new GroupRegistry(dir.path, metrics, defaults);
    cleanups.push(() => again.close());
    const st = await again.state(scopeAt(cursor + 10));
    expect(st.position).toBe(cursor);
    expect([...st.redriven]).toEqual([cursor - 50]);
    expect(st.owedInOrder()).toEqual([cursor - 50]);
    expect(st.done.has(cursor + 1)).toBe(true);
    // Described, the group counts every dead letter it holds, not one list page.
    const core = { registry: again } as unknown as GroupCore;
    const info = await describeGroup(core, scopeAt(cursor + 10), {
      type: 'group_describe',
    } as never);
    expect(info).toMatchObject({ type: 'group_info', dead_letters: old + 1 });
  });

  it('a_dead_letter_list_is_not_emptied_by_a_thousand_redriven_entries_below_it', async () => {
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const registry = new GroupRegistry(dir.path, metrics, defaults);
    cleanups.push(() => registry.close());
    // Redrive all, a page at a time: the first thousand are redriven and not yet finished
    // (their records are still owed), so they stay in the store as redriven entries.
    const total = DEAD_LETTER_LIST_MAX + 500;
    await Promise.all(
      [...Array(total).keys()].map((o) => registry.deadLetters.record(id, 'workers', o)),
    );
    for (let o = 0; o < DEAD_LETTER_LIST_MAX; o++) {
      expect(await registry.deadLetters.redrive(id, 'workers', o)).toBe(true);
    }
    const core = { registry } as unknown as GroupCore;
    const answer = await listDeadLetters(core, scopeAt(total), {
      type: 'group_dead_letters',
      request_id: 1,
    } as never);
    // The 500 still dead are listed; before, the page held only the redriven entries and the
    // list answered empty, so a redrive-all loop stopped with 500 dead letters left.
    const offsets = (answer as { offsets: number[] }).offsets;
    expect(offsets.length).toBe(500);
    expect(offsets[0]).toBe(DEAD_LETTER_LIST_MAX);
    expect(offsets.at(-1)).toBe(total - 1);
  });
});
