// Goal: CounterLog agrees with a map of BigInt sums under any sequence of adds (overflowing ones
// included), compactions and restarts. Method: fast-check op sequences over a few keys, with
// deltas near the i64 edges so refusals happen; every sum is compared after every op.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CounterLog } from '../src/counter/counter-log.js';
import { I64_MAX, I64_MIN } from '../src/counter/record.js';
import { CounterOverflowError } from '../src/errors.js';
import { MemoryLog, MemoryLogStore } from './projection-support/memory-log.js';

type Op = { kind: 'add'; key: string; delta: bigint } | { kind: 'compact' } | { kind: 'restart' };
const KEYS = ['x', 'y', 'z'];
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      key: fc.constantFrom(...KEYS),
      delta: fc.oneof(
        fc.bigInt({ min: -1000n, max: 1000n }),
        fc.constantFrom(I64_MAX, I64_MIN, I64_MAX / 2n),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

describe('counter model', () => {
  it('counters_agree_with_a_map_under_any_sequence_of_adds_compactions_and_restarts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const store = new MemoryLogStore();
        const open = () =>
          CounterLog.open({
            log: new MemoryLog(store),
            compaction: { auto: false, bytesPerSec: 0 },
          });
        let c = await open();
        const model = new Map<string, bigint>();
        for (const o of ops) {
          if (o.kind === 'add') {
            const want = (model.get(o.key) ?? 0n) + o.delta;
            if (want < I64_MIN || want > I64_MAX) {
              await expect(c.add(o.key, o.delta)).rejects.toBeInstanceOf(CounterOverflowError);
            } else {
              expect(await c.add(o.key, o.delta)).toBe(want);
              model.set(o.key, want);
            }
          } else if (o.kind === 'compact') {
            await c.compact();
          } else {
            await c.close();
            c = await open();
          }
          for (const k of KEYS) expect(await c.get(k)).toBe(model.get(k));
        }
        await c.close();
      }),
      { numRuns: 150 },
    );
  });
});
