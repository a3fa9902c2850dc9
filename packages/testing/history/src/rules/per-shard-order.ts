/**
 * Rule 3: each subscription sees its shard's offsets rise by exactly one, starting at its
 * `from`, except across a range a `gap` line of that subscription told it about first. A
 * subscription from below the final read's start (trimmed) may begin anywhere up to that start.
 * The rule is the same for durable and in-memory streams: a loss must be told.
 */
import type { Findings } from '../findings.js';
import type { DeliverLine, GapLine } from '../history.js';
import { type HistoryIndex, pushTo, shardKey } from '../index-ops.js';
import type { SubscribeInvoke } from './types.js';

type SubEvent = DeliverLine | GapLine;

export function checkPerShardOrder(index: HistoryIndex, findings: Findings): void {
  const bySub = new Map<string, SubEvent[]>();
  for (const line of index.lines) {
    if (line.f === 'deliver' || line.f === 'gap') pushTo(bySub, line.sub, line);
  }
  for (const [sub, events] of bySub) {
    const op = index.opById.get(sub);
    if (op === undefined || op.invoke.f !== 'subscribe') {
      findings.add(
        'malformed-history',
        `${events[0]?.f} lines name ${sub}, which is no subscribe`,
        [events[0]],
      );
      continue;
    }
    checkSubscription(index, op.invoke as SubscribeInvoke, events, findings);
  }
}

/** Walks one subscription's deliveries and gaps in history order. */
function checkSubscription(
  index: HistoryIndex,
  subscribe: SubscribeInvoke,
  events: SubEvent[],
  findings: Findings,
) {
  const read = index.finalReads.get(shardKey(subscribe.stream, subscribe.shard));
  const trimmedTo = read !== undefined && subscribe.from < read.start ? read.start : subscribe.from;
  let told: GapLine[] = [];
  let expected = subscribe.from;
  let first = true;
  for (const event of events) {
    if (event.stream !== subscribe.stream || event.shard !== subscribe.shard) {
      findings.add(
        'malformed-history',
        `${event.f} of ${subscribe.id} names stream ${event.stream} shard ${event.shard}, ` +
          `not the subscribed stream ${subscribe.stream} shard ${subscribe.shard}`,
        [subscribe, event],
      );
      continue;
    }
    if (event.f === 'gap') {
      told.push(event);
      continue;
    }
    const o = event.offset;
    const place = `stream ${event.stream} shard ${event.shard}`;
    const where = `${subscribe.id} (${subscribe.process}) on ${place}`;
    if (o < expected) {
      findings.add(
        'per-shard-order',
        `${where} got offset ${o} (value ${event.value}) after it expected ${expected}`,
        [subscribe, event],
      );
      continue;
    }
    const trimmed = first && o <= trimmedTo;
    // Offsets the reader was told hold no record (generation starts) need no gap; the rest of
    // the jump must be covered by gaps told.
    const untold = o - expected - coveredCount(told, expected, o);
    if (o > expected && !trimmed && untold > (event.skipped_before ?? 0)) {
      findings.add(
        'per-shard-order',
        `${where} skipped offsets ${expected}..${o - 1} without a gap telling it ` +
          `(next delivered: offset ${o}, value ${event.value})`,
        [subscribe, event],
      );
    }
    expected = o + 1;
    first = false;
    // Expected only rises, so gaps wholly below it can never be needed again.
    told = told.filter((g) => g.to > expected);
  }
}

/** How many offsets of [from, to) the gaps already told cover. */
function coveredCount(gaps: GapLine[], from: number, to: number): number {
  let n = 0;
  for (let at = from; at < to; at++) if (gaps.some((g) => g.from <= at && g.to > at)) n++;
  return n;
}
