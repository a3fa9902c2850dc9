/**
 * The cache loops: `await cache.get(key)` and `await cache.put(key, value)` one at a time over
 * 1,000 keys of 1 KiB values, against ioredis `await redis.get(key)` / `await redis.set(key, v)`
 * Judged against a redis-server of this run's own with TLS on (tls-peers.ts; ioredis with
 * `tls: { ca }`, nothing else), since every Felix connection is TLS; the shared plaintext server
 * (127.0.0.1:6379) is shown beside. Same durability: both Redis servers keep data in memory only
 * (`appendonly no`, no `save` points), so the judged Felix loop runs on a broker without durable
 * storage, whose caches are held in memory. Labelled variants: the durable broker, where every
 * put is acknowledged after its fsync, and a raw node:tls ping-pong of the same bytes
 * (raw-tls-floor.ts), the floor under any Node loop over TLS.
 */
import type { BenchBroker } from '@felix/testing-bench-kit';
import type { Redis } from 'ioredis';
import { type Ctx, DATA, type Row, type Sample, type Side, awaitedLoop } from './kit.js';
import { startRawFloor } from './raw-tls-floor.js';

const KEYS = 1_000;
const REDIS_DATA = Buffer.from(DATA);
const key = (i: number) => `k${i % KEYS}`;

type Op = 'get' | 'put';

/** `share`: the part of a round's calls it makes (a put with an fsync each takes a fifth). */
async function felixSide(ctx: Ctx, broker: BenchBroker, op: Op, share = 1) {
  const felix = await ctx.felix(broker);
  const kv = felix.cache('kv');
  for (let i = 0; i < KEYS; i++) await kv.put(key(i), DATA);
  const run = (n: number): Promise<Sample> =>
    op === 'get'
      ? awaitedLoop(Math.ceil(n * share), (i) => kv.get(key(i)))
      : awaitedLoop(Math.ceil(n * share), (i) => kv.put(key(i), DATA));
  return { run, close: () => felix.close() };
}

async function redisSide(redis: Redis, op: Op, tls: boolean, serverPid?: number): Promise<Side> {
  for (let i = 0; i < KEYS; i++) await redis.set(key(i), REDIS_DATA);
  const call = op === 'get' ? 'get(key)' : 'set(key, value)';
  return {
    system: `ioredis ${tls ? 'TLS' : 'plaintext'}, await redis.${call}`,
    durability: 'memory only (appendonly no, no save points)',
    serverPid,
    run: (n) =>
      op === 'get'
        ? awaitedLoop(n, (i) => redis.get(key(i)))
        : awaitedLoop(n, (i) => redis.set(key(i), REDIS_DATA)),
  };
}

export async function cacheRow(ctx: Ctx, op: Op, n: number): Promise<Row> {
  const peer = await redisSide(await ctx.redisTls(), op, true, (await ctx.tlsPeers()).redisPid);
  const plainPeer = await redisSide(await ctx.redis(), op, false);
  const memoryBroker = await ctx.memoryBroker();
  const durableBroker = await ctx.durableBroker();
  const memory = await felixSide(ctx, memoryBroker, op);
  const durable = await felixSide(ctx, durableBroker, op, op === 'put' ? 0.2 : 1);
  const floor = await startRawFloor(op);
  const call = op === 'get' ? 'get(key)' : 'put(key, value)';
  return {
    id: op,
    title: `cache ${op} loop, ${n.toLocaleString('en-US')} one at a time`,
    n,
    goal: 1.0,
    felix: [
      {
        system: `Felix TLS, await cache.${call}, in memory`,
        durability: 'memory only',
        serverPid: memoryBroker.pid,
        run: memory.run,
      },
      {
        system: `Felix TLS, await cache.${call}, durable broker`,
        durability: op === 'put' ? 'fsync before every ack' : 'log-backed, hot values',
        serverPid: durableBroker.pid,
        run: durable.run,
      },
      {
        system: 'raw node:tls ping-pong of the same bytes (the floor)',
        durability: 'none: no codec, no multiplexer, no cache',
        serverPid: floor.pid,
        run: (n) => awaitedLoop(n, () => floor.ping()),
      },
    ],
    peer,
    plainPeer,
    close: async () => {
      await memory.close();
      await durable.close();
      await floor.stop();
    },
  };
}
