/** felixctl's catalog and cluster commands: tenants, namespaces, streams, caches, nodes, accept-loss, assignments. */
import type { Command } from 'commander';
import { type Api, type Json, seg } from './api.js';
import { UsageError } from './data/report.js';
import { orNull, wholeNumber, wholeNumberOrNone } from './data/values.js';

function tenantCommands(program: Command, api: Api): void {
  const tenants = program.command('tenants').description('tenants');
  tenants
    .command('list')
    .action(async () => api.show(await api.listAll('/v1/tenants'), ['tenant_id', 'display_name']));
  tenants
    .command('create <tenant>')
    .option('--display-name <name>')
    .action(async (t: string, o: { displayName?: string }) =>
      api.show(
        await api.call('POST', '/v1/tenants', { tenant_id: t, display_name: o.displayName }),
        ['tenant_id', 'display_name'],
      ),
    );
  tenants
    .command('delete <tenant>')
    .option('--force', 'also a tenant whose roles carry cluster or node permissions')
    .action(async (t: string, o: { force?: boolean }) => {
      await api.call('DELETE', `/v1/tenants/${seg(t)}${o.force === true ? '?force=true' : ''}`);
      api.done(`deleted tenant ${t}`, { deleted: 'tenant', tenant_id: t });
    });

  const namespaces = program.command('namespaces').description('namespaces');
  namespaces
    .command('list <tenant>')
    .action(async (t: string) =>
      api.show(await api.listAll(`/v1/tenants/${seg(t)}/namespaces`), [
        'tenant_id',
        'namespace',
        'display_name',
      ]),
    );
  namespaces
    .command('create <tenant> <namespace>')
    .action(async (t: string, ns: string) =>
      api.show(await api.call('POST', `/v1/tenants/${seg(t)}/namespaces`, { namespace: ns }), [
        'tenant_id',
        'namespace',
      ]),
    );
  namespaces.command('delete <tenant> <namespace>').action(async (t: string, ns: string) => {
    await api.call('DELETE', `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}`);
    api.done(`deleted namespace ${t}/${ns}`, { deleted: 'namespace', tenant_id: t, namespace: ns });
  });
}

const STREAM_COLUMNS = [
  'tenant_id',
  'namespace',
  'stream',
  'shards',
  'replication_factor',
  'consistency',
  'durable',
  'routing',
  'retention.max_age_seconds',
  'retention.max_size_bytes',
];

function streamCommands(program: Command, api: Api): void {
  const streams = program.command('streams').description('streams');
  const base = (t: string, ns: string) => `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/streams`;
  streams
    .command('list <tenant> <namespace>')
    .action(async (t: string, ns: string) =>
      api.show(await api.listAll(base(t, ns)), STREAM_COLUMNS),
    );
  streams
    .command('create <tenant> <namespace> <stream>')
    .option('--shards <n>', 'shard count', wholeNumber('--shards'))
    .option('--replication-factor <n>', 'copies of each shard', wholeNumber('--replication-factor'))
    .option('--consistency <c>', 'Leader or Quorum')
    .option('--durable', 'keep records on disk')
    .option('--routing <r>', 'modulo or jump_hash')
    .option('--max-age-seconds <n>', 'retention by age', wholeNumber('--max-age-seconds'))
    .option('--max-size-bytes <n>', 'retention by size', wholeNumber('--max-size-bytes'))
    .action(async (t: string, ns: string, name: string, o: Json) => {
      const retention =
        o.maxAgeSeconds !== undefined || o.maxSizeBytes !== undefined
          ? { max_age_seconds: o.maxAgeSeconds ?? null, max_size_bytes: o.maxSizeBytes ?? null }
          : undefined;
      const body = {
        stream: name,
        shards: o.shards,
        replication_factor: o.replicationFactor,
        consistency: o.consistency,
        durable: o.durable,
        routing: o.routing,
        retention,
      };
      api.show(await api.call('POST', base(t, ns), body), STREAM_COLUMNS);
    });
  streamUpdate(streams, api, base);
  streams
    .command('delete <tenant> <namespace> <stream>')
    .action(async (t: string, ns: string, name: string) => {
      await api.call('DELETE', `${base(t, ns)}/${seg(name)}`);
      api.done(`deleted stream ${t}/${ns}/${name}`, {
        deleted: 'stream',
        tenant_id: t,
        namespace: ns,
        stream: name,
      });
    });
}

