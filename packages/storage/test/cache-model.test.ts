// Goal: LogCache agrees with a plain map under any sequence of puts, deletes, clock moves,
// compactions and restarts. Method: fast-check generates op sequences over a small key space;
// after every op each key's answer is compared with the model (TTL applied to the model too).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { ManualClock, bytes, text } from './projection-support/cache-fixture.js';
import { MemoryLog, MemoryLogStore } from './projection-support/memory-log.js';

type Op =
  | { kind: 'put'; key: string; value: string; ttlMs: number }
  | { kind: 'delete'; key: string }
  | { kind: 'advance'; ms: number }
  | { kind: 'compact' }
  | { kind: 'restart' };

const KEYS = ['a', 'b', 'c', 'd', 'e'];
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('put' as const),
      key: fc.constantFrom(...KEYS),
      value: fc.string({ maxLength: 6 }),
      ttlMs: fc.constantFrom(0, 0, 5, 50),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...KEYS) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 1, max: 30 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

describe('cache model', () => {
  it('a_cache_agrees_with_a_map_under_any_sequence_of_writes_compactions_and_restarts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const store = new MemoryLogStore();
        const clock = new ManualClock();
        const openCache = () =>
          LogCache.open({
            log: new MemoryLog(store),
            now: clock.now,
            compaction: { auto: false, bytesPerSec: 0 },
          });
        let cache = await openCache();
        const model = new Map<string, { value: string; expiresAt: number }>();
        const live = (k: string) => {
          const m = model.get(k);
          return m !== undefined && (m.expiresAt === 0 || m.expiresAt > clock.ms)
            ? m.value
            : undefined;
        };
        let lastOffset = -1;
        for (const o of ops) {
          if (o.kind === 'put') {
            const v = await cache.put(o.key, bytes(o.value), { ttlMs: o.ttlMs });
            expect(v).toBeGreaterThan(lastOffset); // offsets never rewind, compaction included
            lastOffset = v;
            model.set(o.key, { value: o.value, expiresAt: o.ttlMs === 0 ? 0 : clock.ms + o.ttlMs });
          } else if (o.kind === 'delete') {
            expect(text(await cache.delete(o.key))).toBe(live(o.key));
            model.delete(o.key);
          } else if (o.kind === 'advance') {
            clock.advance(o.ms);
          } else if (o.kind === 'compact') {
            await cache.compact();
          } else {
            await cache.close();
            cache = await openCache();
          }
          for (const k of KEYS) expect(text(await cache.get(k))).toBe(live(k));
        }
        await cache.close();
      }),
      { numRuns: 150 },
    );
  });
});
