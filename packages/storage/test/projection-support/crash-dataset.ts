// The fixed writes a compaction crash child makes, and the state they must leave, shared by the
// child and the test so both agree without talking.
export const CACHE_KEYS = 300;
export const CACHE_WRITES = 1500;

export type CacheWrite = { op: 'put'; key: string; value: string } | { op: 'delete'; key: string };

export function cacheWrites(): CacheWrite[] {
  const out: CacheWrite[] = [];
  for (let i = 0; i < CACHE_WRITES; i++) {
    if (i % 7 === 3) out.push({ op: 'delete', key: `k${(i * 13) % CACHE_KEYS}` });
    else out.push({ op: 'put', key: `k${i % CACHE_KEYS}`, value: `v${i}` });
  }
  return out;
}

export function cacheState(): Map<string, string> {
  const m = new Map<string, string>();
  for (const w of cacheWrites()) {
    if (w.op === 'put') m.set(w.key, w.value);
    else m.delete(w.key);
  }
  return m;
}

export const COUNTER_KEYS = 200;
export const COUNTER_ADDS = 2000;

export function counterAdds(): { key: string; delta: bigint }[] {
  const out: { key: string; delta: bigint }[] = [];
  for (let i = 0; i < COUNTER_ADDS; i++) {
    out.push({
      key: `c${(i * 7) % COUNTER_KEYS}`,
      delta: BigInt(i % 2 === 0 ? i : -i) * 1_000_003n,
    });
  }
  return out;
}

export function counterSums(): Map<string, bigint> {
  const m = new Map<string, bigint>();
  for (const a of counterAdds()) m.set(a.key, (m.get(a.key) ?? 0n) + a.delta);
  return m;
}