/** `streams update`: the stream PATCH; a retention bound it does not name is kept. */
function streamUpdate(streams: Command, api: Api, base: (t: string, ns: string) => string): void {
  streams
    .command('update <tenant> <namespace> <stream>')
    .description(
      'changes retention or consistency (a retention bound left out is kept; durability is fixed at creation)',
    )
    .option('--consistency <c>', 'Leader or Quorum')
    .option(
      '--max-age-seconds <n>',
      'retention by age, or none',
      wholeNumberOrNone('--max-age-seconds'),
    )
    .option(
      '--max-size-bytes <n>',
      'retention by size, or none',
      wholeNumberOrNone('--max-size-bytes'),
    )
    .action(async (t: string, ns: string, name: string, o: Json) => {
      const path = `${base(t, ns)}/${seg(name)}`;
      const body: Json = {};
      if (o.consistency !== undefined) body.consistency = o.consistency;
      if (o.maxAgeSeconds !== undefined || o.maxSizeBytes !== undefined) {
        // A PATCH sets retention whole: the bound not named keeps its current value.
        const cur = ((await api.call('GET', path)).retention ?? {}) as Json;
        body.retention = {
          max_age_seconds: orNull(o.maxAgeSeconds ?? cur.max_age_seconds),
          max_size_bytes: orNull(o.maxSizeBytes ?? cur.max_size_bytes),
        };
      }
      if (Object.keys(body).length === 0) throw new UsageError('nothing to update: name a setting');
      api.show(await api.call('PATCH', path, body), STREAM_COLUMNS);
    });
}

const CACHE_COLUMNS = [
  'tenant_id',
  'namespace',
  'cache',
  'shards',
  'replication_factor',
  'consistency',
  'default_ttl_ms',
];

function cacheCommands(program: Command, api: Api): void {
  const caches = program.command('caches').description('caches');
  const base = (t: string, ns: string) => `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/caches`;
  caches
    .command('list <tenant> <namespace>')
    .action(async (t: string, ns: string) =>
      api.show(await api.listAll(base(t, ns)), CACHE_COLUMNS),
    );
  caches
    .command('create <tenant> <namespace> <cache>')
    .option('--shards <n>', 'shard count', wholeNumber('--shards'))
    .option('--replication-factor <n>', 'copies of each shard', wholeNumber('--replication-factor'))
    .option('--consistency <c>', 'Leader or Quorum')
    .option(
      '--default-ttl-ms <ms>',
      'TTL of a put that names none',
      wholeNumber('--default-ttl-ms'),
    )
    .action(async (t: string, ns: string, name: string, o: Json) =>
      api.show(
        await api.call('POST', base(t, ns), {
          cache: name,
          shards: o.shards,
          replication_factor: o.replicationFactor,
          consistency: o.consistency,
          default_ttl_ms: o.defaultTtlMs,
        }),
        CACHE_COLUMNS,
      ),
    );
  caches
    .command('update <tenant> <namespace> <cache>')
    .description('changes the display name or the default TTL')
    .option('--display-name <name>')
    .option(
      '--default-ttl-ms <ms>',
      'TTL of a put that names none, or none',
      wholeNumberOrNone('--default-ttl-ms'),
    )
    .action(async (t: string, ns: string, name: string, o: Json) => {
      const body: Json = {};
      if (o.displayName !== undefined) body.display_name = o.displayName;
      if (o.defaultTtlMs !== undefined) body.default_ttl_ms = orNull(o.defaultTtlMs);
      if (Object.keys(body).length === 0) throw new UsageError('nothing to update: name a setting');
      api.show(await api.call('PATCH', `${base(t, ns)}/${seg(name)}`, body), CACHE_COLUMNS);
    });
  caches
    .command('delete <tenant> <namespace> <cache>')
    .action(async (t: string, ns: string, name: string) => {
      await api.call('DELETE', `${base(t, ns)}/${seg(name)}`);
      api.done(`deleted cache ${t}/${ns}/${name}`, {
        deleted: 'cache',
        tenant_id: t,
        namespace: ns,
        cache: name,
      });
    });
}

/** `nodes [list]` and `nodes delete`. `nodes` and `assignments` list by themselves, and take
 *  `list` as the other groups do. */
