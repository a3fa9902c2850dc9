// Goal: cache watches served by the broker, as the client sees them: a watch sees cache changes
// only (not counter adds), resumes gaplessly by offset (also across a broker restart), is
// released when the client closes it, a retained watch yields current values then
// state_complete then changes, and a lagging watch ends with the first offset it missed.
// Method: one shared durable felix-broker process per transport (watch queues of 8 changes)
// driven through @felix/client, and a fresh broker (TLS) for the restart. A watch is known to
// be registered once the broker's opened-watches counter has grown.
import type { CacheWatchEvent, FelixClient } from '@felix/client';
import { take, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrokerProcess,
  type BrokerSpec,
  brokerMetric as metric,
  startBroker,
} from '../src/index.js';
import {
  PROJECTIONS_YAML as YAML,
  TRANSPORTS,
  WATCHES,
  client,
  openWatch,
  startProjectionsBroker,
  text,
} from './support.js';

for (const transport of TRANSPORTS) {
  describe(`broker cache watches over ${transport}`, () => {
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

    it('a_cache_watch_does_not_see_counter_changes', async () => {
      const alerts = felix.cache('alerts');
      const watch = alerts.watch({ prefix: 'cw-' })[Symbol.asyncIterator]();
      // The watch is registered once the broker counts it.
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = watch.next();
      });
      await felix.counter('alerts').add('cw-1', 7n);
      await felix.counter('alerts').add('cw-2', 7n);
      await alerts.put('cw-marker', 'm');
      const ev = (await first).value as CacheWatchEvent;
      // The first change the watch sees is the put: the counter adds before it never reach it.
      expect(ev).toMatchObject({ type: 'put', key: 'cw-marker' });
      await watch.return?.();
    });

    it('a_broker_watch_resumes_gaplessly_by_offset', async () => {
      const alerts = felix.cache('alerts');
      const ac = new AbortController();
      const w1 = alerts.watch({ prefix: 'gap-' }, { signal: ac.signal })[Symbol.asyncIterator]();
      let firstEv!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        firstEv = w1.next();
      });
      for (let i = 0; i < 5; i++) await alerts.put(`gap-${i}`, `v${i}`);
      const part = [(await firstEv).value as CacheWatchEvent, ...(await take(w1, 2))];
      ac.abort();
      const last = part[part.length - 1] as { offset: number };
      // Writes made while nobody watched, then a resume from the offset after the last one seen.
      for (let i = 5; i < 8; i++) await alerts.put(`gap-${i}`, `v${i}`);
      await alerts.delete('gap-0');
      const w2 = alerts
        .watch({ prefix: 'gap-' }, { fromOffset: last.offset + 1 })
        [Symbol.asyncIterator]();
      const rest = await take(w2, 6);
      await w2.return?.();
      const keys = [...part, ...rest].map((e) => `${e.type}:${(e as { key: string }).key}`);
      expect(keys).toEqual([
        ...Array.from({ length: 8 }, (_, i) => `put:gap-${i}`),
        'delete:gap-0',
      ]);
      const offsets = [...part, ...rest].map((e) => (e as { offset: number }).offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      expect(new Set(offsets).size).toBe(offsets.length);
    });

    it('a_watch_the_client_closes_is_released_by_the_broker', async () => {
      const alerts = felix.cache('alerts');
      const open = await metric(shared, WATCHES);
      const it = alerts.watch({ prefix: 'released-' })[Symbol.asyncIterator]();
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = it.next();
      });
      await alerts.put('released-a', 'x');
      expect((await first).value).toMatchObject({ type: 'put', key: 'released-a' });
      await it.return?.();
      // Nothing written matches the prefix any more: the broker must see the close itself.
      await waitFor(async () => (await metric(shared, WATCHES)) <= open, 'the watch released');
    });

    it('a_retained_watch_on_an_empty_key_reports_zero_retained', async () => {
      const it = felix
        .cache('users')
        .watch({ key: 'nobody-here' }, { retained: true })
        [Symbol.asyncIterator]();
      const first = (await it.next()).value as CacheWatchEvent;
      expect(first).toMatchObject({ type: 'state_complete', retainedCount: 0 });
      await it.return?.();
    });

    it('a_retained_watch_yields_current_values_then_state_complete_then_changes', async () => {
      const users = felix.cache('users');
      await users.put('ret-a', '1');
      await users.put('ret-b', '2');
      await users.put('ret-b', '3');
      await users.put('ret-c', 'gone');
      await users.delete('ret-c');
      const it = users.watch({ prefix: 'ret-' }, { retained: true })[Symbol.asyncIterator]();
      const head = await take(it, 3);
      expect(
        head.map((e) => [
          e.type,
          (e as { key?: string }).key,
          text((e as { value?: Uint8Array }).value),
        ]),
      ).toEqual([
        ['put', 'ret-a', '1'],
        ['put', 'ret-b', '3'],
        ['state_complete', undefined, undefined],
      ]);
      expect(head[2]).toMatchObject({ retainedCount: 2 });
      await users.put('ret-d', '4');
      expect((await it.next()).value).toMatchObject({ type: 'put', key: 'ret-d' });
      await it.return?.();
    });

    it('a_prefix_watch_on_a_standalone_brokers_multi_shard_cache_spans_every_shard', async () => {
      // `sharded` has 4 shards; a standalone broker leads them all, so a prefix watch naming no
      // shard runs one watch per shard on it, merged (it was refused watch_shard before).
      const sharded = felix.cache('sharded');
      const keys = Array.from({ length: 16 }, (_, i) => `span-${i}`);
      for (const k of keys) await sharded.put(k, `old-${k}`);
      const it = sharded.watch({ prefix: 'span-' }, { retained: true })[Symbol.asyncIterator]();
      const retained: CacheWatchEvent[] = [];
      for (;;) {
        const ev = (await withDeadline(it.next(), 10_000, 'the retained span')).value;
        if (ev.type === 'state_complete') {
          expect(ev).toMatchObject({ retainedCount: keys.length });
          break;
        }
        retained.push(ev);
      }
      expect(retained.map((e) => (e as { key: string }).key).sort()).toEqual([...keys].sort());
      const shards = new Set(retained.map((e) => (e as { shard?: number }).shard));
      expect(shards.size).toBeGreaterThan(1);
      for (const k of keys) await sharded.put(k, `new-${k}`);
      const live = await take(it, keys.length);
      expect(live.map((e) => `${e.type}:${(e as { key: string }).key}`).sort()).toEqual(
        keys.map((k) => `put:${k}`).sort(),
      );
      await it.return?.();
    });

    it('a_watch_resumed_below_compacted_history_starts_over_from_current_state', async () => {
      const history = felix.cache('history');
      const ac = new AbortController();
      const w1 = history.watch({ prefix: 'rs-' }, { signal: ac.signal })[Symbol.asyncIterator]();
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = w1.next();
      });
      await history.put('rs-kept', 'a');
      await history.put('rs-gone', 'b');
      const seen = [(await first).value, (await w1.next()).value] as { offset: number }[];
      ac.abort();
      // While the watcher is away its key is deleted and 20 MiB of overwrites make the cache
      // compact, trimming the history the delete was in (cache segments are 16 MiB).
      await history.delete('rs-gone');
      const big = new Uint8Array(512 * 1024).fill(7);
      for (let i = 0; i < 40; i++) await history.put('filler', big);
      const resumeFrom = seen[1]!.offset + 1;
      let events: CacheWatchEvent[] = [];
      await waitFor(async () => {
        const w = history.watch({ prefix: 'rs-' }, { fromOffset: resumeFrom });
        const it = w[Symbol.asyncIterator]();
        events = await take(it, 1);
        // Before the pass trims, the replay's first event is the delete itself.
        if (events[0]?.type === 'resnapshot') events.push(...(await take(it, 2)));
        await it.return?.();
        return events[0]?.type === 'resnapshot';
      }, 'history to be compacted away');
      // The watcher is told to drop what it holds, then gets the current state.
      expect(events.map((e) => [e.type, (e as { key?: string }).key])).toEqual([
        ['resnapshot', undefined],
        ['put', 'rs-kept'],
        ['state_complete', undefined],
      ]);
      expect(events[2]).toMatchObject({ retainedCount: 1 });
    });

    it('a_lagging_watch_is_ended_with_the_first_missed_offset', async () => {
      const alerts = felix.cache('alerts');
      const it = alerts.watch({ prefix: 'lag-' })[Symbol.asyncIterator]();
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = it.next();
      });
      // Large values fill the transport while the watcher reads nothing, so the broker's writer
      // stalls and the watcher's queue (8 changes) overflows: far more is written than fits.
      const big = new Uint8Array(256 * 1024).fill(1);
      for (let i = 0; i < 80; i++) await alerts.put(`lag-${i}`, big);
      const events: CacheWatchEvent[] = [(await first).value as CacheWatchEvent];
      while (events[events.length - 1]!.type !== 'lagged') events.push((await it.next()).value);
      const lagged = events.pop() as { type: 'lagged'; resumeFrom: number };
      const lastSeen = events[events.length - 1] as { offset: number };
      // Every write matched the prefix, so the first missed offset follows the last one delivered.
      expect(lagged.resumeFrom).toBe(lastSeen.offset + 1);
      // And the watch carries on from there without a gap.
      const after = (await it.next()).value as { type: string; offset: number };
      expect(after.offset).toBe(lagged.resumeFrom);
      await it.return?.();
    });
  });
}

