/**
 * The final reads, made by process `final` after every fault healed: a sentinel publish on each
 * stream shard (an ordinary recorded publish), then each shard's whole retained log up to its
 * sentinel (`final_read`), each cache key (`cache_final`), each counter key (`counter_final`),
 * and each group shard drained by a final consumer (recorded polls and acks) before its
 * `group_final`. Each read is retried until FINAL_READS_DEADLINE_MS; one that never succeeds
 * is a FinalReadError (the history would be incomplete, a harness failure).
 */
import type { FelixClient } from '@felix/client';
import { FinalReadError } from '../errors.js';
import {
  FINAL_GROUP_VISIBILITY_MS,
  FINAL_READ_RECORDS_MAX,
  FINAL_READS_DEADLINE_MS,
  GROUP_DRAIN_POLL_RECORDS,
  SENTINEL_PUBLISHES_MAX,
  WORKLOAD_ERROR_BACKOFF_MS,
  WORKLOAD_OP_TIMEOUT_MS,
} from '../limits.js';
import { cacheKeys, counterKeys } from './caches.js';
import { type WorkloadContext, closeClient, pause, text, workloadClient } from './common.js';
import { recordedPoll, recordedSettle } from './groups.js';
import { recordedPublish } from './publishers.js';

const FINAL = 'final';

/** Calls `op` until it succeeds or `until` (Date.now()) passes; then a FinalReadError. */
async function retrying<T>(what: string, until: number, op: () => Promise<T>): Promise<T> {
  let last: unknown;
  while (Date.now() < until) {
    try {
      return await op();
    } catch (err) {
      last = err;
      await pause(WORKLOAD_ERROR_BACKOFF_MS);
    }
  }
  throw new FinalReadError(`the final read of ${what} did not succeed in time`, { cause: last });
}

/** Publishes sentinels (keys `sentinel-<i>`) until one landed on every shard; their offsets. */
async function sentinels(
  ctx: WorkloadContext,
  client: FelixClient,
  stream: { name: string; shards: number },
): Promise<Map<number, number>> {
  const landed = new Map<number, number>();
  for (let i = 0; i < SENTINEL_PUBLISHES_MAX && landed.size < stream.shards; i++) {
    const send = {
      stream: stream.name,
      key: `sentinel-${i}`,
      value: `${FINAL}-${stream.name}-${i}`,
    };
    const r = await recordedPublish(ctx, client, FINAL, { ...send, attempt: 1 });
    if (r.phase === 'ok') landed.set(r.shard, r.offset);
    else await pause(WORKLOAD_ERROR_BACKOFF_MS);
  }
  if (landed.size < stream.shards)
    throw new FinalReadError(`no sentinel landed on every shard of ${stream.name}`);
  return landed;
}

/**
 * The shard's log from its first retained offset through `until`. A hole (offsets jumping) ends
 * the values there: what follows cannot be placed, and the checker reports what is missing.
 */
async function readShard(
  client: FelixClient,
  stream: string,
  shard: number,
  until: number,
): Promise<{ start: number; values: string[] }> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), FINAL_READS_DEADLINE_MS);
  let start: number | undefined;
  const values: string[] = [];
  try {
    for await (const ev of client.subscribe(stream, {
      shard,
      from: 'earliest',
      signal: ac.signal,
    })) {
      start ??= ev.offset;
      if (ev.offset !== start + values.length) break;
      values.push(text(ev.data));
      if (ev.offset >= until || values.length >= FINAL_READ_RECORDS_MAX) break;
    }
  } finally {
    clearTimeout(timer);
  }
  if (start === undefined) throw new FinalReadError(`${stream}/${shard} delivered nothing`);
  return { start, values };
}

async function finalLogs(ctx: WorkloadContext, client: FelixClient, until: number): Promise<void> {
  for (const stream of ctx.names.streams) {
    const ends = await sentinels(ctx, client, stream);
    for (let shard = 0; shard < stream.shards; shard++) {
      const end = ends.get(shard) ?? 0;
      const read = await retrying(`${stream.name}/${shard}`, until, () =>
        readShard(client, stream.name, shard, end),
      );
      ctx.recorder.observe(FINAL, { f: 'final_read', stream: stream.name, shard, ...read });
    }
  }
}

async function finalKeys(ctx: WorkloadContext, client: FelixClient, until: number): Promise<void> {
  const cache = client.cache(ctx.names.cache);
  for (const key of cacheKeys()) {
    const v = await retrying(`cache key ${key}`, until, () =>
      cache.get(key, { signal: AbortSignal.timeout(WORKLOAD_OP_TIMEOUT_MS) }),
    );
    const value = v === undefined ? null : text(v);
    ctx.recorder.observe(FINAL, { f: 'cache_final', cache: ctx.names.cache, key, value });
  }
  const counter = client.counter(ctx.names.counter);
  for (const key of counterKeys()) {
    const sum = await retrying(`counter key ${key}`, until, () =>
      counter.get(key, { signal: AbortSignal.timeout(WORKLOAD_OP_TIMEOUT_MS) }),
    );
    const value = Number(sum ?? 0n);
    ctx.recorder.observe(FINAL, { f: 'counter_final', counter: ctx.names.counter, key, value });
  }
}

/** Drains one group shard as consumer `final` until nothing is owed or in flight. */
async function drainGroup(
  ctx: WorkloadContext,
  client: FelixClient,
  shard: number,
  until: number,
): Promise<void> {
  const { stream, name } = ctx.names.group;
  const group = client.group(stream, name, { shard, consumer: FINAL });
  const spec = {
    process: FINAL,
    shard,
    max: GROUP_DRAIN_POLL_RECORDS,
    visibilityMs: FINAL_GROUP_VISIBILITY_MS,
  };
  for (;;) {
    const info = await retrying(`group ${name}/${shard}`, until, () => group.describe());
    if (info.owed === 0 && info.inFlight === 0 && (info.committed ?? 0) >= info.tail) {
      const deadLettered = await retrying(`dead letters of ${name}/${shard}`, until, () =>
        group.deadLetters(),
      );
      const end = info.committed ?? info.tail;
      ctx.recorder.observe(FINAL, {
        f: 'group_final',
        stream,
        group: name,
        shard,
        end,
        deadLettered,
      });
      return;
    }
    if (Date.now() >= until)
      throw new FinalReadError(`group ${name}/${shard} did not drain in time`);
    for (const msg of (await recordedPoll(ctx, group, spec)) ?? [])
      await recordedSettle(ctx, FINAL, msg, 'ack', shard);
  }
}

/** What the final reads cover: the kinds of state the campaign's workloads touched. */
export interface FinalScope {
  logs: boolean;
  caches: boolean;
  groups: boolean;
}

/** Every final read, in the order the module comment names. */
export async function finalReads(ctx: WorkloadContext, scope: FinalScope): Promise<void> {
  const until = Date.now() + FINAL_READS_DEADLINE_MS;
  const client = await workloadClient(ctx.target);
  try {
    if (scope.logs) await finalLogs(ctx, client, until);
    if (scope.caches) await finalKeys(ctx, client, until);
    if (scope.groups)
      for (let shard = 0; shard < ctx.names.group.shards; shard++)
        await drainGroup(ctx, client, shard, until);
  } finally {
    await closeClient(client);
  }
}
