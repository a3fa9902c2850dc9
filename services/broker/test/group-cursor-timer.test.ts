// Goal: a `periodic` group's settle is answered without a cursor write, and the cursor is
// written exactly one interval after the first settle it has not written (then durable: the
// store fsyncs each write); an `onCommit` group's settle waits for its write. Method: the group
// registry over a real cursor store in a temp dir, with Node's setTimeout faked so the interval
// passes only when the test moves the clock.
import type { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import { tempDir } from '@felix/testing-harness';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StreamConfig } from '../src/config/types.js';
import { GroupRegistry } from '../src/groups/registry.js';
import type { RecordSource } from '../src/groups/record-source.js';
import type { Scope } from '../src/groups/requests.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length > 0) await cleanups.pop()!();
});

const metrics = {
  groupsInMemory: { set: () => undefined },
  groupRecordsSkipped: { inc: () => undefined },
} as unknown as ProjectionMetrics;

const source = { appliedNext: 100, logBaseOffset: 0 } as unknown as RecordSource;

function scopeOn(stream: Partial<StreamConfig>): Scope {
  const id = { tenant: 't1', namespace: 'default', stream: 'jobs', shard: 0 };
  return {
    source,
    id,
    group: 'workers',
    key: JSON.stringify(['t1', 'default', 'jobs', 0, 'workers']),
    stream: { name: 'jobs', ...stream } as StreamConfig,
  };
}

async function registry(): Promise<GroupRegistry> {
  const dir = await tempDir();
  const reg = new GroupRegistry(dir.path, metrics, {
    cursor_fsync: 'onCommit',
    cursor_fsync_interval_ms: 250,
  });
  cleanups.push(dir.cleanup);
  cleanups.push(() => reg.close());
  return reg;
}

describe('group cursor timer', () => {
  it('a_periodic_cursor_is_written_one_interval_after_the_first_settle_it_has_not_written', async () => {
    const reg = await registry();
    const scope = scopeOn({ group_cursor_fsync: 'periodic', group_cursor_fsync_interval_ms: 1000 });
    const st = await reg.state(scope);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    st.position = 5; // five jobs acknowledged
    expect(reg.commit(scope, st)).toBeUndefined(); // the settle is answered now
    vi.advanceTimersByTime(600);
    st.position = 7; // later settles join the write already owed
    expect(reg.commit(scope, st)).toBeUndefined();
    vi.advanceTimersByTime(399);
    expect(st.commitRun).toBeUndefined();
    expect(await reg.cursors.position(scope.id, scope.group)).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(st.commitRun).toBeDefined(); // one interval after the first: the write has begun
    await st.commitRun;
    expect(st.committed).toBe(7);
    expect(await reg.cursors.position(scope.id, scope.group)).toBe(7);
  });

  it('an_on_commit_settle_waits_for_its_cursor_write', async () => {
    const reg = await registry();
    const scope = scopeOn({});
    const st = await reg.state(scope);
    st.position = 3;
    const written = reg.commit(scope, st);
    expect(written).toBeInstanceOf(Promise);
    await written;
    expect(st.committed).toBe(3);
    expect(await reg.cursors.position(scope.id, scope.group)).toBe(3);
  });
});
