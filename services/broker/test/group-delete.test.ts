// Goal: a group_delete removes every dead letter of its group, however many, with one append and
// one sync of the dead-letter log per page of them (GROUP_DELETE_DEAD_LETTERS_PER_WRITE_MAX), not
// one each; and a delete cut off part-way leaves a state a restart reads: the dead letters not
// yet removed stay listed, the group still exists, and the client's retry removes the rest; a
// dead letter whose write lands after the delete's sweep does not outlive the group.
// Method: the group service's delete over a group registry on real cursor and dead-letter stores
// in a temp dir, through a FaultyIo that counts the dead-letter log's syncs (and fails one of its
// writes), the log's appends counted at its `stage`; restarts reopen the directory.
import { sep } from 'node:path';
import { FaultyIo, nodeIo } from '@felix/storage';
import { tempDir, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamConfig } from '../src/config/types.js';
import { describe as describeGroup, remove } from '../src/groups/admin.js';
import type { GroupCore } from '../src/groups/core.js';
import { giveUp } from '../src/groups/settles.js';
import type { RecordSource } from '../src/groups/record-source.js';
import { GroupRegistry } from '../src/groups/registry.js';
import type { Scope } from '../src/groups/requests.js';
import { PollWaiters } from '../src/groups/waiters.js';
import { quietMetrics } from './support/group-service.js';
import { GROUP_DELETE_DEAD_LETTERS_PER_WRITE_MAX as PER_WRITE } from '../src/limits.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const metrics = quietMetrics;
const defaults = { cursor_fsync: 'onCommit' as const, cursor_fsync_interval_ms: 250 };
const id = { tenant: 't1', namespace: 'default', stream: 'jobs', shard: 0 };
const wire = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 0, group: 'workers' };
/** Two and a half pages of dead letters: the last page a short one. */
const DEAD = 2 * PER_WRITE + PER_WRITE / 2;
const scope: Scope = {
  source: { appliedNext: DEAD + 10, logBaseOffset: 0 } as unknown as RecordSource,
  id,
  group: 'workers',
  key: JSON.stringify(['t1', 'default', 'jobs', 0, 'workers']),
  stream: { name: 'jobs' } as StreamConfig,
};
const deadLetterLog = (p: string) => p.includes(`${sep}dead-letters${sep}`) && p.endsWith('.log');

function open(dir: string, io: FaultyIo = new FaultyIo(nodeIo)) {
  io.countSyncsOf(deadLetterLog);
  const registry = new GroupRegistry(dir, metrics, defaults, io);
  cleanups.push(() => registry.close());
  const core = {
    groups: { max_visibility_ms: 60_000, max_attempts: 5 },
    metrics,
    registry,
    waiters: new PollWaiters(),
  } as unknown as GroupCore;
  const del = () =>
    withDeadline(
      remove(core, scope, { type: 'group_delete', ...wire, request_id: 1 } as never),
      30_000,
      'the delete',
    );
  const info = () =>
    describeGroup(core, scope, { type: 'group_describe', ...wire, request_id: 2 } as never).then(
      (m) => m as unknown as { dead_letters: number },
      (e: { reason?: string }) => e.reason ?? String(e),
    );
  return { registry, io, core, del, info };
}

/** A group at DEAD with DEAD dead letters below it, three of them redriven. */
async function groupWithDeadLetters(registry: GroupRegistry): Promise<void> {
  // Recorded together: they share the log's syncs.
  await Promise.all(
    [...Array(DEAD).keys()].map((o) => registry.deadLetters.record(id, 'workers', o)),
  );
  for (const o of [5, PER_WRITE + 5, DEAD - 1])
    expect(await registry.deadLetters.redrive(id, 'workers', o)).toBe(true);
  await registry.cursors.commit(id, 'workers', DEAD);
}

/** Counts the appends made to the dead-letter log of the test shard (each `stage` is one). */
async function countAppends(registry: GroupRegistry): Promise<{ count: number }> {
  const log = await registry.shardLog('deadLetters', id);
  const stage = log.stage.bind(log);
  const counted = { count: 0 };
  log.stage = (...args: Parameters<typeof stage>) => {
    counted.count++;
    return stage(...args);
  };
  return counted;
}

