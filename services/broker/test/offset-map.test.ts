// Goal: a group's offset tables (claims, owed, done) answer exactly as a Map/Set would, and a
// table whose size moves back and forth (records handed out and acked at the drain rate, finished
// offsets gathering above a gap and released at once) is not rebuilt on every swing: a V8 Map
// churned at about 2,100 entries cost ten times as much per record as at 2,000.
import { describe, expect, it } from 'vitest';
import { OffsetMap, OffsetSet } from '../src/groups/offset-map.js';

/** A small deterministic PRNG (xorshift32), so a failure replays. */
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return (n: number) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

describe('group offset tables', () => {
  it('offset_tables_answer_as_a_map_and_a_set_would_under_random_churn', () => {
    for (const seed of [1, 2, 3, 4]) {
      const r = rng(seed);
      const map = new OffsetMap<number>();
      const set = new OffsetSet();
      const modelMap = new Map<number, number>();
      const modelSet = new Set<number>();
      // Keys: a sliding window of consecutive offsets (a drain), keys past 2^32 and 2^53 - 1,
      // and strides that share their low bits (so probe runs collide and wrap).
      const pools = [
        (i: number) => 1_000_000 + (i % 5_000),
        (i: number) => 2 ** 32 + (i % 300) * 2 ** 20,
        (i: number) => Number.MAX_SAFE_INTEGER - (i % 200),
        (i: number) => (i % 400) * 4_096,
      ];
      for (let step = 0; step < 60_000; step++) {
        const key = pools[r(pools.length)]!(r(1_000_000));
        const op = r(10);
        // Compared without expect() per step (60,000 steps); the first difference fails.
        let same = true;
        if (op < 4) {
          map.set(key, step);
          modelMap.set(key, step);
          set.add(key);
          modelSet.add(key);
        } else if (op < 8) {
          same =
            map.delete(key) === modelMap.delete(key) && set.delete(key) === modelSet.delete(key);
        } else {
          same =
            map.get(key) === modelMap.get(key) &&
            map.has(key) === modelMap.has(key) &&
            set.has(key) === modelSet.has(key);
        }
        if (step % 20_000 === 19_999 && seed % 2 === 0) {
          map.clear();
          modelMap.clear();
        }
        same &&= map.size === modelMap.size && set.size === modelSet.size;
        if (!same) expect({ seed, step, op, key }).toBe('the same answer as the Map and the Set');
      }
      // Every key still held is found, and nothing else is listed.
      const sort = (xs: number[]) => [...xs].sort((a, b) => a - b);
      expect(sort(map.keys())).toEqual(sort([...modelMap.keys()]));
      expect([...map].sort((a, b) => a[0] - b[0])).toEqual(
        [...modelMap].sort((a, b) => a[0] - b[0]),
      );
      expect(sort([...set])).toEqual(sort([...modelSet]));
      for (const k of modelMap.keys()) expect(map.get(k)).toBe(modelMap.get(k));
      // Emptied key by key, a table is empty and finds nothing.
      for (const k of set) set.delete(k);
      expect(set.size).toBe(0);
      expect(set.keys()).toEqual([]);
    }
  });

  it('an_offset_table_whose_size_swings_across_a_power_of_two_keeps_its_slots', () => {
    // A drain's claims: 100 handed out per poll, acked 400 at a time, between about 1,900 and
    // 2,200 standing: the size crosses 2,048 on every swing.
    const claims = new OffsetMap<number>();
    let next = 0;
    let acked = 0;
    const slots = new Set<number>();
    while (acked < 200_000) {
      if (next - acked < 2_100) {
        for (let o = next; o < next + 100; o++) claims.set(o, o);
        next += 100;
      } else {
        for (let o = acked; o < acked + 400; o++) claims.delete(o);
        acked += 400;
      }
      if (acked > 10_000) slots.add(claims.slotCount);
    }
    expect([...slots]).toHaveLength(1);
    // It still gives memory back once the records in flight stay far below the peak.
    const peak = claims.slotCount;
    for (let o = acked; o < next; o++) claims.delete(o);
    for (let o = next; o < next + 100_000; o++) {
      claims.set(o, o);
      if (o - next >= 50) claims.delete(o - 50);
    }
    expect(claims.size).toBe(50);
    expect(claims.slotCount).toBeLessThan(peak / 8);
  });

  it('an_offset_set_that_empties_and_refills_keeps_its_slots', () => {
    // Finished offsets above the position: four consumers ack out of order, the set fills while
    // the lowest record is out and empties when it is acked, over and over.
    const done = new OffsetSet();
    const slots = new Set<number>();
    let position = 0;
    for (let cycle = 0; cycle < 200; cycle++) {
      for (let o = position + 1; o < position + 1_000; o++) done.add(o);
      if (cycle > 2) slots.add(done.slotCount);
      position++;
      while (done.delete(position)) position++;
      expect(done.size).toBe(0);
      if (cycle > 2) slots.add(done.slotCount);
    }
    expect([...slots]).toHaveLength(1);
  });
});
