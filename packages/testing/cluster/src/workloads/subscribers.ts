/**
 * Subscribers: each process reads one shard of one stream from offset 0, records every delivery
 * and every loss it is told of (a `gap` status, `lostBefore`) as a `gap` line, and now and then
 * (a seeded time) closes its subscription and subscribes again from the offset after its last
 * delivery: a new `subscribe` line.
 */
import type { FelixClient } from '@felix/client';
import {
  RESUBSCRIBE_AFTER_MS_MAX,
  RESUBSCRIBE_AFTER_MS_MIN,
  SUBSCRIBER_GAPS_REMEMBERED_MAX,
  WORKLOAD_ERROR_BACKOFF_MS,
} from '../limits.js';
import type { Rng } from '../rng.js';
import { type WorkloadContext, pause, text } from './common.js';
import { NodeClients, shardClient } from './router.js';

export interface SubscriberOptions {
  process: string;
  rng: Rng;
  stream: string;
  shard: number;
}

interface Reader {
  ctx: WorkloadContext;
  opts: SubscriberOptions;
  nodes: NodeClients;
  /** Clients whose `gap` status events are recorded (one per broker when routed). */
  watched: Set<FelixClient>;
  /** Ends the status watches. */
  watching: AbortController;
  /** The offset after the last delivery. */
  next: number;
  /** The subscribe line the deliveries now belong to. */
  sub: string | undefined;
  /** Losses already recorded for the current subscription (`from-to`), not to record twice. */
  gaps: Set<string>;
}

function recordGap(r: Reader, from: number, to: number): void {
  const key = `${from}-${to}`;
  if (r.sub === undefined || to <= from || r.gaps.has(key)) return;
  // Past the bound the set starts over: a loss told twice is recorded twice, which is harmless.
  if (r.gaps.size >= SUBSCRIBER_GAPS_REMEMBERED_MAX) r.gaps.clear();
  r.gaps.add(key);
  const { stream, shard } = r.opts;
  r.ctx.recorder.observe(r.opts.process, { f: 'gap', sub: r.sub, stream, shard, from, to });
}

/** Records `client`'s `gap` status events of this reader's shard until the reader ends. */
async function watchGaps(r: Reader, client: FelixClient): Promise<void> {
  try {
    for await (const ev of client.status({ signal: r.watching.signal })) {
      if (ev.type === 'gap' && ev.stream === r.opts.stream && ev.shard === r.opts.shard)
        recordGap(r, ev.from, ev.from + ev.count);
    }
  } catch {
    // The status feed ends with the client; the deliveries' lostBefore still reports losses.
  }
}

/** One subscription, from `r.next` until its seeded time is up, the campaign ends or it fails. */
async function subscribeOnce(r: Reader, client: FelixClient): Promise<void> {
  const { ctx, opts } = r;
  const { stream, shard } = opts;
  const sub = ctx.recorder.invoke(opts.process, { f: 'subscribe', stream, shard, from: r.next });
  r.sub = sub;
  r.gaps = new Set();
  const ac = new AbortController();
  const stop = () => ac.abort();
  ctx.signal.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, opts.rng.int(RESUBSCRIBE_AFTER_MS_MIN, RESUBSCRIBE_AFTER_MS_MAX));
  let answered = false;
  try {
    for await (const ev of client.subscribe(stream, { shard, from: r.next, signal: ac.signal })) {
      if (!answered) {
        ctx.recorder.complete(sub, 'ok');
        answered = true;
      }
      if (ev.lostBefore > 0) recordGap(r, ev.offset - ev.lostBefore, ev.offset);
      const value = text(ev.data);
      ctx.recorder.observe(opts.process, {
        f: 'deliver',
        sub,
        stream,
        shard,
        offset: ev.offset,
        value,
        ...(ev.skippedBefore === undefined ? {} : { skipped_before: ev.skippedBefore }),
      });
      r.next = ev.offset + 1;
    }
  } catch (err) {
    if (!ac.signal.aborted) {
      if (!answered) ctx.recorder.completeError(sub, err);
      await pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal);
    }
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', stop);
    // Closed by us before any delivery: whether the broker ever served it is unknown.
    if (!answered)
      ctx.recorder.complete(sub, 'info', { error: 'closed before its first delivery' });
  }
}

export async function runSubscriber(ctx: WorkloadContext, opts: SubscriberOptions): Promise<void> {
  const r: Reader = {
    ctx,
    opts,
    nodes: new NodeClients(ctx.target),
    watched: new Set(),
    watching: new AbortController(),
    next: 0,
    sub: undefined,
    gaps: new Set(),
  };
  const watches: Promise<void>[] = [];
  try {
    while (!ctx.signal.aborted) {
      const client = await shardClient(r.nodes, opts.stream, opts.shard, ctx.signal);
      if (client === undefined) continue;
      if (!r.watched.has(client)) {
        r.watched.add(client);
        watches.push(watchGaps(r, client));
      }
      await subscribeOnce(r, client);
    }
  } finally {
    r.watching.abort();
    await r.nodes.close();
    await Promise.all(watches);
  }
}
