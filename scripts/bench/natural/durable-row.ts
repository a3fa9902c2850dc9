/**
 * The awaited acked publish: `for (...) await felix.publish(s, data)` of 1 KiB records on a
 * durable stream, against `await js.publish(subj, data)` on a JetStream stream with file storage
 * (nats-server on 127.0.0.1:4222, its defaults). Same durability: JetStream's file store acks
 * before any fsync and syncs on its `sync_interval` (default 2 min); Felix's durable stream here
 * uses the broker's default `periodic` fsync (every 250 ms), so Felix keeps the stricter bound.
 * A labelled variant shows Felix with an fsync before every ack (`onCommit`), which JetStream
 * offers only with `sync_interval: always` server-wide (not what this server runs).
 */
import { StorageType } from 'nats';
import { type Ctx, DATA, type Row, awaitedLoop } from './kit.js';

export async function awaitedAckedRow(ctx: Ctx, n: number): Promise<Row> {
  const broker = await ctx.durableBroker();
  const felix = await ctx.felix(broker);
  const nc = await ctx.nats();
  const jsm = await nc.jetstreamManager();
  const name = `NATURAL${Date.now()}`;
  const subject = `${name}.x`;
  await jsm.streams.add({ name, subjects: [subject], storage: StorageType.File });
  const js = nc.jetstream();
  return {
    id: 'awaited',
    title: `awaited acked publish, ${n.toLocaleString('en-US')} one at a time`,
    n,
    goal: 1.0,
    felix: [
      {
        system: 'Felix TLS, await publish(s, data), durable periodic',
        durability: 'fsync every 250 ms (periodic, the default)',
        run: (m) => awaitedLoop(m, () => felix.publish('durable', DATA)),
      },
      {
        system: 'Felix TLS, await publish(s, data), durable onCommit',
        durability: 'fsync before every ack (fsync-always; JetStream does not here)',
        // A fifth of the calls: at one fsync per call a full round takes half a minute.
        run: (m) => awaitedLoop(Math.ceil(m / 5), () => felix.publish('durable-always', DATA)),
      },
    ],
    peer: {
      system: 'JetStream, await js.publish(subj, data), file storage',
      durability: 'file store, fsync every 2 min (sync_interval default)',
      run: (m) => awaitedLoop(m, () => js.publish(subject, DATA)),
    },
    close: async () => {
      await jsm.streams.delete(name);
      await felix.close();
    },
  };
}
