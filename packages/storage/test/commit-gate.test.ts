// Goal: a projection with a commit gate (a replicated quorum cache or counter shard) applies and
// answers a durable write only once its gate opens: until then readers and watchers see the
// value before it, and later writes wait behind it; a gate that fails abandons the write.
// Method: LogCache and CounterLog over an in-memory log, the gate a promise per `next` offset
// the test resolves by hand (the broker resolves it when the commit mark reaches `next`).
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { CounterLog } from '../src/counter/counter-log.js';
import { bytes, collect, describeChanges, text } from './projection-support/cache-fixture.js';
import { MemoryLog } from './projection-support/memory-log.js';

/** A gate the test opens up to an offset by hand, as a moving commit mark would. */
class HandMark {
  private offset = 0;
  private waiting: Array<{ next: number; open: () => void; fail: (e: Error) => void }> = [];
  gated = true;
  readonly gate = (next: number): Promise<void> | undefined => {
    if (!this.gated || next <= this.offset) return undefined;
    return new Promise((open, fail) => this.waiting.push({ next, open, fail }));
  };
  get count(): number {
    return this.waiting.length;
  }
  advance(offset: number): void {
    this.offset = offset;
    for (const w of this.waiting.filter((x) => x.next <= offset)) w.open();
    this.waiting = this.waiting.filter((x) => x.next > offset);
  }
  fail(err: Error): void {
    for (const w of this.waiting) w.fail(err);
    this.waiting = [];
  }
}

describe('a commit gate', () => {
  it('a_gated_cache_write_is_seen_and_answered_only_once_the_mark_covers_it', async () => {
    const mark = new HandMark();
    const cache = await LogCache.open({
      log: new MemoryLog(),
      compaction: { auto: false },
      commitGate: mark.gate,
    });
    mark.gated = false;
    await cache.put('k', bytes('old'));
    mark.gated = true;
    const watch = collect(cache.watch({ key: 'k' }, { kind: 'live' }));
    let answered = false;
    const put = cache.put('k', bytes('new')).then(() => {
      answered = true;
    });
    const removed = cache.delete('k');
    await waitFor(() => mark.count === 2, 'both writes to wait for the mark');
    expect(text(await cache.get('k'))).toBe('old');
    expect(answered).toBe(false);
    expect(watch.events).toEqual([]);
    mark.advance(2);
    await put;
    // The delete waits for its own record: the mark covers only the put so far.
    expect(text(await cache.get('k'))).toBe('new');
    mark.advance(3);
    expect(text(await removed)).toBe('new');
    expect(await cache.get('k')).toBeUndefined();
    await waitFor(() => watch.events.length === 2, 'both changes to reach the watcher');
    expect(describeChanges(watch.events)).toEqual(['k=new@1', 'k-@2']);
    await cache.close();
  });

  it('a_gated_counter_delta_is_summed_and_answered_only_once_the_mark_covers_it', async () => {
    const mark = new HandMark();
    const counters = await CounterLog.open({
      log: new MemoryLog(),
      compaction: { auto: false, bytesPerSec: 0 },
      commitGate: mark.gate,
    });
    const added = counters.add('n', 5n);
    await waitFor(() => mark.count === 1, 'the delta to wait for the mark');
    expect(await counters.get('n')).toBeUndefined();
    mark.advance(1);
    expect(await added).toBe(5n);
    expect(await counters.get('n')).toBe(5n);
    // A gate that fails (the shard stopped being served) fails the write; it is not applied
    // (the projection closes next: what its log holds is replayed by the next leader).
    const lost = counters.add('n', 1n).catch((err: Error) => err.message);
    await waitFor(() => mark.count === 1, 'the second delta to wait');
    expect(await counters.get('n')).toBe(5n);
    mark.fail(new Error('abandoned'));
    expect(await lost).toBe('abandoned');
    await counters.close();
  });
});
