// Goal: which requests a broker still answers from its own copy of a shard once the control
// plane has named another leader, while its reconcile pass has not let the shard go yet. A cache
// get, a watch or a group request answered there reads (or writes) state the new leader no longer
// shares: a put already forwarded to the new leader would be missing from the get, a group ack
// would be lost with the old copy. A stream subscription reads by offset and may stay until the
// release ends it. A prefix watch that names no shard of a multi-shard cache belongs to no one
// shard: it is not refused as shard 0's.
// Method: a ShardTable fed by hand (no control plane), with a replication stand-in whose
// follower release for one cache blocks until the test lets it go: that keeps a reconcile pass
// running, so an assignment change that arrives meanwhile waits, as it does behind a slow pass.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Catalog } from '../src/catalog/catalog.js';
import type { ShardTable as ShardTableType } from '../src/cluster/shard-table.js';
import { ShardTable } from '../src/cluster/shard-table.js';
import { loadConfig } from '../src/config/load.js';
import { NotLeaderRefusal } from '../src/session/refusal.js';
import type { Message } from '@felix/wire';

const silent = pino({ level: 'silent' });
const T = 't1';
const NS = 'ns';

interface Gate {
  readonly promise: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A table for node n1 with a replication stand-in; releasing cache `blocked`'s copies waits on `hold`. */
function table(blocked: string, hold: Gate, registry = new Registry()): ShardTableType {
  const catalog = {
    installStream: () => undefined,
    removeStream: () => undefined,
  } as unknown as Catalog;
  const t = new ShardTable(
    loadConfig({}),
    catalog,
    'n1',
    () => Promise.reject(new Error('no durable streams in this test')),
    { onDrop: () => undefined, onApply: () => undefined },
    silent,
    registry,
  );
  t.replication = {
    replicator: {
      stop: async () => undefined,
      ship: async () => undefined,
      reports: () => [],
      moving: new Map<string, boolean>(),
    },
    releaseFollower: (ref: { stream: string }) =>
      ref.stream === blocked ? hold.promise : Promise.resolve(),
    refreshFollowerRetention: async () => 0,
    logOptions: () => ({}),
    riding: {
      admit: () => undefined,
      open: async () => null,
      release: async () => undefined,
      holdToCommit: () => null,
    },
  } as unknown as NonNullable<ShardTableType['replication']>;
  t.nodeAddresses.set('n2', '127.0.0.1:7002');
  return t;
}

function assignment(kind: 'stream' | 'cache', name: string, leader: string, generation: number) {
  return {
    tenant_id: T,
    namespace: NS,
    kind,
    stream: name,
    shard: 0,
    leader,
    replicas: ['n1', 'n2'],
    generation,
  };
}

function change(value: Record<string, unknown>) {
  return { op: 'put', key: {}, value } as never;
}

const cacheGet = (cache: string) =>
  ({ type: 'cache_get', tenant_id: T, namespace: NS, cache, key: 'k' }) as unknown as Message;

describe('routing while a shard is being let go', () => {
  it('a_copy_waiting_for_its_floor_holds_up_only_the_requests_this_broker_would_serve', async () => {
    const hold = gate();
    const t = table('none', gate());
    // The discard of the old copy waits on `hold`: the gate stays up meanwhile.
    t.shardFiles = {
      discard: () => hold.promise,
      lineages: { floorOf: () => 0, write: async () => undefined, remove: async () => undefined },
    };
    t.cachesFeed.snapshot([
      { tenant_id: T, namespace: NS, cache: 'led', shards: 1 },
      { tenant_id: T, namespace: NS, cache: 'followed', shards: 1 },
    ]);
    t.assignmentsFeed.snapshot([
      { ...assignment('cache', 'led', 'n1', 4), floor_generation: 4 },
      { ...assignment('cache', 'followed', 'n2', 4), floor_generation: 4 },
    ]);
    // Led here: refused until the copy is gone. Followed here: the leader answers at once.
    const led = t.refuseMessage(cacheGet('led'));
    expect(led?.reason).toBe('not_ready');
    expect(led?.message).toContain('accepted loss');
    const followed = t.refuseMessage(cacheGet('followed'));
    expect(followed).toBeInstanceOf(NotLeaderRefusal);
    expect((followed as NotLeaderRefusal).owner.nodeId).toBe('n2');
    expect(t.replicaRole('cache', T, NS, 'followed', 0)).toBeUndefined();
    hold.open();
    await t.settled();
    expect(t.refuseMessage(cacheGet('led'))?.message ?? '').not.toContain('accepted loss');
    expect(t.replicaRole('cache', T, NS, 'followed', 0)).toEqual({ generation: 4, follower: true });
  });

  it('a_cache_read_goes_to_the_leader_the_assignment_names_even_while_this_broker_still_serves', async () => {
    const hold = gate();
    const t = table('held-open', hold);
    t.cachesFeed.snapshot([
      { tenant_id: T, namespace: NS, cache: 'c', shards: 1 },
      { tenant_id: T, namespace: NS, cache: 'held-open', shards: 1 },
    ]);
    t.assignmentsFeed.snapshot([assignment('cache', 'c', 'n1', 1)]);
    await t.settled();
    expect(t.refuseMessage(cacheGet('c'))).toBeNull();

    // A pass that starts leading `held-open` stays running until the gate opens.
    t.assignmentsFeed.changes([change(assignment('cache', 'held-open', 'n1', 1))]);
    // Meanwhile the control plane gives `c` to n2: this broker still holds its copy.
    t.assignmentsFeed.changes([change(assignment('cache', 'c', 'n2', 2))]);
    expect(t.routeView('cache', T, NS, 'c', 0).serving).toBe(true);

    for (const type of ['cache_get', 'cache_watch', 'cache_put', 'counter_get']) {
      const refusal = t.refuseMessage({ ...cacheGet('c'), type } as unknown as Message);
      expect(refusal, type).toBeInstanceOf(NotLeaderRefusal);
      expect((refusal as NotLeaderRefusal).owner.nodeId).toBe('n2');
      expect((refusal as NotLeaderRefusal).owner.generation).toBe(2);
    }
    hold.open();
    await t.settled();
    expect(t.routeView('cache', T, NS, 'c', 0).serving).toBe(false);
    expect(t.refuseMessage(cacheGet('c'))).toBeInstanceOf(NotLeaderRefusal);
  });

  it('a_group_request_follows_the_assignment_at_once_while_a_subscription_may_stay_until_the_release', async () => {
    const hold = gate();
    const t = table('held-open', hold);
    t.streamsFeed.snapshot([{ tenant_id: T, namespace: NS, stream: 's', shards: 1 }]);
    t.cachesFeed.snapshot([{ tenant_id: T, namespace: NS, cache: 'held-open', shards: 1 }]);
    t.assignmentsFeed.snapshot([assignment('stream', 's', 'n1', 1)]);
    await t.settled();
    const poll = {
      type: 'group_poll',
      tenant_id: T,
      namespace: NS,
      stream: 's',
      shard: 0,
      group: 'g',
    } as unknown as Message;
    expect(t.refuseMessage(poll)).toBeNull();

    t.assignmentsFeed.changes([change(assignment('cache', 'held-open', 'n1', 1))]);
    t.assignmentsFeed.changes([change(assignment('stream', 's', 'n2', 2))]);
    expect(t.routeView('stream', T, NS, 's', 0).serving).toBe(true);

    for (const type of ['group_poll', 'group_ack', 'group_nack']) {
      const refusal = t.refuseMessage({ ...poll, type } as unknown as Message);
      expect(refusal, type).toBeInstanceOf(NotLeaderRefusal);
      expect((refusal as NotLeaderRefusal).owner.nodeId).toBe('n2');
    }
    // A subscription (the read handlers' check) reads by offset: it stays until the release.
    expect(t.refuse('stream', T, NS, 's', 0)).toBeNull();
    hold.open();
    await t.settled();
    expect(t.refuse('stream', T, NS, 's', 0)).toBeInstanceOf(NotLeaderRefusal);
  });
});

describe('group requests and the lease', () => {
  it('a_group_write_on_a_shard_this_broker_leads_is_refused_while_its_lease_is_not_held', async () => {
    // A broker without its lease may already have lost the shard to another: a group ack it
    // answered there would be unknown to the next leader, and the record handed out again.
    const t = table('none', gate());
    t.streamsFeed.snapshot([{ tenant_id: T, namespace: NS, stream: 's', shards: 1 }]);
    t.assignmentsFeed.snapshot([assignment('stream', 's', 'n1', 1)]);
    await t.settled();
    const req = (type: string) =>
      ({
        type,
        tenant_id: T,
        namespace: NS,
        stream: 's',
        shard: 0,
        group: 'g',
      }) as unknown as Message;
    const writes = ['group_poll', 'group_ack', 'group_ack_batch', 'group_nack', 'group_seek'];
    const held = { held: true, gap: null };
    t.lease = held;
    for (const type of [...writes, 'group_describe']) expect(t.refuseMessage(req(type))).toBeNull();
    t.lease = { held: false, gap: 'lapsed' };
    for (const type of writes) {
      const refusal = t.refuseMessage(req(type));
      expect(refusal?.wireCode, type).toBe('shard_unavailable');
      expect(refusal?.message, type).toMatch(/lease_lapsed/);
    }
    // A read of the group's state still answers.
    expect(t.refuseMessage(req('group_describe'))).toBeNull();
  });
});

describe('a watch across shards', () => {
  it('a_prefix_watch_naming_no_shard_of_a_multi_shard_cache_is_refused_by_its_handler_not_as_shard_0', async () => {
    const t = table('none', gate());
    t.cachesFeed.snapshot([{ tenant_id: T, namespace: NS, cache: 'wide', shards: 3 }]);
    // Shard 0 is led elsewhere, shard 1 here.
    t.assignmentsFeed.snapshot([
      assignment('cache', 'wide', 'n2', 1),
      { ...assignment('cache', 'wide', 'n1', 1), shard: 1 },
    ]);
    await t.settled();
    const watch = { type: 'cache_watch', tenant_id: T, namespace: NS, cache: 'wide', prefix: 'p' };
    // Left to the handler, whose invalid_request every broker answers alike; as shard 0's, this
    // broker answered `not_leader`, and the watcher retried it for ever.
    expect(t.refuseMessage(watch as unknown as Message)).toBeNull();
    // A watch that names a shard follows that shard's leader.
    const named = (shard: number) => ({ ...watch, shard }) as unknown as Message;
    expect(t.refuseMessage(named(0))).toBeInstanceOf(NotLeaderRefusal);
    expect(t.refuseMessage(named(1))).toBeNull();
  });
});

describe('led shards', () => {
  it('a_led_shard_with_fewer_copies_than_its_replication_factor_is_counted_under_replicated', async () => {
    const registry = new Registry();
    const t = table('none', gate(), registry);
    const stream = { tenant_id: T, namespace: NS, shards: 1, replication_factor: 3 };
    t.streamsFeed.snapshot([
      { ...stream, stream: 'short' },
      { ...stream, stream: 'full' },
    ]);
    const withSet = (name: string, replicas: string[], generation: number) => ({
      ...assignment('stream', name, 'n1', generation),
      replicas,
    });
    t.cachesFeed.snapshot([
      { tenant_id: T, namespace: NS, cache: 'c', shards: 1, replication_factor: 3 },
    ]);
    t.assignmentsFeed.snapshot([
      withSet('short', ['n1', 'n2'], 1),
      withSet('full', ['n1', 'n2', 'n3'], 1),
      { ...assignment('cache', 'c', 'n1', 1), replicas: ['n1'] },
    ]);
    await t.settled();
    const gauge = async () =>
      (await registry.getSingleMetric('felix_broker_under_replicated_shards')!.get()).values[0]!
        .value;
    expect(await gauge()).toBe(2);
    // Placement fills the set: nothing under-replicated; a shard another broker leads never counts.
    t.assignmentsFeed.changes([change(withSet('short', ['n1', 'n2', 'n3'], 2))]);
    t.assignmentsFeed.changes([change({ ...withSet('full', ['n2'], 2), leader: 'n2' })]);
    t.assignmentsFeed.changes([
      change({ ...assignment('cache', 'c', 'n1', 2), replicas: ['n1', 'n2', 'n3'] }),
    ]);
    await t.settled();
    expect(await gauge()).toBe(0);
  });
});
