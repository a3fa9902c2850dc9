/**
 * The awaited acked publish: `for (...) await felix.publish(s, data)` of 1 KiB records on a
 * durable stream, against `await js.publish(subj, data)` on a JetStream stream with file storage
 * (nats-server on 127.0.0.1:4222, its defaults). Same durability: JetStream's file store acks
 * before any fsync and syncs on its `sync_interval` (default 2 min); Felix's durable stream here
 * uses the broker's default `periodic` fsync (every 250 ms), so Felix keeps the stricter bound.
 * A labelled variant shows Felix with an fsync before every ack (`onCommit`), which JetStream
 * offers only with `sync_interval: always` server-wide (not what this server runs). Judged
 * against JetStream on a nats-server of this run's own with TLS on (tls-peers.ts, same defaults,
 * file storage in a temporary directory); the shared plaintext server is shown beside.
 */
import { type NatsConnection, StorageType } from 'nats';
import { type Ctx, DATA, type Row, type Side, awaitedLoop } from './kit.js';

/** `await js.publish` on a new file-storage stream of the server `nc` talks to. */
async function jetStreamSide(nc: NatsConnection, tls: boolean) {
  const jsm = await nc.jetstreamManager();
  const name = `NATURAL${tls ? 'TLS' : ''}${Date.now()}`;
  const subject = `${name}.x`;
  await jsm.streams.add({ name, subjects: [subject], storage: StorageType.File });
  const js = nc.jetstream();
  const side: Side = {
    system: `JetStream ${tls ? 'TLS' : 'plaintext'}, await js.publish(subj, data), file storage`,
    durability: 'file store, fsync every 2 min (sync_interval default)',
    run: (m) => awaitedLoop(m, () => js.publish(subject, DATA)),
  };
  return { side, remove: () => jsm.streams.delete(name) };
}

export async function awaitedAckedRow(ctx: Ctx, n: number): Promise<Row> {
  const broker = await ctx.durableBroker();
  const felix = await ctx.felix(broker);
  const tls = await jetStreamSide(await ctx.natsTls(), true);
  const plain = await jetStreamSide(await ctx.nats(), false);
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
    peer: tls.side,
    plainPeer: plain.side,
    close: async () => {
      await tls.remove();
      await plain.remove();
      await felix.close();
    },
  };
}