describe('broker cache watches across restarts', () => {
  it('a_watch_resumes_by_offset_after_the_broker_restarts', async () => {
    const dir = await tempDir();
    const spec: BrokerSpec = { yaml: YAML, dir: dir.path, durable: true };
    let broker = await startBroker(spec);
    const f = await client(broker);
    try {
      const alerts = f.cache('alerts');
      const it = alerts.watch({ prefix: 'rs-' })[Symbol.asyncIterator]();
      const first = it.next();
      await waitFor(async () => (await metric(broker, WATCHES)) >= 1, 'a watch');
      for (let i = 0; i < 3; i++) await alerts.put(`rs-${i}`, `v${i}`);
      const before = [(await first).value as CacheWatchEvent, ...(await take(it, 2))];
      await broker.kill();
      broker = await startBroker({ ...spec, port: broker.port, httpPort: broker.httpPort });
      // The client reconnects on its own; these writes land while the watch is away or back.
      await alerts.put('rs-3', 'v3');
      await alerts.delete('rs-0');
      const after = await take(it, 3);
      await it.return?.();
      expect(after[0]).toMatchObject({
        type: 'resumed',
        resumeFrom: (before[2] as { offset: number }).offset + 1,
      });
      const seen = [...before, ...after.slice(1)].map(
        (e) => `${e.type}:${(e as { key: string }).key}`,
      );
      expect(seen).toEqual(['put:rs-0', 'put:rs-1', 'put:rs-2', 'put:rs-3', 'delete:rs-0']);
    } finally {
      await f.close();
      await broker.stop();
      await dir.cleanup();
    }
  });

  /** Events of `it` until `done` says stop, each within a deadline. */
  async function until(
    it: AsyncIterator<CacheWatchEvent>,
    done: (seen: CacheWatchEvent[]) => boolean,
  ): Promise<CacheWatchEvent[]> {
    const seen: CacheWatchEvent[] = [];
    while (!done(seen)) {
      const n = await withDeadline(it.next(), 20_000, `events after ${JSON.stringify(seen)}`);
      if (n.done) break;
      seen.push(n.value);
    }
    return seen;
  }
  const keyed = (e: CacheWatchEvent) => `${e.type}:${(e as { key?: string }).key ?? ''}`;

  it('a_live_watch_that_has_seen_nothing_yet_misses_no_change_across_a_restart', async () => {
    // Before, a live watch with nothing delivered re-watched live from the new frontier, and a
    // change made while it was away was never delivered.
    const dir = await tempDir();
    const spec: BrokerSpec = { yaml: YAML, dir: dir.path, durable: true };
    let broker = await startBroker(spec);
    // Slow to reconnect, so the write below lands while the watch is away.
    const watcher = await client(broker, 'tls', {
      reconnect: { baseMs: 3_000, maxDelayMs: 3_000 },
    });
    const it = watcher.cache('alerts').watch({ prefix: 'lw-' })[Symbol.asyncIterator]();
    const first = it.next();
    try {
      await waitFor(async () => (await metric(broker, WATCHES)) >= 1, 'a watch');
      await broker.kill();
      broker = await startBroker({ ...spec, port: broker.port, httpPort: broker.httpPort });
      const writer = await client(broker);
      await writer.cache('alerts').put('lw-during', 'x');
      await writer.close();
      const seen = [(await first).value as CacheWatchEvent];
      seen.push(...(await until(it, (s) => s.some((e) => e.type === 'put'))));
      expect(seen.map(keyed)).toEqual(['resumed:', 'put:lw-during']);
    } finally {
      await it.return?.();
      await watcher.close();
      await broker.stop();
      await dir.cleanup();
    }
  });

  it('a_retained_watch_cut_short_starts_over_with_a_resnapshot', async () => {
    // Before, the retained phase began again silently: a key deleted while the watch was away
    // stayed in the state the caller had folded from the first, interrupted phase.
    const dir = await tempDir();
    const spec: BrokerSpec = { yaml: YAML, dir: dir.path, durable: true };
    let broker = await startBroker(spec);
    const setup = await client(broker);
    for (const k of ['rw-a', 'rw-b', 'rw-c']) await setup.cache('alerts').put(k, k);
    await setup.close();
    const watcher = await client(broker, 'tls', {
      reconnect: { baseMs: 3_000, maxDelayMs: 3_000 },
    });
    const it = watcher
      .cache('alerts')
      .watch({ prefix: 'rw-' }, { retained: true })
      [Symbol.asyncIterator]();
    try {
      const seen = [(await it.next()).value as CacheWatchEvent];
      expect(seen.map(keyed)).toEqual(['put:rw-a']);
      await broker.kill();
      broker = await startBroker({ ...spec, port: broker.port, httpPort: broker.httpPort });
      const writer = await client(broker);
      await writer.cache('alerts').delete('rw-a');
      await writer.close();
      seen.push(...(await until(it, (s) => s.some((e) => e.type === 'state_complete'))));
      const state = new Set<string>();
      for (const e of seen) {
        if (e.type === 'resnapshot') state.clear();
        if (e.type === 'put') state.add(e.key);
        if (e.type === 'delete') state.delete(e.key);
      }
      expect([...state].sort()).toEqual(['rw-b', 'rw-c']);
      expect(seen.map(keyed)).toEqual([
        'put:rw-a',
        'resnapshot:',
        'put:rw-b',
        'put:rw-c',
        'state_complete:',
      ]);
    } finally {
      await it.return?.();
      await watcher.close();
      await broker.stop();
      await dir.cleanup();
    }
  });
});
