/**
 * Rule 6: each cache key is a register. (a) Its final value is the value of a put that was ok or
 * of unknown outcome and not superseded (an ok put invoked after it completed), or null when no
 * put was ok. (b) A get never returns a value no put wrote, a value written by a failed put, a
 * value put after the get completed, or a value overwritten (another ok put invoked after it
 * completed and completed before the get began). Put values are unique per key.
 */
import type { Findings } from '../findings.js';
import type { CacheFinalLine } from '../history.js';
import { type HistoryIndex, type Op, observed } from '../index-ops.js';
import type { CacheGetInvoke, CacheGetOk, CachePutInvoke } from './types.js';

/** One key's puts, indexed so each get and final value is judged in logarithmic time. */
class KeyPuts {
  readonly byValue = new Map<string, Op>();
  /** Ok puts by invoke time, with the earliest completion among each suffix. */
  private readonly oks: Op[] = [];
  private suffixDone: number[] = [];
  private suffixAt: number[] = [];

  add(op: Op): void {
    this.byValue.set((op.invoke as CachePutInvoke).value, op);
    if (op.outcome === 'ok') this.oks.push(op);
  }

  seal(): void {
    this.oks.sort((a, b) => a.invoke.t - b.invoke.t);
    const n = this.oks.length;
    this.suffixDone = new Array<number>(n);
    this.suffixAt = new Array<number>(n);
    for (let i = n - 1; i >= 0; i--) {
      const done = this.oks[i]?.completion?.t ?? Number.POSITIVE_INFINITY;
      const next = i + 1 < n ? (this.suffixDone[i + 1] as number) : Number.POSITIVE_INFINITY;
      this.suffixDone[i] = Math.min(done, next);
      this.suffixAt[i] = done <= next ? i : (this.suffixAt[i + 1] as number);
    }
  }

  firstOk(): Op | undefined {
    return this.oks[0];
  }

  /** Position of the first ok put invoked strictly after `t`. */
  private after(t: number): number {
    let lo = 0;
    let hi = this.oks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.oks[mid] as Op).invoke.t > t) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** An ok put invoked after `t` (it supersedes an ok put completed at `t`). */
  invokedAfter(t: number): Op | undefined {
    return this.oks[this.after(t)];
  }

  /** An ok put invoked after `from` that completed before `to`. */
  overwroteBetween(from: number, to: number): Op | undefined {
    const i = this.after(from);
    if (i >= this.oks.length || (this.suffixDone[i] as number) >= to) return undefined;
    return this.oks[this.suffixAt[i] as number];
  }
}

export function checkCacheRegister(index: HistoryIndex, findings: Findings): void {
  const keys = new Map<string, KeyPuts>();
  for (const op of index.opsByF.get('cache_put') ?? []) {
    const invoke = op.invoke as CachePutInvoke;
    const name = `${invoke.cache}\u0000${invoke.key}`;
    let puts = keys.get(name);
    if (puts === undefined) {
      puts = new KeyPuts();
      keys.set(name, puts);
    }
    puts.add(op);
  }
  for (const puts of keys.values()) puts.seal();
  const none = new KeyPuts();
  for (const final of observed<CacheFinalLine>(index, 'cache_final')) {
    checkFinal(final, keys.get(`${final.cache}\u0000${final.key}`) ?? none, findings);
  }
  for (const get of index.opsByF.get('cache_get') ?? []) {
    if (get.outcome !== 'ok') continue;
    const invoke = get.invoke as CacheGetInvoke;
    checkGet(get, keys.get(`${invoke.cache}\u0000${invoke.key}`) ?? none, findings);
  }
}

function checkFinal(final: CacheFinalLine, puts: KeyPuts, findings: Findings) {
  const where = `cache ${final.cache} key ${final.key}`;
  if (final.value === null) {
    const ok = puts.firstOk();
    if (ok !== undefined) {
      const value = (ok.invoke as CachePutInvoke).value;
      findings.add('cache-register', `${where} ended empty though put of ${value} was ok`, [
        ok.invoke,
        ok.completion,
        final,
      ]);
    }
    return;
  }
  const put = puts.byValue.get(final.value);
  if (put === undefined || put.outcome === 'fail') {
    const why = put === undefined ? 'no put wrote it' : 'its put failed';
    findings.add('cache-register', `${where} ended with ${final.value}, but ${why}`, [
      put?.invoke,
      put?.completion,
      final,
    ]);
    return;
  }
  // An info put has no completion, so nothing is known to come after it: never superseded.
  const done = put.outcome === 'ok' ? put.completion?.t : undefined;
  const later = done === undefined ? undefined : puts.invokedAfter(done);
  if (later !== undefined) {
    const value = (later.invoke as CachePutInvoke).value;
    findings.add(
      'cache-register',
      `${where} ended with ${final.value}, which the ok put of ${value} superseded`,
      [put.completion, later.invoke, later.completion, final],
    );
  }
}

function checkGet(get: Op, puts: KeyPuts, findings: Findings) {
  const ok = get.completion as CacheGetOk;
  if (ok.value === null) return;
  const invoke = get.invoke as CacheGetInvoke;
  const where = `${invoke.id} of cache ${invoke.cache} key ${invoke.key}`;
  const put = puts.byValue.get(ok.value);
  if (put === undefined || put.outcome === 'fail' || put.invoke.t > ok.t) {
    const why =
      put === undefined
        ? 'no put wrote it'
        : put.outcome === 'fail'
          ? 'its put failed'
          : 'its put began after the get ended';
    findings.add('cache-register', `${where} returned ${ok.value}, but ${why}`, [
      invoke,
      ok,
      put?.invoke,
    ]);
    return;
  }
  const done = put.outcome === 'ok' ? put.completion?.t : undefined;
  const later = done === undefined ? undefined : puts.overwroteBetween(done, invoke.t);
  if (later !== undefined) {
    const value = (later.invoke as CachePutInvoke).value;
    findings.add(
      'cache-register',
      `${where} returned stale ${ok.value}: the put of ${value} had overwritten it ` +
        'before the get began',
      [put.completion, later.invoke, later.completion, ok],
    );
  }
}
