// consistency: two streams on three brokers, both at replication factor 3, one with `quorum`
// consistency and one with `leader`. With a stream's two followers paused (SIGSTOP), the quorum
// stream refuses a publish it cannot get onto a majority (the answer is outcome-unknown: the
// record may or may not survive), while the leader stream acknowledges it on the leader's disk
// alone. Then the leader stream's leader is killed while its followers still lack that record,
// after they have been paused for longer than the lag window (`cluster.replica_lag_max_ms`, 1 s
// here): a follower out of sync is never promoted, so the shard stays unplaced rather than coming
// back without the record, and once the old leader returns it serves everything it acknowledged.
// (A follower paused for less than the window is still in sync and may be promoted: the record
// it lacks is then lost, the `leader` exposure, docs/replication.md "In-sync followers".)
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { check, finish, waitUntil } from '@felix/demo-support';
import { startCluster } from '@felix/testing-cluster';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
/** How long the demo watches the control plane not promote a lagging follower. */
const OBSERVE_MS = 8_000;
/** How long a restarted leader may take to serve its shard again. */
const RETURN_DEADLINE_MS = 60_000;
/** The brokers' lag window: short, so paused followers leave it long before the control plane
 *  would mark them down (the test cluster's 3.75 s). */
const LAG_WINDOW_MS = 1_000;
/** How long the leader stream's followers may take to be back in its set and in sync. */
const IN_SYNC_DEADLINE_MS = 60_000;

const text = (b) => new TextDecoder().decode(b);
const cluster = await startCluster({
  brokers: 3,
  replication: true,
  transport,
  env: { FELIX_REPLICA_LAG_MAX_MS: String(LAG_WINDOW_MS) },
  streams: [
    { name: 'quorum-ledger', shards: 1, replicationFactor: 3, consistency: 'quorum' },
    { name: 'leader-ledger', shards: 1, replicationFactor: 3, consistency: 'leader' },
  ],
});
const assignment = async (stream) => (await cluster.assignments()).find((a) => a.stream === stream);
const reportOf = async (stream) =>
  (await cluster.operatorGet('/v1/replica-reports')).items.find((r) => r.stream === stream);
const followersOf = async (stream) => {
  const a = await assignment(stream);
  return a.replicas.filter((id) => id !== a.leader);
};
/** How long one attempt to read the stream back may take before it is given up and retried. */
const READ_ATTEMPT_MS = 5_000;

/** Reads `stream` from the start until `last` arrives or READ_ATTEMPT_MS passes; answers what came. */
async function readAll(felix, stream, last) {
  const out = [];
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), READ_ATTEMPT_MS);
  try {
    for await (const ev of felix.subscribe(stream, { from: 'earliest', signal: ac.signal })) {
      out.push(text(ev.data));
      if (out.includes(last)) break;
    }
  } catch (err) {
    // An attempt cut short by its own deadline answers what it read; anything else is a failure.
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
  }
  return out;
}

try {
  await cluster.waitServed();
  const felix = await cluster.connect();
  await felix.publish('quorum-ledger', 'q-0');
  await felix.publish('leader-ledger', 'l-0');

  // Quorum: no majority, no acknowledgement.
  const qFollowers = await followersOf('quorum-ledger');
  console.log(`quorum-ledger: pausing its followers ${qFollowers.join(', ')}`);
  for (const id of qFollowers) await cluster.pause(id);
  const refusal = await felix.publish('quorum-ledger', 'q-1').then(
    () => null,
    (err) => err,
  );
  check(
    refusal !== null,
    'a quorum stream refuses a publish while its followers are paused',
    refusal?.code ?? 'it was acknowledged',
  );
  for (const id of qFollowers) await cluster.resume(id);

  // Paused past the control plane's expiry, those followers may have left the other stream's
  // set too: wait until it has both followers again, and its leader reports them in sync.
  await waitUntil(
    'leader-ledger to have both followers back and in sync',
    async () => {
      const [a, r] = [await assignment('leader-ledger'), await reportOf('leader-ledger')];
      return a.replicas.length === 3 && r?.generation === a.generation && r.in_sync.length === 2;
    },
    IN_SYNC_DEADLINE_MS,
  );

  // Leader: acknowledged on the leader alone.
  const lFollowers = await followersOf('leader-ledger');
  const lLeader = (await assignment('leader-ledger')).leader;
  console.log(`leader-ledger: leader ${lLeader}; pausing its followers ${lFollowers.join(', ')}`);
  for (const id of lFollowers) await cluster.pause(id);
  const offset = await felix.publish('leader-ledger', 'l-1');
  check(offset !== undefined, 'a leader stream acknowledges a publish with its followers paused');
  await felix.close();
  await waitUntil(
    `the leader to report its paused followers out of sync (${LAG_WINDOW_MS} ms window)`,
    async () => (await reportOf('leader-ledger'))?.in_sync.length === 0,
  );

  // The only copy of l-1 dies; the followers come back without it.
  const before = await assignment('leader-ledger');
  await cluster.kill(lLeader);
  for (const id of lFollowers) await cluster.resume(id);
  console.log(`killed ${lLeader}; watching the control plane for ${OBSERVE_MS} ms`);
  const started = Date.now();
  let promotedLagging;
  while (Date.now() - started < OBSERVE_MS && promotedLagging === undefined) {
    const a = await assignment('leader-ledger');
    if (a.generation > before.generation && lFollowers.includes(a.leader))
      promotedLagging = a.leader;
    await new Promise((r) => setTimeout(r, 200));
  }
  check(
    promotedLagging === undefined,
    'no follower lacking an acknowledged record is promoted',
    promotedLagging && `promoted ${promotedLagging}`,
  );

  await cluster.start(lLeader);
  const again = await cluster.connect();
  console.log(`restarted ${lLeader}; reading leader-ledger back`);
  let back = [];
  await waitUntil(
    'the returned leader to serve leader-ledger through l-1',
    async () => {
      back = await readAll(again, 'leader-ledger', 'l-1');
      if (!back.includes('l-1')) {
        const a = await assignment('leader-ledger');
        console.log(`read [${back.join(',')}]; leader ${a.leader} generation ${a.generation}`);
      }
      return back.includes('l-1');
    },
    RETURN_DEADLINE_MS,
  ).catch((err) => console.log(String(err)));
  check(
    back.join(',') === 'l-0,l-1',
    'once the old leader returns, the stream serves everything it acknowledged',
    back.join(','),
  );
  await again.close();
} finally {
  await cluster.shutdown();
}
finish();
