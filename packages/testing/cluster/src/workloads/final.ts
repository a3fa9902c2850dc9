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
  PUBLISH_ATTEMPTS_MAX,
  SENTINEL_PUBLISHES_MAX,
  WORKLOAD_ERROR_BACKOFF_MS,
  WORKLOAD_OP_TIMEOUT_MS,
  scaled,
} from '../limits.js';
import { cacheKeys, counterKeys } from './caches.js';
import { type WorkloadContext, pause, text } from './common.js';
import { groupOn, recordedPoll, recordedSettle } from './groups.js';
import { recordedPublish } from './publishers.js';
import { NodeClients, clientFor, shardClient } from './router.js';

const FINAL = 'final';

/** Runs `op` on the client of `route` until it succeeds or `until` passes (a FinalReadError). */
async function retrying<T>(
  nodes: NodeClients,
  route: string,
  until: number,
  op: (client: FelixClient) => Promise<T>,
  pick: () => Promise<FelixClient | undefined> = () => clientFor(nodes, route),
): Promise<T> {
  let last: unknown;
  while (Date.now() < until) {
    const client = await pick();
    if (client === undefined) continue;
    try {
      return await op(client);
    } catch (err) {
      last = err;
      if (!nodes.learn(route, err)) await pause(WORKLOAD_ERROR_BACKOFF_MS);
    }
  }
  throw new FinalReadError(`the final read of ${route} did not succeed in time`, { cause: last });
}

/**
 * Publishes sentinels until one landed on every shard; their offsets. Each key is tried again
 * while its publish fails (a refusal such as `not_leader` moves it to its leader), each send a
 * value of its own: keys `sentinel-<i>`, values `final-<stream>-<n>`.
 */
async function sentinels(
  ctx: WorkloadContext,
  nodes: NodeClients,
  stream: { name: string; shards: number },
): Promise<Map<number, number>> {
  const landed = new Map<number, number>();
  let n = 0;
  for (let i = 0; n < SENTINEL_PUBLISHES_MAX && landed.size < stream.shards; i++) {
    for (
      let attempt = 1;
      attempt <= PUBLISH_ATTEMPTS_MAX && n < SENTINEL_PUBLISHES_MAX;
      attempt++
    ) {
      const send = {
        stream: stream.name,
        key: `sentinel-${i}`,
        value: `${FINAL}-${stream.name}-${n++}`,
      };
      const r = await recordedPublish(ctx, nodes, FINAL, { ...send, attempt: 1 });
      if (r.phase === 'ok') {
        landed.set(r.shard, r.offset);
        break;
      }
      await pause(WORKLOAD_ERROR_BACKOFF_MS);
    }
  }
  if (landed.size < stream.shards)
    throw new FinalReadError(`no sentinel landed on every shard of ${stream.name}`);
  return landed;
}

/**
 * The shard's log from its first retained offset through `until`. Offsets the subscription says
 * hold no record (`skippedBefore`: generation starts) are null; any other hole (offsets jumping)
 * ends the values there: what follows cannot be placed, and the checker reports what is missing.
 */
async function readShard(
  client: FelixClient,
  stream: string,
  shard: number,
  until: number,
): Promise<{ start: number; values: (string | null)[] }> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), scaled(FINAL_READS_DEADLINE_MS));
  let start: number | undefined;
  const values: (string | null)[] = [];
  try {
    const from = 'earliest';
    for await (const ev of client.subscribe(stream, { shard, from, signal: ac.signal })) {
      start ??= ev.offset;
      const at = start + values.length;
      // Offsets told to hold no record (generation starts) are kept as null; any other hole
      // ends the read.
      if (ev.offset > at && ev.offset - at <= (ev.skippedBefore ?? 0))
        for (let o = at; o < ev.offset; o++) values.push(null);
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

async function finalLogs(ctx: WorkloadContext, nodes: NodeClients, until: number): Promise<void> {
  for (const stream of ctx.names.streams) {
    const ends = await sentinels(ctx, nodes, stream);
    for (let shard = 0; shard < stream.shards; shard++) {
      const end = ends.get(shard) ?? 0;
      const read = await retrying(
        nodes,
        `${stream.name}/${shard}`,
        until,
        (client) => readShard(client, stream.name, shard, end),
        () => shardClient(nodes, stream.name, shard),
      );
      ctx.recorder.observe(FINAL, { f: 'final_read', stream: stream.name, shard, ...read });
    }
  }
}

async function finalKeys(ctx: WorkloadContext, nodes: NodeClients, until: number): Promise<void> {
  const { cache, counter } = ctx.names;
  const signal = () => AbortSignal.timeout(scaled(WORKLOAD_OP_TIMEOUT_MS));
  for (const key of cacheKeys()) {
    const v = await retrying(nodes, `cache:${cache}`, until, (client) =>
      client.cache(cache).get(key, { signal: signal() }),
    );
    const value = v === undefined ? null : text(v);
    ctx.recorder.observe(FINAL, { f: 'cache_final', cache, key, value });
  }
  for (const key of counterKeys()) {
    const sum = await retrying(nodes, `cache:${counter}`, until, (client) =>
      client.counter(counter).get(key, { signal: signal() }),
    );
    ctx.recorder.observe(FINAL, { f: 'counter_final', counter, key, value: Number(sum ?? 0n) });
  }
}

/** Drains one group shard as consumer `final` until nothing is owed or in flight. */
async function drainGroup(
  ctx: WorkloadContext,
  nodes: NodeClients,
  shard: number,
  until: number,
): Promise<void> {
  const { stream, name } = ctx.names.group;
  const route = `${stream}/${shard}`;
  const groups = new Map<FelixClient, ReturnType<FelixClient['group']>>();
  const on = (client: FelixClient) => groupOn(groups, client, ctx, shard, FINAL);
  const spec = {
    process: FINAL,
    shard,
    max: GROUP_DRAIN_POLL_RECORDS,
    visibilityMs: FINAL_GROUP_VISIBILITY_MS,
  };
  for (;;) {
    const info = await retrying(nodes, route, until, (client) => on(client).describe());
    if (info.owed === 0 && info.inFlight === 0 && (info.committed ?? 0) >= info.tail) {
      const deadLettered = await retrying(nodes, route, until, (c) => on(c).deadLetters());
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
    const client = await clientFor(nodes, route);
    if (client === undefined) continue;
    const polled = await recordedPoll(ctx, on(client), spec);
    if (!polled.ok) nodes.learn(route, polled.error);
    for (const msg of polled.ok ? polled.value : [])
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
  const until = Date.now() + scaled(FINAL_READS_DEADLINE_MS);
  const nodes = new NodeClients(ctx.target);
  try {
    if (scope.logs) await finalLogs(ctx, nodes, until);
    if (scope.caches) await finalKeys(ctx, nodes, until);
    if (scope.groups)
      for (let shard = 0; shard < ctx.names.group.shards; shard++)
        await drainGroup(ctx, nodes, shard, until);
  } finally {
    await nodes.close();
  }
}
