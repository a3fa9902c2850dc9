// Goal: a cache shard's failover and hand-off follow the same rules as a durable stream's
// (docs/replication.md, "Replica reports and promotion", "Hand-off on SIGTERM"): its leader
// reports its cache log's replicas, so a SIGKILLed leader's shard goes only to a follower holding
// every write the leader acknowledged (never to one that lacks them: the shard then waits for its
// leader, and no emptier cache comes back), and a leader stopping with SIGTERM ships until a
// follower holds every log, then hands the shard to it.
// Method: 3 real brokers with internal listeners, a 1-shard cache at replication factor 3.
// Promotion: one value shipped everywhere, both followers paused (SIGSTOP), a second value
// acknowledged by the leader alone, its report showing it ahead of both, SIGKILL of the leader,
// the followers resumed: the control plane counts the shard unplaced (not handed to a follower),
// and once the leader is started again it serves the second value. Hand-off: both followers'
// fsyncs slowed so they trail the leader, 40 values put, SIGTERM at once: the shard moves to a
// follower that serves all 40. Under steady writes: a client of the leader puts fresh keys
// without pause (a refused put retried with the next key) through the SIGTERM; the leader must
// refuse them `draining` so its followers catch up and the hand-off succeeds, and the longest
// wait between two acks stays under the failover path's L + margin, as in handoff.test.ts.
import { readFile } from 'node:fs/promises';
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { type Assignment, type FelixCluster, scaled, startCluster } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';
import { clusterPerTest, gauge, served, text } from './support.js';

const STEP_MS = 60_000;
const TEST_MS = 180_000;
/** Follower fsyncs slowed this much trail a leader putting as fast as it acks. */
const SLOW_FSYNC_MS = 150;
/** Puts a leader cut from its followers acks alone before it is killed. */
const UNSHIPPED = 20;
const VALUES = 40;
/** Follower fsyncs slowed this much trail a leader under steady puts, and catch up once the
 *  puts stop reaching it. */
const STEADY_SLOW_FSYNC_MS = 15;
/** Puts acked before the SIGTERM, and again after the move. */
const STEADY_ACKS = 50;
/** A refused put is retried with the next key after this pause. */
const RETRY_PAUSE_MS = 20;

const clients: FelixClient[] = [];

interface StoredReport {
  kind: string;
  stream: string;
  leader: string;
  generation: number;
  leader_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
  halted: { node_id: string }[];
  in_sync: string[] | undefined;
}

/** Puts `w-<i>` under key `k<i % KEYS>`, one after another, until stopped or refused: the
 *  i-th write follows every earlier one in the leader's cache log. */
