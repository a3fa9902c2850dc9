// Goal: the pieces of control-plane mode that need no processes: the resnapshot signals of a feed,
// a feed follower that resnapshots on a gap and survives failed calls, membership that
// re-registers with a newer incarnation when the control plane stops counting the node live, and
// catalog-feed parsing that never throws on any item shape.
// Method: in-process fakes of the control-plane client (same method shapes), fast-check for items.
import { releasedTcpPort, waitFor } from '@felix/testing-harness';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type {
  ControlPlaneClient,
  FeedPage,
  RegisterRequest,
  Snapshot,
} from '../src/cluster/control-plane-client.js';
import { ControlPlaneClient as LiveControlPlaneClient } from '../src/cluster/control-plane-client.js';
import { ownersOf, topologyOf } from '../src/cluster/discovery-handlers.js';
import { FeedFollower, resnapshotReason } from '../src/cluster/feed-follower.js';
import { nodeSpec } from '../src/cluster/cluster-node.js';
import { Membership } from '../src/cluster/membership.js';
import {
  assignmentFrom,
  cacheFromCatalog,
  replicaGenerationOf,
  streamFromCatalog,
} from '../src/cluster/feed-items.js';
import { followerLogOptions } from '../src/cluster/internal-node.js';
import { keepNewerGenerations, ownerRefusal } from '../src/cluster/shard-refs.js';
import { NotLeaderRefusal } from '../src/session/refusal.js';
import { loadConfig } from '../src/config/load.js';
import { retentionOf } from '../src/streams/durable-store.js';
import { ControlPlaneRefusedError, ControlPlaneUnavailableError } from '../src/errors.js';

const silent = pino({ level: 'silent' });

