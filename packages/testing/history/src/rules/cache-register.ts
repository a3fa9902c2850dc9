/**
 * Rule 6: each cache key is a register. (a) Its final value is the value of a put that was ok or
 * of unknown outcome and not superseded (an ok put invoked after it completed), or null when no
 * put was ok. (b) A get never returns a value no put wrote, a value written by a failed put, a
 * value put after the get completed, or a value overwritten (another ok put invoked after it
 * completed and completed before the get began). Put values are unique per key.
 */
import type { Findings } from '../findings.js';
import type { CacheFinalLine } from '../history.js';
import { type HistoryIndex, type Op, observed, pushTo } from '../index-ops.js';
import type { CacheGetInvoke, CacheGetOk, CachePutInvoke } from './types.js';

export function checkCacheRegister(index: HistoryIndex, findings: Findings): void {
  const puts = new Map<string, Op[]>();
  for (const op of index.opsByF.get('cache_put') ?? []) {
    const invoke = op.invoke as CachePutInvoke;
    pushTo(puts, `${invoke.cache}\u0000${invoke.key}`, op);
  }
  for (const final of observed<CacheFinalLine>(index, 'cache_final')) {
    checkFinal(final, puts.get(`${final.cache}\u0000${final.key}`) ?? [], findings);
  }
  for (const get of index.opsByF.get('cache_get') ?? []) {
    if (get.outcome !== 'ok') continue;
    const invoke = get.invoke as CacheGetInvoke;
    checkGet(get, puts.get(`${invoke.cache}\u0000${invoke.key}`) ?? [], findings);
  }
}

/** The ok put invoked after `put` completed, if any (an info put is never superseded). */
function supersededBy(put: Op, puts: Op[]): Op | undefined {
  if (put.outcome !== 'ok' || put.completion === undefined) return undefined;
  const done = put.completion.t;
  return puts.find((q) => q !== put && q.outcome === 'ok' && q.invoke.t > done);
}

function checkFinal(final: CacheFinalLine, puts: Op[], findings: Findings) {
  const where = `cache ${final.cache} key ${final.key}`;
  if (final.value === null) {
    const ok = puts.find((p) => p.outcome === 'ok');
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
  const put = puts.find((p) => (p.invoke as CachePutInvoke).value === final.value);
  if (put === undefined || put.outcome === 'fail') {
    const why = put === undefined ? 'no put wrote it' : 'its put failed';
    findings.add('cache-register', `${where} ended with ${final.value}, but ${why}`, [
      put?.invoke,
      put?.completion,
      final,
    ]);
    return;
  }
  const later = supersededBy(put, puts);
  if (later !== undefined) {
    const value = (later.invoke as CachePutInvoke).value;
    findings.add(
      'cache-register',
      `${where} ended with ${final.value}, which the ok put of ${value} superseded`,
      [put.completion, later.invoke, later.completion, final],
    );
  }
}

function checkGet(get: Op, puts: Op[], findings: Findings) {
  const ok = get.completion as CacheGetOk;
  if (ok.value === null) return;
  const invoke = get.invoke as CacheGetInvoke;
  const where = `${invoke.id} of cache ${invoke.cache} key ${invoke.key}`;
  const put = puts.find((p) => (p.invoke as CachePutInvoke).value === ok.value);
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
  const later = puts.find(
    (q) =>
      done !== undefined &&
      q !== put &&
      q.outcome === 'ok' &&
      q.invoke.t > done &&
      (q.completion?.t ?? Number.POSITIVE_INFINITY) < invoke.t,
  );
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