const KEYS = 50;
function steadyPuts(client: FelixClient) {
  let acked = -1;
  let stopped = false;
  const cache = client.cache('sessions');
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      try {
        await cache.put(`k${i % KEYS}`, `w-${i}`);
      } catch {
        return; // the leader died (or refused): the writer stops, nothing resent
      }
      acked = i;
    }
  })();
  return {
    lastAcked: () => acked,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

describe('cache shard failover and hand-off', () => {
  const held = clusterPerTest();
  afterEach(async () => {
    // A client of a killed broker may fail to close: the test's verdict is already in.
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  });

  async function cluster(env: Record<string, string> = {}): Promise<FelixCluster> {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      env,
      caches: [{ name: 'sessions', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    return c;
  }

  async function connectTo(c: FelixCluster, nodeId: string): Promise<FelixClient> {
    const node = c.nodes.find((n) => n.id === nodeId)!;
    const client = await c.connect({ servers: [node.url()] });
    clients.push(client);
    return client;
  }

  it(
    'a_cache_shard_is_never_promoted_to_followers_out_of_sync_past_the_lag_window',
    async () => {
      // A short lag window: paused followers fall out of sync within the test.
      const c = await cluster({ FELIX_REPLICA_LAG_MAX_MS: '1500' });
      const before = await cacheAssignment(c);
      const followers = before.replicas.filter((id) => id !== before.leader);
      const onLeader = await connectTo(c, before.leader);
      const cache = onLeader.cache('sessions');
      await cache.put('k', 'shipped');
      await reported(c, before, (r) =>
        r.replica_offsets.every((o) => o.durable_offset >= r.leader_offset),
      );
      const shippedAt = (await report(c, before))!.leader_offset;
      for (const f of followers) await c.pause(f);
      await cache.put('k', 'leader only');
      // The leader reports on: its log is now ahead of both (paused) followers, and once the
      // window has passed it names neither in sync.
      await reported(c, before, (r) => r.leader_offset > shippedAt && r.in_sync?.length === 0);
      await c.kill(before.leader);
      for (const f of followers) await c.resume(f);
      await waitFor(
        async () => (await unplacedShards(c)) >= 1,
        'the control plane to leave the cache shard unplaced',
        scaled(STEP_MS),
      );
      expect((await cacheAssignment(c)).leader).toBe(before.leader);
      await c.start(before.leader);
      const back = await connectTo(c, before.leader);
      const got = await served(
        () => back.cache('sessions').get('k'),
        'the returned leader to serve',
      );
      expect(text(got)).toBe('leader only');
    },
    TEST_MS,
  );

  it(
    'a_cache_leader_stopped_with_sigterm_hands_every_acknowledged_write_to_its_successor',
    async () => {
      const c = await cluster();
      const before = await cacheAssignment(c);
      const followers = before.replicas.filter((id) => id !== before.leader);
      const onLeader = await connectTo(c, before.leader);
      await onLeader.cache('sessions').put('warm', 'up');
      await reported(c, before, () => true);
      for (const f of followers) await c.slowFsync(f, SLOW_FSYNC_MS);
      const cache = onLeader.cache('sessions');
      for (let i = 0; i < VALUES; i++) await cache.put(`v${i}`, `value ${i}`);
      await c.stop(before.leader);
      const after = await waitFor(
        async () => {
          // The control plane may answer nothing useful mid-move: ask again.
          const a = await cacheAssignment(c).catch(() => undefined);
          return a && a.leader !== before.leader ? a : undefined;
        },
        'the cache shard to move to a follower',
        scaled(STEP_MS),
      );
      expect(followers).toContain(after.leader);
      for (const f of followers) await c.healFsync(f);
      const next = (await connectTo(c, after.leader)).cache('sessions');
      await served(() => next.get('warm'), 'the successor to serve');
      for (let i = 0; i < VALUES; i++)
        expect(text(await next.get(`v${i}`)), `v${i}`).toBe(`value ${i}`);
    },
    TEST_MS,
  );

  it(
    'a_cache_under_steady_writes_is_handed_off_on_sigterm_within_the_failover_bound',
    async () => {
      const c = await cluster();
      const before = await cacheAssignment(c);
      const followers = before.replicas.filter((id) => id !== before.leader);
      // Connected to the leader: its puts reach the leader's own session, not a forward.
      const cache = (await connectTo(c, before.leader)).cache('sessions');
      await cache.put('warm', 'up');
      await reported(c, before, () => true);
      for (const f of followers) await c.slowFsync(f, STEADY_SLOW_FSYNC_MS);
      const acked: { i: number; at: number }[] = [];
      let stopped = false;
      const writing = (async () => {
        for (let i = 0; !stopped; i++) {
          try {
            await cache.put(`p${i}`, `v${i}`);
            acked.push({ i, at: performance.now() });
          } catch {
            // Refused (or unknown): never counted as acked; the next key after a pause.
            await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
          }
        }
      })();
      await waitFor(() => acked.length >= STEADY_ACKS, 'puts to be acked', scaled(STEP_MS));
      await c.stop(before.leader);
      const after = await waitFor(
        async () => {
          // The control plane may answer nothing useful mid-move: ask again.
          const a = await cacheAssignment(c).catch(() => undefined);
          return a && a.leader !== before.leader ? a : undefined;
        },
        'the cache shard to move to a follower',
        scaled(STEP_MS),
      );
      const moved = acked.length;
      await waitFor(
        () => acked.length >= moved + STEADY_ACKS,
        'puts to be acked by the successor',
        scaled(STEP_MS),
      );
      stopped = true;
      await writing;
      for (const f of followers) await c.healFsync(f);
      const outcomes = (await readFile(c.node(before.leader).logPath, 'utf8'))
        .split('\n')
        .filter((line) => line.includes('"hand-off finished"'))
        .map((line) => (JSON.parse(line) as { outcome: string }).outcome);
      expect(outcomes).toEqual(['handed_off']);
      const next = (await connectTo(c, after.leader)).cache('sessions');
      await served(() => next.get('warm'), 'the successor to serve');
      const lost: string[] = [];
      for (const { i } of acked) if (text(await next.get(`p${i}`)) !== `v${i}`) lost.push(`p${i}`);
      expect(lost).toEqual([]);
      let longestGapMs = 0;
      for (let k = 1; k < acked.length; k++)
        longestGapMs = Math.max(longestGapMs, acked[k]!.at - acked[k - 1]!.at);
      console.log(`acked ${acked.length} puts, longest gap ${Math.round(longestGapMs)} ms`);
      // The failover path waits out L + margin of silence; a hand-off moves the shard at once.
      expect(longestGapMs).toBeLessThan(CP_EXPIRY_TIMEOUT_MS * 1.25);
    },
    TEST_MS,
  );

  /** A watcher of a `leader` cache held on its last change while its leader fails over, then
   *  let go after the new leader's first writes, or (`rewatchFirst`) before them. */
  async function watchAcrossFailover(rewatchFirst: boolean): Promise<void> {
    const c = await cluster();
    const before = await cacheAssignment(c);
    const followers = before.replicas.filter((id) => id !== before.leader);
    const watcher = await c.connect({
      servers: [c.node(followers[0]!).url()],
      failoverDeadlineMs: scaled(STEP_MS),
    });
    clients.push(watcher);
    // The watcher folds the changes into a map, as a cache mirror does.
    const state = new Map<string, string | undefined>();
    const kinds = new Set<string>();
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const stop = new AbortController();
    const changes = watcher.cache('sessions').watch(
      { prefix: 'k' },
      {
        fromOffset: 0,
        signal: stop.signal,
      },
    );
    const watching = (async () => {
      for await (const e of changes) {
        kinds.add(e.type);
        if (e.type === 'resnapshot') state.clear();
        if (e.type === 'delete') state.delete(e.key);
        if (e.type !== 'put') continue;
        state.set(e.key, text(e.value));
        // Busy with the old leader's last put while the failover happens.
        if (e.key === 'k-cut4') await released;
      }
    })().catch(() => undefined); // ended by the test's abort
    const onLeader = (await connectTo(c, before.leader)).cache('sessions');
    // The first put may find the shard still opening on its leader.
    await served(() => onLeader.put('k0', 'v0'), 'the leader to serve');
    for (let i = 1; i < 10; i++) await onLeader.put(`k${i}`, `v${i}`);
    await reported(
      c,
      before,
      (r) =>
        r.leader_offset >= 10 &&
        r.in_sync?.length === 2 &&
        r.replica_offsets.every((o) => o.durable_offset >= r.leader_offset),
    );
    // Acked by the leader alone, seen by the watcher, then lost with it (`leader` exposure).
    for (const f of followers) await c.partition(before.leader, f);
    for (let i = 0; i < 5; i++) await onLeader.put(`k-cut${i}`, 'lost');
    await waitFor(() => state.has('k-cut4') || undefined, 'k-cut4 watched', scaled(STEP_MS));
    await c.kill(before.leader);
    await c.heal();
    const promoted = await waitFor(
      async () => {
        // The control plane may answer nothing useful mid-move: ask again.
        const a = await cacheAssignment(c).catch(() => undefined);
        return a && a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(STEP_MS),
    );
    const next = (await connectTo(c, promoted.leader)).cache('sessions');
    if (rewatchFirst) {
      // The watcher re-watches on the new leader before it writes: the start it is given
      // lies below the position it had reached.
      release();
      await waitFor(() => kinds.has('state_complete') || undefined, 'the restart', scaled(STEP_MS));
    }
    for (let i = 0; i < 10; i++)
      await served(() => next.put(`k-after${i}`, `a${i}`), `put k-after${i}`);
    release();
    await waitFor(() => state.get('k-after9') === 'a9' || undefined, 'k-after9', scaled(STEP_MS));
    stop.abort();
    await watching;
    // The watcher was told to start over and holds what the new leader holds: every value it
    // wrote, none of the lost ones.
    expect(kinds.has('resnapshot')).toBe(true);
    const want = new Map<string, string | undefined>();
    for (let i = 0; i < 10; i++) want.set(`k${i}`, `v${i}`);
    for (let i = 0; i < 10; i++) want.set(`k-after${i}`, `a${i}`);
    expect(Object.fromEntries([...state].sort())).toEqual(Object.fromEntries([...want].sort()));
  }

  it(
    'a_cache_watch_sees_every_put_the_new_leader_acks_after_a_failover',
    () => watchAcrossFailover(false),
    TEST_MS,
  );

  it(
    'a_cache_watch_that_rewatches_before_the_new_leader_writes_misses_none_of_its_puts',
    () => watchAcrossFailover(true),
    TEST_MS,
  );

  it(
    'a_leader_cache_fails_over_under_steady_writes_and_its_old_leader_drops_its_unshipped_writes',
    async () => {
      const c = await cluster({ FELIX_DURABLE_FSYNC_MODE: 'onCommit' });
      const before = await cacheAssignment(c);
      const followers = before.replicas.filter((id) => id !== before.leader);
      const writer = steadyPuts(await connectTo(c, before.leader));
      await reported(c, before, (r) => r.leader_offset > 100 && r.in_sync?.length === 2);
      // Cut from both followers (not from the control plane) within the lag window, the leader
      // goes on acking alone: writes no follower holds, which the failover loses.
      for (const f of followers) await c.partition(before.leader, f);
      // The writer's put in flight at the cut may have been shipped before it, its ack not yet
      // heard: only the puts after that one are certainly unshipped.
      const cutAt = writer.lastAcked() + 1;
      await waitFor(
        () => writer.lastAcked() >= cutAt + UNSHIPPED,
        'the leader to ack puts alone',
        scaled(STEP_MS),
      );
      await c.kill(before.leader);
      await writer.stop();
      const promoted = await waitFor(
        async () => {
          // The control plane may answer nothing useful mid-move: ask again.
          const a = await cacheAssignment(c).catch(() => undefined);
          return a && a.generation > before.generation ? a : undefined;
        },
        'an in-sync follower to be promoted',
        scaled(STEP_MS),
      );
      expect(followers).toContain(promoted.leader);
      await c.heal();
      const next = (await connectTo(c, promoted.leader)).cache('sessions');
      await served(() => next.get('k0'), 'the new leader to serve');
      // A prefix of the old leader's log: some cut C such that every key holds its last write
      // below C; what is lost is acked writes at or above C only (the `leader` exposure).
      const seen: (number | null)[] = [];
      for (let k = 0; k < KEYS; k++) {
        const v = text(await next.get(`k${k}`));
        seen.push(v === undefined ? null : Number(v.slice(2)));
      }
      const cut = Math.max(...seen.map((i) => i ?? -1)) + 1;
      for (let k = 0; k < KEYS; k++) {
        const last = cut - 1 - ((((cut - 1 - k) % KEYS) + KEYS) % KEYS);
        expect(seen[k], `k${k}`).toBe(last >= 0 ? last : null);
      }
      const lost = writer.lastAcked() + 1 - cut;
      console.log(
        `acked ${writer.lastAcked() + 1} puts, the new leader holds ${cut}: ${lost} lost`,
      );
      // The old leader held acked writes its successor lacks: a divergent suffix.
      expect(lost).toBeGreaterThanOrEqual(UNSHIPPED);
      await next.put('after', 'failover');
      // Back as a follower, it drops that suffix and follows: level with the new leader's log
      // and never halted (an unrepaired suffix would halt it `diverged`).
      await c.start(before.leader);
      await waitFor(
        async () => {
          // Its return may add it back to the set at a newer generation: the current one.
          const r = await report(c, await cacheAssignment(c));
          const back = r?.replica_offsets.find((o) => o.node_id === before.leader);
          return (
            r !== undefined &&
            r.leader === promoted.leader &&
            back !== undefined &&
            back.durable_offset === r.leader_offset &&
            !r.halted.some((h) => h.node_id === before.leader)
          );
        },
        'the old leader level with its successor and not halted',
        scaled(STEP_MS),
      );
    },
    TEST_MS,
  );
});

async function cacheAssignment(c: FelixCluster): Promise<Assignment> {
  const a = (await c.assignments()).find((x) => x.kind === 'cache' && x.stream === 'sessions');
  if (a === undefined) throw new Error('no assignment of cache sessions');
  return a;
}

async function report(c: FelixCluster, a: Assignment): Promise<StoredReport | undefined> {
  const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReport[] };
  return page.items.find(
    (r) => r.kind === 'cache' && r.stream === 'sessions' && r.generation === a.generation,
  );
}

/** Waits until the control plane holds a report of the cache shard at `a`'s generation that
 *  satisfies `ok`. */
async function reported(
  c: FelixCluster,
  a: Assignment,
  ok: (r: StoredReport) => boolean,
): Promise<void> {
  await waitFor(
    async () => {
      const r = await report(c, a);
      return r !== undefined && ok(r);
    },
    'a replica report of the cache shard',
    scaled(STEP_MS),
  );
}

async function unplacedShards(c: FelixCluster): Promise<number> {
  const page = await (await fetch(`${c.controlPlaneUrl}/metrics`)).text();
  return gauge(page, 'felix_controlplane_unplaced_shards');
}
