// Goal: `group_dead_letters` answers pages (FEATURE_HI_GROUP_DEAD_LETTER_PAGES): the dead
// letters strictly above `after`, lowest first, at most `limit` (default and most
// GROUP_DEAD_LETTER_LIST_MAX), with `more` saying whether any remain above the page; redriven
// entries are passed over without shortening a page; a request without the fields is answered
// the first page as before; a limit of 0 or past the bound is refused. Method: the list handler
// over a group registry on real dead-letter stores in a temp dir.
import { tempDir } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import type { StreamConfig } from '../src/config/types.js';
import { listDeadLetters } from '../src/groups/admin.js';
import type { GroupCore } from '../src/groups/core.js';
import { GroupRegistry } from '../src/groups/registry.js';
import type { Scope } from '../src/groups/requests.js';
import { GROUP_DEAD_LETTER_LIST_MAX } from '../src/limits.js';

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
    source: { appliedNext: tail, logBaseOffset: 0 } as unknown as Scope['source'],
    id,
    group: 'workers',
    key: JSON.stringify(['t1', 'default', 'jobs', 0, 'workers']),
    stream: { name: 'jobs' } as StreamConfig,
  };
}

/** A registry holding dead letters at `offsets` (the group exists through them). */
async function registryWith(offsets: number[]) {
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  const registry = new GroupRegistry(dir.path, metrics, defaults);
  cleanups.push(() => registry.close());
  await Promise.all(offsets.map((o) => registry.deadLetters.record(id, 'workers', o)));
  const core = { registry } as unknown as GroupCore;
  let requestId = 0;
  const list = async (page: { after?: number; limit?: number } = {}) =>
    (await listDeadLetters(core, scopeAt(1_000_000), {
      type: 'group_dead_letters',
      ...id,
      tenant_id: 't1',
      group: 'workers',
      request_id: ++requestId,
      ...page,
    } as never)) as Extract<Message, { type: 'group_dead_letter_list' }>;
  return { registry, list };
}

describe('dead-letter pages', () => {
  it('a_dead_letter_page_lists_above_after_at_most_limit_and_says_whether_more_remain', async () => {
    // Every third offset, 2,500 of them: offsets are not dense, and `after` need not be one.
    const dead = [...Array(2_500).keys()].map((i) => i * 3);
    const { registry, list } = await registryWith(dead);
    // No fields: the first GROUP_DEAD_LETTER_LIST_MAX, as an older client has always had.
    const first = await list();
    expect(first.offsets).toEqual(dead.slice(0, GROUP_DEAD_LETTER_LIST_MAX));
    expect(first.more).toBe(true);
    // Walked by `after`, pages of 700: every offset exactly once, in order, the last says no more.
    const walked: number[] = [];
    const pages: Array<{ length: number; more: boolean }> = [];
    let after: number | undefined;
    for (;;) {
      const page = await list({ limit: 700, ...(after !== undefined ? { after } : {}) });
      walked.push(...page.offsets);
      pages.push({ length: page.offsets.length, more: page.more });
      if (!page.more) break;
      after = page.offsets.at(-1);
    }
    expect(walked).toEqual(dead);
    expect(pages).toEqual([
      { length: 700, more: true },
      { length: 700, more: true },
      { length: 700, more: true },
      { length: 400, more: false },
    ]);
    // `after` between offsets and past the last; a full last page says no more.
    expect((await list({ after: 4, limit: 2 })).offsets).toEqual([6, 9]);
    expect(await list({ after: dead.at(-1)! })).toMatchObject({ offsets: [], more: false });
    expect(await list({ after: dead.at(-3)!, limit: 2 })).toMatchObject({
      offsets: dead.slice(-2),
      more: false,
    });
    // Redriven entries stay stored but are not dead: passed over, the page filled from above.
    for (const o of dead.slice(1, 5)) await registry.deadLetters.redrive(id, 'workers', o);
    expect(await list({ limit: 3 })).toMatchObject({ offsets: [0, 15, 18], more: true });
  });

  it('a_dead_letter_page_with_a_limit_of_zero_or_past_the_bound_is_refused', async () => {
    const { list } = await registryWith([1, 2]);
    for (const limit of [0, GROUP_DEAD_LETTER_LIST_MAX + 1]) {
      await expect(list({ limit })).rejects.toMatchObject({
        wireCode: 'invalid_request',
        reason: 'bad_dead_letter_page',
      });
    }
    expect(await list({ limit: GROUP_DEAD_LETTER_LIST_MAX })).toMatchObject({
      offsets: [1, 2],
      more: false,
    });
  });
});