function nodeCommands(program: Command, api: Api): void {
  const nodes = program.command('nodes').description('nodes with their placement view');
  nodes
    .command('list', { isDefault: true })
    .description('nodes with their placement view')
    .action(async () =>
      api.show(await api.listAll('/v1/nodes'), [
        'node.node_id',
        'node.spec.advertise_addr',
        'node.spec.zone',
        'node.status.lifecycle',
        'node.status.incarnation',
        'placement.eligible',
        'placement.routable',
        'placement.heartbeat_age_ms',
        'placement.reasons',
      ]),
    );
  nodes
    .command('delete <node_id>')
    .description('forget a node that is down or left and named in no assignment (a retired broker)')
    .action(async (node: string) => {
      await api.call('DELETE', `/v1/nodes/${seg(node)}`);
      api.done(`deleted node ${node}`, { deleted: 'node', node_id: node });
    });
}

function clusterCommands(program: Command, api: Api): void {
  nodeCommands(program, api);
  program
    .command('accept-loss <node_id>')
    .description(
      "give up a down or departed node's data: the shards it leads reopen on live replicas or empty nodes",
    )
    .option('--yes', 'confirm: what only that node held is lost for good')
    .action(async (node: string, o: { yes?: boolean }) => {
      if (!o.yes) throw new UsageError('accept-loss discards data; confirm with --yes');
      const r = (await api.call('POST', `/v1/nodes/${seg(node)}/accept-loss`)) as {
        moved: Json[];
        still_led: number;
      };
      if (api.target().json) {
        api.out(JSON.stringify({ node_id: node, moved: r.moved, still_led: r.still_led }, null, 2));
        return;
      }
      api.show(r.moved.map(withName), [...SHARD_COLUMNS, 'generation']);
      api.out(`${r.moved.length} shard(s) moved off ${node}; it still leads ${r.still_led}`);
    });
  program
    .command('assignments')
    .description('shard assignments')
    .command('list', { isDefault: true })
    .description('shard assignments')
    .option('--leader <node>', 'only shards this node leads')
    .action(async (o: { leader?: string }) => {
      const rows = await api.listAll(
        o.leader ? `/v1/shard-assignments?leader=${seg(o.leader)}` : '/v1/shard-assignments',
      );
      api.show(rows.map(withName), [...SHARD_COLUMNS, 'replicas', 'generation']);
    });
}

/** What a table of shard assignments shows first: which shard, and who leads it. */
const SHARD_COLUMNS = ['kind', 'tenant_id', 'namespace', 'name', 'shard', 'leader'];

/** The API names a cache's resource `stream` too; tables say NAME beside KIND. */
function withName(row: Json): Json {
  return { ...row, name: row.stream };
}

/** One replica report as a table row: each follower as `node=offset`, halts as `node:reason`. */
function replicaRow(r: Json): Json {
  const offsets = (r.replica_offsets as { node_id: string; durable_offset: number }[]) ?? [];
  const halted = (r.halted as { node_id: string; reason: string }[]) ?? [];
  return {
    ...withName(r),
    followers: offsets.map((o) => `${o.node_id}=${o.durable_offset}`).join(',') || '-',
    in_sync: ((r.in_sync as string[]) ?? []).join(',') || '-',
    halted: halted.map((h) => `${h.node_id}:${h.reason}`).join(',') || '-',
  };
}

function replicaCommands(program: Command, api: Api): void {
  program
    .command('replicas')
    .description(
      "what each replicated shard's leader last reported of its followers (placement promotes from it)",
    )
    .option('--name <name>', 'only this stream or cache')
    .option('--halted', 'only shards with a halted follower')
    .action(async (o: { name?: string; halted?: boolean }) => {
      const { items } = (await api.call('GET', '/v1/replica-reports')) as { items: Json[] };
      const rows = items.filter(
        (r) =>
          (o.name === undefined || r.stream === o.name) &&
          (o.halted !== true || ((r.halted as unknown[]) ?? []).length > 0),
      );
      if (api.target().json) return api.out(JSON.stringify(rows, null, 2));
      api.show(rows.map(replicaRow), [
        'kind',
        'tenant_id',
        'namespace',
        'name',
        'shard',
        'generation',
        'leader',
        'leader_offset',
        'commit_offset',
        'followers',
        'in_sync',
        'halted',
      ]);
    });
}

export function catalogCommands(program: Command, api: Api): void {
  tenantCommands(program, api);
  streamCommands(program, api);
  cacheCommands(program, api);
  clusterCommands(program, api);
  replicaCommands(program, api);
}
