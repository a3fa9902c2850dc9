/**
 * Day 0 of a test cluster, the secure way (docs/security.md): an operator tenant initialized
 * through the bootstrap listener, one node credential per broker (`node.manage:node:<id>` and
 * `node.view:cluster:*`), the workload's tenant with its namespace, streams and caches made
 * through the REST API, and a client token with every data permission on that tenant.
 */
import type { CacheSpec, StreamSpec } from '../types.js';
import type { ControlPlane } from './control-plane.js';
import type { ShardSet } from './served.js';

const OPERATOR_TENANT = 'operator';
const OPERATOR = 'harness-operator';
const OPERATOR_PERMISSIONS = [
  'tenant.manage:cluster:*',
  'node.view:cluster:*',
  'node.manage:cluster:*',
];
const ADMIN = 'harness-admin';
const CLIENT = 'harness-client';

/** Every action a data-plane token may carry, on every object of `tenant`. */
export function clientPermissions(tenant: string): string[] {
  return [
    `group.manage:group:${tenant}/*/*/*`,
    `stream.publish:stream:${tenant}/*/*`,
    `stream.subscribe:stream:${tenant}/*/*`,
    `cache.read:cache:${tenant}/*/*`,
    `cache.write:cache:${tenant}/*/*`,
    `group.consume:group:${tenant}/*/*/*`,
  ];
}

/** The operator tenant and its token for cluster routes (nodes, assignments, tenants). */
export async function initOperator(cp: ControlPlane): Promise<string> {
  await cp.bootstrap(OPERATOR_TENANT, 'initialize', {
    initial_admin_principals: [OPERATOR],
    operator: true,
  });
  return cp.devToken(OPERATOR_TENANT, OPERATOR, OPERATOR_PERMISSIONS, 'felix-controlplane');
}

/** A broker's node credential: manage its own node, view the cluster. */
export function nodeToken(cp: ControlPlane, nodeId: string): Promise<string> {
  return cp.devToken(
    OPERATOR_TENANT,
    `node-${nodeId}`,
    [`node.manage:node:${nodeId}`, 'node.view:cluster:*'],
    'felix-controlplane',
  );
}

/** The workload's tenant (keys and admin through bootstrap) and its namespace; the admin token. */
export async function initTenant(
  cp: ControlPlane,
  operatorToken: string,
  tenant: string,
  namespace: string,
): Promise<string> {
  await cp.api(operatorToken, 'POST', '/v1/tenants', { tenant_id: tenant });
  await cp.bootstrap(tenant, 'initialize', { initial_admin_principals: [ADMIN] });
  const admin = await cp.devToken(
    tenant,
    ADMIN,
    [`tenant.manage:tenant:${tenant}`],
    'felix-controlplane',
  );
  await cp.api(admin, 'POST', `/v1/tenants/${tenant}/namespaces`, { namespace });
  return admin;
}

/** Creates the streams and caches; answers their shard counts as the control plane made them. */
export async function createCatalog(
  cp: ControlPlane,
  adminToken: string,
  where: { tenant: string; namespace: string },
  streams: readonly StreamSpec[],
  caches: readonly CacheSpec[],
): Promise<ShardSet[]> {
  const base = `/v1/tenants/${where.tenant}/namespaces/${where.namespace}`;
  const out: ShardSet[] = [];
  for (const s of streams) {
    const made = (await cp.api(adminToken, 'POST', `${base}/streams`, {
      stream: s.name,
      shards: s.shards,
      durable: s.durable ?? true,
      ...(s.replicationFactor === undefined ? {} : { replication_factor: s.replicationFactor }),
      ...(s.consistency === undefined
        ? {}
        : { consistency: s.consistency === 'quorum' ? 'Quorum' : 'Leader' }),
      ...(s.retention === undefined
        ? {}
        : {
            retention: {
              max_size_bytes: s.retention.maxSizeBytes ?? null,
              max_age_seconds: s.retention.maxAgeSeconds ?? null,
            },
          }),
    })) as { shards: number };
    out.push({ kind: 'stream', name: s.name, shards: made.shards });
  }
  for (const c of caches) {
    const made = (await cp.api(adminToken, 'POST', `${base}/caches`, {
      cache: c.name,
      ...(c.shards === undefined ? {} : { shards: c.shards }),
      ...(c.replicationFactor === undefined ? {} : { replication_factor: c.replicationFactor }),
      ...(c.consistency === undefined
        ? {}
        : { consistency: c.consistency === 'quorum' ? 'Quorum' : 'Leader' }),
      ...(c.defaultTtlMs === undefined ? {} : { default_ttl_ms: c.defaultTtlMs }),
    })) as { shards: number };
    out.push({ kind: 'cache', name: c.name, shards: made.shards });
  }
  return out;
}

/** The workload's token: every data permission on the tenant, for the broker audience. */
export function clientToken(cp: ControlPlane, tenant: string): Promise<string> {
  return cp.devToken(tenant, CLIENT, clientPermissions(tenant), 'felix-broker');
}
