// Goal: the merge of a prefix watch across shards (projections/watch-span.ts): each event names
// its shard, a retained span's one `state_complete` comes after every shard's current values with
// their sum, and ending the span (a `break`, or one shard's watch failing) ends every shard's.
// Method: watchAcross over scripted shard watches (async generators), each of which, once its
// script is out, waits for its signal as a live watch does, and notes when it has ended.
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { CacheWatchEvent } from '../src/projections/watch-events.js';
import { watchAcross } from '../src/projections/watch-span.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const put = (key: string, offset: number): CacheWatchEvent => ({
  type: 'put',
  key,
  value: new Uint8Array(),
  offset,
  expiresAtMillis: 0,
});
const complete = (retainedCount: number, resumeOffset: number): CacheWatchEvent => ({
  type: 'state_complete',
  retainedCount,
  resumeOffset,
});

/** Shard watches playing `scripts[shard]` (then failing with `fails[shard]`, or waiting for the
 *  abort); `ended` collects the shards whose watch has ended. */
function scripted(
  scripts: CacheWatchEvent[][],
  ended: Set<number>,
  fails: Array<Error | undefined> = [],
) {
  return async function* (shard: number, signal: AbortSignal): AsyncGenerator<CacheWatchEvent> {
    try {
      for (const ev of scripts[shard]!) yield ev;
      if (fails[shard] !== undefined) throw fails[shard];
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      ended.add(shard);
    }
  };
}

describe('a prefix watch across shards', () => {
  it('a_watch_across_shards_completes_its_state_once_every_shard_has_and_names_each_events_shard', async () => {
    const ended = new Set<number>();
    const scripts = [
      [put('a0', 0), complete(1, 1), put('live0', 1)],
      [put('a1', 4), put('b1', 5), complete(2, 6), put('live1', 6)],
      [complete(0, 0), { type: 'lagged', resumeFrom: 3 } as const, put('live2', 3)],
    ];
    const seen: CacheWatchEvent[] = [];
    for await (const ev of watchAcross(3, true, undefined, scripted(scripts, ended))) {
      seen.push(ev);
      if (seen.filter((e) => e.type === 'put' && e.key.startsWith('live')).length === 3) break;
    }
    const completes = seen.filter((e) => e.type === 'state_complete');
    expect(completes).toEqual([
      { type: 'state_complete', retainedCount: 3, resumeOffset: -1, resumeOffsets: [1, 6, 0] },
    ]);
    const at = seen.indexOf(completes[0]!);
    const retained = seen.flatMap((e, i) =>
      e.type === 'put' && !e.key.startsWith('live') ? [i] : [],
    );
    expect(retained).toHaveLength(3);
    for (const i of retained) expect(i).toBeLessThan(at);
    for (const e of seen.filter((e) => e.type === 'put'))
      expect(e.shard).toBe(Number((e as { key: string }).key.at(-1)));
    expect(seen.find((e) => e.type === 'lagged')).toEqual({
      type: 'lagged',
      resumeFrom: 3,
      shard: 2,
    });
    // The caller's break ended every shard's watch.
    expect([...ended].sort()).toEqual([0, 1, 2]);
  });

  it('a_watch_across_shards_ends_every_shards_watch_when_one_shards_fails', async () => {
    const ended = new Set<number>();
    const boom = new Error('boom');
    const scripts = [[put('a0', 0)], [put('a1', 0)], [put('a2', 0)]];
    const span = watchAcross(3, false, undefined, scripted(scripts, ended, [undefined, boom]));
    await expect(
      (async () => {
        for await (const _ of span);
      })(),
    ).rejects.toBe(boom);
    expect([...ended].sort()).toEqual([0, 1, 2]);
  });

  it('a_watch_across_shards_holds_no_more_memory_for_a_quiet_shard_however_many_events_a_busy_one_yields', async () => {
    // One shard yields for ever, the other never: the merge must not keep something per event
    // on the quiet shard's pending step (a Promise.race over it each time added a reaction).
    const stop = new AbortController();
    const busy = async function* (shard: number, signal: AbortSignal) {
      if (shard === 1) {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        return;
      }
      for (let i = 0; !signal.aborted; i++) yield put('k', i);
    };
    const heapAt = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const span = watchAcross(2, false, stop.signal, busy);
    let n = 0;
    let before = 0;
    let grown = 0;
    for await (const _ of span) {
      n++;
      if (n === 10_000) before = heapAt();
      if (n === 110_000) {
        grown = heapAt() - before; // measured while the span runs: its quiet shard still waits
        break;
      }
    }
    // 100,000 events more: a reaction each would be tens of MB; a bounded merge holds none.
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  }, 60_000);
});