describe('control-plane feed signals', () => {
  it('a_feed_page_signals_a_resnapshot_on_a_gap_or_a_reset', () => {
    expect(resnapshotReason(5, { items: [{ seq: 5 }], nextSeq: 6 })).toBeNull();
    expect(resnapshotReason(5, { items: [], nextSeq: 5 })).toBeNull();
    expect(resnapshotReason(5, { items: [{ seq: 7 }], nextSeq: 8 })).toBe('gap_in_history');
    expect(resnapshotReason(5, { items: [], nextSeq: 9 })).toBe('gap_in_history');
    expect(resnapshotReason(5, { items: [], nextSeq: 2 })).toBe('sequence_reset');
  });

  it('a_feed_follower_resnapshots_after_trimmed_history_and_retries_failed_calls', async () => {
    const calls: string[] = [];
    let snapshots = 0;
    let pages = 0;
    const fake = {
      async snapshot(): Promise<Snapshot> {
        snapshots++;
        calls.push('snapshot');
        return { items: [`s${snapshots}`], nextSeq: snapshots === 1 ? 10 : 50 };
      },
      async changes(_feed: string, since: number): Promise<FeedPage> {
        pages++;
        calls.push(`changes@${since}`);
        if (pages === 1) throw new ControlPlaneUnavailableError('changes', 'connection refused');
        if (pages === 2) return { items: [], nextSeq: 40 }; // history trimmed past `since`
        if (pages === 3)
          return { items: [{ seq: 50, op: 'created', key: {}, value: 'c50' }], nextSeq: 51 };
        await new Promise((r) => setTimeout(r, 5));
        return { items: [], nextSeq: since };
      },
    } as unknown as ControlPlaneClient;
    const applied: unknown[] = [];
    const resyncs: string[] = [];
    const follower = new FeedFollower(
      fake,
      'streams',
      0,
      {
        snapshot: (items) => applied.push(['snapshot', ...items]),
        changes: (items) => applied.push(['changes', ...items.map((c) => c.value)]),
      },
      silent,
      (reason) => resyncs.push(reason),
    );
    follower.start();
    await waitFor(() => applied.length >= 3, 'snapshot, resnapshot and a change');
    await follower.stop();
    expect(applied.slice(0, 3)).toEqual([
      ['snapshot', 's1'],
      ['snapshot', 's2'],
      ['changes', 'c50'],
    ]);
    expect(resyncs).toEqual(['gap_in_history']);
    // The failed call was retried from the same position before the gap was seen.
    expect(calls.slice(0, 5)).toEqual([
      'snapshot',
      'changes@10',
      'changes@10',
      'snapshot',
      'changes@50',
    ]);
  });
  it('a_feed_follower_told_to_resync_abandons_its_long_poll_and_resnapshots_at_once', async () => {
    // A deposed node must hear where its shards went now, not after a 20 s long poll.
    const calls: string[] = [];
    const fake = {
      async snapshot(): Promise<Snapshot> {
        calls.push('snapshot');
        return { items: [`s${calls.length}`], nextSeq: 1 };
      },
      changes(_feed: string, _since: number, _wait: number, signal: AbortSignal) {
        calls.push('changes');
        // A long poll that never answers unless abandoned.
        return new Promise<FeedPage>((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      },
    } as unknown as ControlPlaneClient;
    const applied: unknown[][] = [];
    const answered: number[] = [];
    const follower = new FeedFollower(
      fake,
      'shard-assignments',
      0,
      { snapshot: (items) => applied.push(items), changes: () => undefined },
      silent,
      () => undefined,
      (sentAt) => answered.push(sentAt),
    );
    follower.start();
    await waitFor(() => calls.includes('changes'), 'the first long poll');
    const resyncAt = performance.now();
    follower.resync();
    await waitFor(() => applied.length >= 2, 'a second snapshot');
    await follower.stop();
    expect(calls.slice(0, 3)).toEqual(['snapshot', 'changes', 'snapshot']);
    expect(answered).toHaveLength(2);
    expect(answered[1]!).toBeGreaterThan(resyncAt);
  });
});

const membershipSpec = {
  node_id: 'n1',
  advertise_addr: 'a:1',
  client_addr: 'a:1',
  zone: null,
  labels: {},
  capacity: { max_shards: 0, weight: 1 },
  durable_storage: false,
};

/** Node n1's membership over a fake control-plane client. */
function membershipOf(fake: ControlPlaneClient): Membership {
  return new Membership(fake, { ...membershipSpec }, silent, new Registry());
}

describe('control-plane membership', () => {
  it('an_unreachable_control_plane_is_reported_with_the_transports_reason', async () => {
    // A port nothing listens on: a closed server's, freed a moment ago.
    const port = await releasedTcpPort();
    const client = new LiveControlPlaneClient(`http://127.0.0.1:${port}`);
    const err = await client.deregister('n0', 2_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlPlaneUnavailableError);
    // undici says only "fetch failed"; the log line must say why.
    expect((err as Error).message).toMatch(
      /^control plane deregister: connect ECONNREFUSED 127\.0\.0\.1:\d+$/,
    );
    const bad = await new LiveControlPlaneClient('http://127.0.0.1:6000')
      .deregister('n0', 2_000)
      .catch((e: unknown) => e);
    expect((bad as Error).message).toBe('control plane deregister: bad port');
  });

  it('a_control_plane_refusing_the_brokers_credential_says_which_setting_gives_it', async () => {
    // Before, a broker started without a node credential logged `401 ... needs Authorization:
    // Bearer <felix-controlplane token>` twice a second without naming the setting to fix.
    const unauthorized = async () =>
      new Response(JSON.stringify({ code: 'FELIX_CONTROLPLANE_UNAUTHENTICATED', message: 'no' }), {
        status: 401,
        headers: { 'content-type': 'application/json' },
      });
    const none = new LiveControlPlaneClient('http://cp', undefined, { fetch: unauthorized });
    const err = await none.snapshot('streams').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlPlaneRefusedError);
    expect((err as Error).message).toMatch(/sends no node credential: set FELIX_NODE_TOKEN or/);
    const some = new LiveControlPlaneClient('http://cp', async () => 'tok', {
      fetch: unauthorized,
    });
    const refused = await some.snapshot('streams').catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/the node credential .* was refused: expired/);
  });

  it('a_replica_status_answer_yields_only_well_formed_transfers', async () => {
    const good = {
      tenant_id: 't1',
      namespace: 'ns',
      kind: 'stream',
      stream: 'orders',
      shard: 1,
      generation: 4,
      to: 'n2',
    };
    const answer = {
      shards: [],
      transfers: [
        good,
        { ...good, kind: 'table' },
        { ...good, shard: -1 },
        { ...good, generation: '4' },
        { ...good, to: 7 },
        'nonsense',
      ],
    };
    const fetchOk = async () =>
      new Response(JSON.stringify(answer), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    const client = new LiveControlPlaneClient('http://cp', undefined, { fetch: fetchOk });
    expect(await client.replicaStatus('n1', 1, [], 1_000)).toEqual([good]);
    // An older control plane's answer names none.
    const none = async () =>
      new Response(JSON.stringify({ shards: [] }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    const older = new LiveControlPlaneClient('http://cp', undefined, { fetch: none });
    expect(await older.replicaStatus('n1', 1, [], 1_000)).toEqual([]);
  });

  it('membership_log_lines_name_the_node_once', async () => {
    // Membership logs through the cluster's child logger, which carries node_id already: the
    // lines said `"node_id":"n1","node_id":"n1"`, which JSON readers keep only one of.
    const raw: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => raw.push(line) }).child({
      node_id: 'n1',
    });
    const fake = {
      url: 'fake',
      register: async () => ({ lifecycle: 'live', heartbeatIntervalMs: 5, expiryTimeoutMs: 50 }),
      heartbeat: async () => ({ lifecycle: 'live', heartbeatIntervalMs: 5 }),
      async deregister() {},
    } as unknown as ControlPlaneClient;
    const spec = { ...membershipSpec };
    const m = new Membership(fake, spec, logger, new Registry());
    m.start();
    await waitFor(() => m.isRegistered, 'registered');
    await m.leave(100);
    const said = raw.filter((l) => /registered|deregistered/.test(l));
    expect(said).toHaveLength(2);
    for (const line of said) expect(line.match(/"node_id"/g)).toHaveLength(1);
  });

  it('replica_reports_are_numbered_only_while_the_control_plane_says_it_reads_the_number', async () => {
    // A control plane older than the report's `seq` refuses the field, and with it every report
    // the broker sends: the number goes only to one that lists it.
    let features: string[] | undefined;
    let heartbeats = 0;
    const fake = {
      url: 'fake',
      register: async () => ({
        lifecycle: 'live',
        heartbeatIntervalMs: 5,
        expiryTimeoutMs: 50,
        controlPlaneFeatures: features,
      }),
      heartbeat: async () => {
        heartbeats++;
        return { lifecycle: 'live', heartbeatIntervalMs: 5, controlPlaneFeatures: features };
      },
      async deregister() {},
    } as unknown as ControlPlaneClient;
    const m = membershipOf(fake);
    m.start();
    await waitFor(() => m.isRegistered, 'registered');
    expect(m.nextReportSeq()).toBeUndefined();
    features = ['replica_report_seq'];
    const seen = heartbeats;
    await waitFor(() => heartbeats > seen + 1, 'a heartbeat listing the feature');
    const first = m.nextReportSeq();
    expect(first).toBeGreaterThanOrEqual(1);
    expect(m.nextReportSeq()).toBe(first! + 1);
    // The creation id goes the same way: only to a control plane that lists it.
    expect(m.reportsUid).toBe(false);
    features = ['replica_report_seq', 'replica_report_uid'];
    const later = heartbeats;
    await waitFor(() => heartbeats > later + 1, 'a heartbeat listing the uid');
    expect(m.reportsUid).toBe(true);
    await m.leave(100);
  });

  it('a_node_answered_down_re_registers_with_a_newer_incarnation', async () => {
    const registrations: number[] = [];
    let heartbeats = 0;
    const fake = {
      url: 'fake',
      async register(req: RegisterRequest) {
        registrations.push(req.incarnation);
        return { lifecycle: 'live', heartbeatIntervalMs: 5, expiryTimeoutMs: 50 };
      },
      async heartbeat(_id: string, incarnation: number) {
        heartbeats++;
        expect(incarnation).toBe(registrations[registrations.length - 1]);
        // The second heartbeat learns the node was marked down meanwhile.
        return { lifecycle: heartbeats === 2 ? 'down' : 'live', heartbeatIntervalMs: 5 };
      },
      async deregister() {},
    } as unknown as ControlPlaneClient;
    const m = membershipOf(fake);
    m.start();
    await waitFor(() => registrations.length >= 2 && heartbeats >= 3, 'a re-registration');
    await m.leave(100);
    expect(registrations[1]!).toBeGreaterThan(registrations[0]!);
    expect(m.isRegistered).toBe(false);
  });

  it('a_node_answered_down_writes_nothing_until_its_assignment_feed_answers_after_it', async () => {
    // Found by a 3-broker campaign (seed 305): a leader cut from the control plane was marked
    // down and its cache shard given away; back, it re-registered (lease renewed) 2 s before its
    // assignment feed's next retry and acked cache writes as leader meanwhile, all lost.
    let registrations = 0;
    let heartbeats = 0;
    let markedDown = false;
    const fake = {
      url: 'fake',
      async register() {
        registrations++;
        return { lifecycle: 'live', heartbeatIntervalMs: 5, expiryTimeoutMs: 60_000 };
      },
      async heartbeat() {
        heartbeats++;
        const lifecycle = markedDown ? 'down' : 'live';
        markedDown = false;
        return { lifecycle, heartbeatIntervalMs: 5, expiryTimeoutMs: 60_000 };
      },
      async deregister() {},
    } as unknown as ControlPlaneClient;
    const m = membershipOf(fake);
    let deposedAt: number | undefined;
    m.lease.onDeposed = () => {
      deposedAt = performance.now();
    };
    m.start();
    await waitFor(() => m.lease.held, 'the first registration');
    const before = performance.now();
    markedDown = true;
    const seen = heartbeats;
    await waitFor(() => registrations >= 2 && heartbeats >= seen + 2, 'a re-registration');
    // Registered and heartbeating again, but the shards it leads are what it heard before.
    expect(m.lease.held).toBe(false);
    expect(deposedAt).toBeDefined();
    m.lease.assignmentsSeen(before);
    expect(m.lease.held).toBe(false);
    m.lease.assignmentsSeen(performance.now());
    expect(m.lease.held).toBe(true);
    await m.leave(100);
  });
});

describe('control-plane catalog items', () => {
  it('catalog_feed_items_of_any_shape_never_throw', () => {
    const cfg = loadConfig({});
    fc.assert(
      fc.property(fc.anything(), (item) => {
        const s = streamFromCatalog(item, cfg);
        const c = cacheFromCatalog(item, cfg);
        if (s !== null) expect(s.shards).toBeGreaterThanOrEqual(1);
        if (c !== null) expect(c.shards).toBeGreaterThanOrEqual(1);
      }),
    );
    expect(
      streamFromCatalog(
        {
          tenant_id: 't',
          namespace: 'n',
          stream: 's',
          shards: 3,
          durable: true,
          retention: { max_age_seconds: 60, max_size_bytes: null },
          routing: 'jump_hash',
        },
        cfg,
      ),
    ).toMatchObject({
      shards: 3,
      durable: true,
      retention: { max_age_seconds: 60, max_bytes: null },
      routing: 'jump_hash',
    });
  });
});

describe('replica sets', () => {
  it('a_broker_follows_a_shard_only_where_the_replica_set_names_it_and_not_as_leader', () => {
    const base = {
      tenant_id: 't1',
      namespace: 'default',
      kind: 'stream',
      stream: 'orders',
      shard: 0,
      leader: 'b1',
      generation: 4,
    };
    const a = assignmentFrom({ ...base, replicas: ['b1', 'b2', 'b3'] });
    expect(a?.replicas).toEqual(['b1', 'b2', 'b3']);
    expect(replicaGenerationOf(a!, 'b2')).toBe(4);
    expect(replicaGenerationOf(a!, 'b1')).toBeUndefined(); // the leader ships, never follows
    expect(replicaGenerationOf(a!, 'b9')).toBeUndefined();
    // A feed item without replicas (an older control plane) names the leader alone.
    expect(assignmentFrom(base)?.replicas).toEqual(['b1']);
    expect(replicaGenerationOf(undefined, 'b2')).toBeUndefined();
  });

  it('after_the_control_planes_history_went_back_a_broker_keeps_the_newer_generations_it_knew', () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) });
    const before = new Map([
      ['a', { generation: 5, leader: 'n1' }],
      ['b', { generation: 2, leader: 'n1' }],
      ['gone', { generation: 9, leader: 'n1' }],
    ]);
    // The restored snapshot: `a` older than known, `b` newer, `gone` not named at all.
    const now = new Map([
      ['a', { generation: 3, leader: 'n2' }],
      ['b', { generation: 4, leader: 'n3' }],
    ]);
    expect(keepNewerGenerations(before, now, log)).toBe(1);
    expect(now.get('a')).toEqual({ generation: 5, leader: 'n1' });
    expect(now.get('b')).toEqual({ generation: 4, leader: 'n3' });
    // A shard the control plane no longer names is not brought back.
    expect(now.has('gone')).toBe(false);
    expect(lines.join('')).toMatch(/older generations than this broker holds/);
  });

  it('a_followers_copy_of_a_stream_takes_the_streams_retention', () => {
    const cfg = loadConfig({ FELIX_DURABLE_STORAGE_DIR: '/tmp/felix-never-opened' });
    const item = {
      tenant_id: 't1',
      namespace: 'default',
      stream: 'orders',
      shards: 1,
      durable: true,
      retention: { max_size_bytes: 1_048_576, max_age_seconds: 60 },
    };
    const stream = streamFromCatalog(item, cfg)!;
    const ref = { tenantId: 't1', namespace: 'default', stream: 'orders', shard: 0, generation: 2 };
    const copy = followerLogOptions(cfg, ref, 'stream', stream);
    expect(copy.retention).toEqual(retentionOf(cfg, stream));
    expect(copy.retention).toMatchObject({ maxBytes: 1_048_576, maxAgeMs: 60_000 });
    // Without bounds, or before the catalog names the stream, the copy keeps everything.
    const unbounded = streamFromCatalog({ ...item, retention: undefined }, cfg)!;
    expect(followerLogOptions(cfg, ref, 'stream', unbounded).retention).toBeUndefined();
    expect(followerLogOptions(cfg, ref, 'stream').retention).toBeUndefined();
    // Group state keeps its own layout, with no stream bounds.
    expect(followerLogOptions(cfg, ref, 'groupCursors', stream).retention).toBeUndefined();
  });
});

