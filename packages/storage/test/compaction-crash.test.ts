// Goal: a process killed at any point of a compaction pass leaves a log that replays to the same
// cache and the same counter sums. Method: a child process writes a fixed dataset, then compacts
// in a loop; it is SIGKILLed after a random number of pass steps (mid copy, at the trim, or between
// segment deletions), many rounds over one directory; after each kill the state is
// reopened from disk and compared with the dataset's. FELIX_CRASH_SEED=<seed> replays a run.
import { resolve } from 'node:path';
import { type Child, spawnNode } from '@felix/testing-harness';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { text } from './projection-support/cache-fixture.js';
import { cacheState, counterSums } from './projection-support/crash-dataset.js';
import { openDiskCache, openDiskCounters, tempDir } from './projection-support/disk.js';
import { prng } from './helpers.js';

const CHILD = resolve(import.meta.dirname, 'projection-support/compaction-crash-child.ts');
const REPO = resolve(import.meta.dirname, '../../..');
const ROUNDS = 6;
const SEED = Number(process.env.FELIX_CRASH_SEED ?? Date.now() % 1_000_000);

let child: Child | undefined;
let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('felix-compaction-crash-');
});
afterEach(async () => {
  await child?.kill();
  child = undefined;
  await dir.cleanup();
});

/** Runs the child until it has printed `steps` step lines past "written", then SIGKILLs it. */
async function crashAfter(kind: 'cache' | 'counter', steps: number): Promise<void> {
  child = spawnNode(['--import', 'tsx', CHILD, dir.path, kind], { cwd: REPO });
  const c = child;
  await c.waitForOutput('"written"', 'the dataset to be written', 20_000);
  const base = c.jsonLines().length;
  await c.waitForOutput(
    new RegExp(`"step":${base - 1 + steps}\\b`),
    `step ${steps} of compaction`,
    20_000,
  );
  await c.kill();
  child = undefined;
}

describe('compaction crash safety', () => {
  it('a_crash_mid_compaction_replays_to_the_same_cache', async () => {
    const rand = prng(SEED);
    const want = cacheState();
    for (let round = 0; round < ROUNDS; round++) {
      const steps = 1 + Math.floor(rand() * 12);
      await crashAfter('cache', steps);
      const { cache, port } = await openDiskCache(dir.path);
      for (let k = 0; k < 300; k++) {
        expect(text(await cache.get(`k${k}`)), `seed ${SEED} round ${round} key k${k}`).toBe(
          want.get(`k${k}`),
        );
      }
      expect(cache.size).toBe(want.size);
      expect(port.baseOffset, `seed ${SEED}`).toBeGreaterThanOrEqual(0);
      await cache.close();
    }
  });

  it('a_crash_mid_compaction_keeps_every_sum', async () => {
    const rand = prng(SEED + 1);
    const want = counterSums();
    for (let round = 0; round < ROUNDS; round++) {
      const steps = 1 + Math.floor(rand() * 10);
      await crashAfter('counter', steps);
      const { counters } = await openDiskCounters(dir.path);
      for (const [key, sum] of want)
        expect(await counters.get(key), `seed ${SEED} round ${round} ${key}`).toBe(sum);
      expect(counters.size).toBe(want.size);
      await counters.close();
    }
  });
});