async function everyDeadLetter(registry: GroupRegistry): Promise<number[]> {
  const out: number[] = [];
  await registry.deadLetters.each(id, 'workers', (d) => {
    out.push(d.offset);
  });
  return out;
}

describe('group delete', () => {
  it('a_group_with_dead_letters_past_one_page_is_deleted_completely_with_one_write_per_page', async () => {
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const { registry, io, del, info } = open(dir.path);
    await groupWithDeadLetters(registry);
    expect(await info()).toMatchObject({ dead_letters: DEAD - 3 });
    const appends = await countAppends(registry);
    const syncsBefore = io.datasyncs;
    expect(await del()).toMatchObject({ existed: true });
    const pages = Math.ceil(DEAD / PER_WRITE);
    // Before, 2,500 appends and 2,500 syncs: one per dead letter, each awaited in turn.
    expect(appends.count).toBe(pages);
    expect(io.datasyncs - syncsBefore).toBeLessThanOrEqual(pages);
    expect(await everyDeadLetter(registry)).toEqual([]);
    expect(await info()).toBe('unknown_group');
    // The batches are the records single removals write: a restart replays them to nothing.
    await registry.close();
    const again = open(dir.path);
    expect(await everyDeadLetter(again.registry)).toEqual([]);
    expect(await again.registry.cursors.position(id, 'workers')).toBeUndefined();
    expect(await again.info()).toBe('unknown_group');
  });

  it('a_group_delete_cut_off_part_way_leaves_the_rest_listed_and_its_retry_removes_them', async () => {
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const first = open(dir.path);
    await groupWithDeadLetters(first.registry);
    // The second page's write fails half-written (a torn write the log cuts back off).
    const removeLowest = first.registry.deadLetters.removeLowest.bind(first.registry.deadLetters);
    let calls = 0;
    first.registry.deadLetters.removeLowest = (...args: Parameters<typeof removeLowest>) => {
      if (++calls === 2) first.io.failWrites('EIO', { partialBytes: 100, match: deadLetterLog });
      return removeLowest(...args);
    };
    await expect(first.del()).rejects.toThrow(/no offsets were consumed/);
    // The first page went, the rest stayed: the group still exists, its dead letters listed.
    const rest = [...Array(DEAD).keys()].slice(PER_WRITE);
    expect(await everyDeadLetter(first.registry)).toEqual(rest);
    expect(await first.info()).toMatchObject({ dead_letters: rest.length - 2 });
    await first.registry.close();
    // A restart reads the same; the client's retry removes the rest and the group is gone.
    const again = open(dir.path);
    expect(await everyDeadLetter(again.registry)).toEqual(rest);
    expect(await again.registry.cursors.position(id, 'workers')).toBeUndefined();
    expect(await again.del()).toMatchObject({ existed: true });
    expect(await everyDeadLetter(again.registry)).toEqual([]);
    expect(await again.info()).toBe('unknown_group');
  });

  it('a_dead_letter_recorded_while_its_group_is_deleted_does_not_outlive_the_delete', async () => {
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const { registry, core, del, info } = open(dir.path);
    await registry.cursors.commit(id, 'workers', 3);
    const st = await registry.state(scope);
    // The give-up's dead-letter write is held until the delete has swept the group's dead
    // letters: it lands after them, as a slow write racing a delete does.
    const record = registry.deadLetters.record.bind(registry.deadLetters);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let recording!: () => void;
    const started = new Promise<void>((resolve) => {
      recording = resolve;
    });
    registry.deadLetters.record = async (...args: Parameters<typeof record>) => {
      recording();
      await held;
      return record(...args);
    };
    const givingUp = giveUp(core, scope, st, 4);
    await withDeadline(started, 10_000, 'the give-up to start its write');
    expect(await del()).toMatchObject({ existed: true });
    release();
    await withDeadline(givingUp, 10_000, 'the give-up');
    // Before, the dead letter stayed, listed under a group that no longer exists (and shown to
    // a group made again under its name).
    expect(await everyDeadLetter(registry)).toEqual([]);
    expect(await registry.cursors.position(id, 'workers')).toBeUndefined();
    expect(await info()).toBe('unknown_group');
  });
});