describe('discovery answers', () => {
  const table = {
    nodeAddresses: new Map([
      ['n1', '127.0.0.1:7001'],
      ['n2', '127.0.0.1:7002'],
      ['n3', '127.0.0.1:7003'],
    ]),
    nodeLifecycles: new Map([
      ['n1', 'live'],
      ['n2', 'down'],
      ['n3', 'draining'],
    ]),
    assignment: (_k: string, _t: string, _ns: string, _name: string, shard: number) =>
      shard === 2
        ? undefined
        : {
            tenant_id: 't1',
            namespace: 'default',
            kind: 'stream' as const,
            stream: 'orders',
            shard,
            leader: shard === 0 ? 'n1' : 'n2',
            replicas: ['n1', 'n2', 'n3'],
            generation: 7 + shard,
          },
  };

  it('the_topology_names_live_brokers_and_shard_owners_name_each_leader_and_generation', () => {
    expect(topologyOf(table)).toEqual([{ node_id: 'n1', addr: '127.0.0.1:7001' }]);
    const deps = { table, width: () => 3 };
    const msg = { tenant_id: 't1', namespace: 'default', name: 'orders', kind: 'stream' as const };
    expect(ownersOf(deps, msg)).toEqual([
      { shard: 0, node_id: 'n1', addr: '127.0.0.1:7001', generation: 7 },
      {
        shard: 1,
        node_id: 'n2',
        addr: '127.0.0.1:7002',
        generation: 8,
        unavailable: 'leader_not_live',
      },
      { shard: 2, generation: 0, unavailable: 'not_assigned' },
    ]);
    expect(ownersOf({ table, width: () => undefined }, msg)).toEqual([]);
  });

  it('a_shard_whose_leader_is_down_or_gone_is_refused_unavailable_rather_than_redirected', () => {
    const owner = {
      kind: 'cache' as const,
      tenant: 't1',
      namespace: 'default',
      name: 'users',
      shard: 0,
      nodeId: 'n2',
      generation: 3,
      addr: '127.0.0.1:7002',
    };
    // A live (or draining) leader is a redirect, which a write's handler forwards.
    for (const life of ['live', 'draining', undefined]) {
      expect(ownerRefusal(owner, 'n1', life)).toBeInstanceOf(NotLeaderRefusal);
    }
    // One the book says is down or left kept the shard because only it holds its data: a
    // redirect could only fail to connect, so the answer is a typed, retryable unavailability.
    for (const life of ['down', 'left']) {
      const r = ownerRefusal(owner, 'n1', life);
      expect(r).not.toBeInstanceOf(NotLeaderRefusal);
      expect(r).toMatchObject({ wireCode: 'shard_unavailable', reason: 'leader_not_live' });
      expect(r.message).toContain('node n2');
    }
  });
});

describe('registration', () => {
  it('a_durable_broker_registers_without_the_durable_storage_field_an_older_control_plane_refuses', () => {
    // The control plane refuses unknown fields, and one older than `durable_storage` would
    // answer 400 to every new broker: a durable broker leaves the field out (absent reads as
    // durable), so only an in-memory one needs a control plane that knows it.
    const dir = mkdtempSync(join(tmpdir(), 'felix-spec-'));
    const durable = nodeSpec(loadConfig({ FELIX_DURABLE_STORAGE_DIR: dir }), 5000);
    expect('durable_storage' in durable).toBe(false);
    const inMemory = nodeSpec(loadConfig({}), 5000);
    expect(inMemory.durable_storage).toBe(false);
  });
});
