// cluster-failover: three brokers share a `payments` stream at replication factor 3 with `quorum`
// consistency, so a publish is acknowledged only once two of the three brokers hold it on disk.
// A client is given ONE seed, a broker that does not lead the stream: it publishes one payment
// at a time (the broker forwards each to the leader) while a subscriber on the same client reads
// from the start. Midway the leader is killed with SIGKILL. The control plane promotes a
// follower, the client and its subscription move to it, and publishing goes on. At the end the
// demo reads the stream back on a new client and checks that every acknowledged payment is there,
// once, in order, and that the subscriber that lived through the failover saw the same.
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { check, finish, waitUntil } from '@felix/demo-support';
import { startCluster } from '@felix/testing-cluster';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const STREAM = 'payments';
const BEFORE_KILL = 200;
const AFTER_KILL = 200;
/** How long the whole failover (detection, promotion, the client moving) may take. */
const FAILOVER_DEADLINE_MS = 60_000;
/** The pause before a publish the failover refused is tried with the next payment. */
const RETRY_MS = 50;

const text = (b) => new TextDecoder().decode(b);
const cluster = await startCluster({
  brokers: 3,
  replication: true,
  transport,
  streams: [{ name: STREAM, shards: 1, replicationFactor: 3, consistency: 'quorum' }],
});
try {
  await cluster.waitServed();
  const leader = await cluster.leaderOf(STREAM);
  const seed = cluster.nodes.find((n) => n.id !== leader.id);
  console.log(`stream ${STREAM}: leader ${leader.id}; the client's only seed is ${seed.id}`);
  const felix = await cluster.connect({ servers: [seed.url(transport)] });

  const seen = [];
  const stop = new AbortController();
  const reading = (async () => {
    for await (const ev of felix.subscribe(STREAM, { from: 'earliest', signal: stop.signal }))
      seen.push(text(ev.data));
  })().catch((err) => {
    if (!stop.signal.aborted) throw err;
  });

  const acked = [];
  let refused = 0;
  let n = 0;
  async function pay() {
    const id = `payment-${n++}`;
    try {
      await felix.publish(STREAM, id);
      acked.push(id);
      return true;
    } catch (err) {
      // Not acknowledged (refused while no leader serves, or outcome unknown): the demo
      // promises nothing about it, and goes on with the next payment.
      refused++;
      console.log(`  ${id} not acknowledged: ${err.code ?? err.message}`);
      await new Promise((r) => setTimeout(r, RETRY_MS));
      return false;
    }
  }
  while (acked.length < BEFORE_KILL) await pay();
  console.log(`${acked.length} payments acknowledged; SIGKILL the leader ${leader.id}`);
  const killedAt = performance.now();
  await cluster.kill(leader.id);
  const before = acked.length;
  const deadline = killedAt + FAILOVER_DEADLINE_MS;
  while (acked.length === before && performance.now() < deadline) await pay();
  const gapMs = Math.round(performance.now() - killedAt);
  const promoted = await cluster.leaderOf(STREAM);
  console.log(`first acknowledgement ${gapMs} ms after the kill; new leader ${promoted?.id}`);
  check(
    acked.length > before,
    'publishing through the one seed resumed after the failover',
    `${gapMs} ms`,
  );
  while (acked.length < BEFORE_KILL + AFTER_KILL && performance.now() < deadline + 30_000)
    await pay();

  await waitUntil(
    'the subscriber to catch up',
    () => seen.includes(acked.at(-1)),
    FAILOVER_DEADLINE_MS,
  );
  stop.abort();
  await reading;

  const reader = await cluster.connect({ servers: [seed.url(transport)] });
  const back = [];
  for await (const ev of reader.subscribe(STREAM, { from: 'earliest' })) {
    back.push(text(ev.data));
    if (back.includes(acked.at(-1))) break;
  }
  await reader.close();
  await felix.close();

  const inBack = new Set(back);
  const lost = acked.filter((id) => !inBack.has(id));
  check(
    lost.length === 0,
    'every acknowledged payment is in the stream after the failover',
    `${acked.length} acknowledged, ${lost.length} missing${lost.length ? ` (${lost.slice(0, 5).join(', ')})` : ''}`,
  );
  check(
    new Set(back).size === back.length,
    'no payment is in the stream twice',
    `${back.length} read`,
  );
  const order = back.map((id) => Number(id.split('-')[1]));
  check(
    order.every((v, i) => i === 0 || v > order[i - 1]),
    'the stream holds the payments in the order they were sent',
  );
  const sameAsBack = seen.length >= acked.length && seen.every((id, i) => id === back[i]);
  check(
    sameAsBack,
    'the subscriber that lived through the failover saw the same records, without gap or duplicate',
    `${seen.length} seen`,
  );
  console.log(
    `${refused} publishes were not acknowledged during the failover (the demo claims nothing about them)`,
  );
} finally {
  await cluster.shutdown();
}
finish();
