/** Catalog routes: tenants, namespaces, streams, caches, and their snapshot/changes feeds. */
import { Type } from '@sinclair/typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { checkName } from '../../catalog-names.js';
import { TenantHoldsClusterRolesError } from '../../errors.js';
import { PAGE_LIMIT_DEFAULT } from '../../limits.js';
import type { FeedName, Retention } from '../../store/types.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';

type Page = Static<typeof S.PageQuery>;

/** A stream's retention as stored: a limit left out (or no retention object) is no limit. */
function retentionOf(
  r: { max_age_seconds?: number | null; max_size_bytes?: number | null } | null | undefined,
): Retention {
  return { max_age_seconds: r?.max_age_seconds ?? null, max_size_bytes: r?.max_size_bytes ?? null };
}

/** Registers `GET /v1/<feed>/snapshot` and `GET /v1/<feed>/changes` for one feed. */
export function feedRoutes(
  app: FastifyInstance,
  ctx: RouteContext,
  feed: FeedName,
  path: string,
  field: 'item' | 'assignment',
  item: TSchema,
  tag: string,
): void {
  app.get(`${path}/snapshot`, {
    schema: {
      tags: [tag],
      summary: `Every ${feed} item and the sequence to follow changes from`,
      response: S.responses({ 200: S.Snapshot(item) }),
    },
    handler: async () => ctx.store.feeds.snapshot(feed),
  });
  app.get(`${path}/changes`, {
    schema: {
      tags: [tag],
      summary: `Changes to ${feed} from seq \`since\`; long-polls up to wait_ms (at most 25000)`,
      querystring: S.ChangesQuery,
      response: S.responses({ 200: S.Changes(field, item) }),
    },
    handler: async (req) => {
      const q = req.query as Static<typeof S.ChangesQuery>;
      const limit = Math.min(q.limit ?? ctx.changesLimit, ctx.changesLimit);
      return ctx.hub.poll(feed, q.since, q.wait_ms ?? 0, limit);
    },
  });
}

/**
 * Refuses to delete a tenant whose roles carry cluster or node permissions: it is likely the one
 * that mints the brokers' node credentials (the quickstart's `operator`), and with its keys gone
 * every broker's credential stops verifying at once. `?force=true` deletes it anyway.
 */
async function refuseClusterTenant(ctx: RouteContext, tenant: string): Promise<void> {
  const policies = await ctx.store.rbac.listPolicies(tenant);
  const island = policies.find(
    (p) => p.object.startsWith('cluster:') || p.object.startsWith('node:'),
  );
  if (island === undefined) return;
  throw new TenantHoldsClusterRolesError(
    `tenant ${tenant} holds cluster permissions (role ${island.role}: ${island.action}:${island.object}); it may mint the brokers' node credentials, which would stop verifying with its keys: delete it with ?force=true (felixctl tenants delete --force) if that is meant`,
  );
}

/** The tenant routes: list, create, read, delete (with the tenant's cached keys forgotten). */
function tenantRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { store } = ctx;
  app.get('/v1/tenants', {
    schema: {
      tags: ['tenants'],
      querystring: S.PageQuery,
      response: S.responses({ 200: S.TenantPage }),
    },
    handler: async (req) => {
      const q = req.query as Page;
      return store.tenants.list(q.limit ?? PAGE_LIMIT_DEFAULT, q.cursor);
    },
  });
  app.post('/v1/tenants', {
    schema: {
      tags: ['tenants'],
      body: S.CreateTenant,
      response: S.responses({ 200: S.Tenant, 201: S.Tenant }),
    },
    handler: async (req, reply) => {
      const b = req.body as Static<typeof S.CreateTenant>;
      const tenant_id = checkName('tenant_id', b.tenant_id);
      const display_name = b.display_name ?? tenant_id;
      const r = await store.tenants.create({ tenant_id, display_name });
      // A name created again: nothing cached of a tenant deleted before it may verify.
      if (r.created) ctx.keys.invalidate(tenant_id);
      return reply.code(r.created ? 201 : 200).send(r.item);
    },
  });
  app.get('/v1/tenants/:tenant_id', {
    schema: { tags: ['tenants'], params: S.TenantParams, response: S.responses({ 200: S.Tenant }) },
    handler: async (req) => {
      const p = req.params as Static<typeof S.TenantParams>;
      return store.tenants.get(checkName('tenant_id', p.tenant_id));
    },
  });
  app.delete('/v1/tenants/:tenant_id', {
    schema: {
      tags: ['tenants'],
      summary:
        'Deletes a tenant with its namespaces, streams, caches and assignments (one whose roles carry cluster or node permissions only with ?force=true)',
      params: S.TenantParams,
      querystring: S.DeleteTenantQuery,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.TenantParams>;
      const t = checkName('tenant_id', p.tenant_id);
      if ((req.query as Static<typeof S.DeleteTenantQuery>).force !== 'true')
        await refuseClusterTenant(ctx, t);
      await store.tenants.delete(t);
      // Its keys went with it: a token of the deleted tenant is refused from this answer on.
      ctx.keys.invalidate(t);
      return reply.code(204).send();
    },
  });
}

export function catalogRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { store } = ctx;
  const limitOf = (q: Page) => q.limit ?? PAGE_LIMIT_DEFAULT;

  feedRoutes(app, ctx, 'tenants', '/v1/tenants', 'item', S.Tenant, 'tenants');
  feedRoutes(app, ctx, 'namespaces', '/v1/namespaces', 'item', S.Namespace, 'namespaces');
  feedRoutes(app, ctx, 'streams', '/v1/streams', 'item', S.Stream, 'streams');
  feedRoutes(app, ctx, 'caches', '/v1/caches', 'item', S.Cache, 'caches');

  tenantRoutes(app, ctx);

  // ---- namespaces
  const nsBase = '/v1/tenants/:tenant_id/namespaces';
  app.get(nsBase, {
    schema: {
      tags: ['namespaces'],
      params: S.TenantParams,
      querystring: S.PageQuery,
      response: S.responses({ 200: S.NamespacePage }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.TenantParams>;
      const q = req.query as Page;
      return store.namespaces.list(checkName('tenant_id', p.tenant_id), limitOf(q), q.cursor);
    },
  });
  app.post(nsBase, {
    schema: {
      tags: ['namespaces'],
      params: S.TenantParams,
      body: S.CreateNamespace,
      response: S.responses({ 200: S.Namespace, 201: S.Namespace }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.TenantParams>;
      const b = req.body as Static<typeof S.CreateNamespace>;
      const namespace = checkName('namespace', b.namespace);
      const r = await store.namespaces.create({
        tenant_id: checkName('tenant_id', p.tenant_id),
        namespace,
        display_name: b.display_name ?? namespace,
      });
      return reply.code(r.created ? 201 : 200).send(r.item);
    },
  });
  app.get(`${nsBase}/:namespace`, {
    schema: {
      tags: ['namespaces'],
      params: S.NamespaceParams,
      response: S.responses({ 200: S.Namespace }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NamespaceParams>;
      return store.namespaces.get(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
      );
    },
  });
  app.delete(`${nsBase}/:namespace`, {
    schema: {
      tags: ['namespaces'],
      summary: 'Deletes a namespace with its streams, caches and assignments',
      params: S.NamespaceParams,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.NamespaceParams>;
      await store.namespaces.delete(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
      );
      return reply.code(204).send();
    },
  });

  // ---- streams
  const stBase = `${nsBase}/:namespace/streams`;
  app.get(stBase, {
    schema: {
      tags: ['streams'],
      params: S.NamespaceParams,
      querystring: S.PageQuery,
      response: S.responses({ 200: S.StreamPage }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NamespaceParams>;
      const q = req.query as Page;
      return store.streams.list(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        limitOf(q),
        q.cursor,
      );
    },
  });
  app.post(stBase, {
    schema: {
      tags: ['streams'],
      params: S.NamespaceParams,
      body: S.CreateStream,
      response: S.responses({ 200: S.Stream, 201: S.Stream }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.NamespaceParams>;
      const b = req.body as Static<typeof S.CreateStream>;
      const r = await store.streams.create(
        {
          tenant_id: checkName('tenant_id', p.tenant_id),
          namespace: checkName('namespace', p.namespace),
          stream: checkName('stream', b.stream),
          kind: 'Stream',
          shards: b.shards ?? 1,
          replication_factor: b.replication_factor ?? 1,
          retention: retentionOf(b.retention),
          consistency: b.consistency ?? 'Leader',
          durable: b.durable ?? false,
          routing: b.routing ?? 'modulo',
        },
        ctx.placementView,
      );
      return reply.code(r.created ? 201 : 200).send(r.item);
    },
  });
  app.get(`${stBase}/:stream`, {
    schema: { tags: ['streams'], params: S.StreamParams, response: S.responses({ 200: S.Stream }) },
    handler: async (req) => {
      const p = req.params as Static<typeof S.StreamParams>;
      return store.streams.get(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        checkName('stream', p.stream),
      );
    },
  });
  app.patch(`${stBase}/:stream`, {
    schema: {
      tags: ['streams'],
      summary:
        'Changes retention or consistency (shards, replication, routing and durability are fixed)',
      params: S.StreamParams,
      body: S.PatchStream,
      response: S.responses({ 200: S.Stream }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.StreamParams>;
      const b = req.body as Static<typeof S.PatchStream>;
      return store.streams.patch(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        checkName('stream', p.stream),
        {
          retention: b.retention === undefined ? undefined : retentionOf(b.retention),
          consistency: b.consistency,
          durable: b.durable,
        },
      );
    },
  });
  app.delete(`${stBase}/:stream`, {
    schema: {
      tags: ['streams'],
      summary: 'Deletes a stream and its shard assignments',
      params: S.StreamParams,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.StreamParams>;
      await store.streams.delete(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        checkName('stream', p.stream),
      );
      return reply.code(204).send();
    },
  });

  // ---- caches
  const caBase = `${nsBase}/:namespace/caches`;
  app.get(caBase, {
    schema: {
      tags: ['caches'],
      params: S.NamespaceParams,
      querystring: S.PageQuery,
      response: S.responses({ 200: S.CachePage }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NamespaceParams>;
      const q = req.query as Page;
      return store.caches.list(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        limitOf(q),
        q.cursor,
      );
    },
  });
  app.post(caBase, {
    schema: {
      tags: ['caches'],
      params: S.NamespaceParams,
      body: S.CreateCache,
      response: S.responses({ 200: S.Cache, 201: S.Cache }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.NamespaceParams>;
      const b = req.body as Static<typeof S.CreateCache>;
      const cache = checkName('cache', b.cache);
      const r = await store.caches.create(
        {
          tenant_id: checkName('tenant_id', p.tenant_id),
          namespace: checkName('namespace', p.namespace),
          cache,
          display_name: b.display_name ?? cache,
          shards: b.shards ?? 1,
          replication_factor: b.replication_factor ?? 1,
          consistency: b.consistency ?? 'Leader',
          default_ttl_ms: b.default_ttl_ms ?? null,
        },
        ctx.placementView,
      );
      return reply.code(r.created ? 201 : 200).send(r.item);
    },
  });
  app.get(`${caBase}/:cache`, {
    schema: { tags: ['caches'], params: S.CacheParams, response: S.responses({ 200: S.Cache }) },
    handler: async (req) => {
      const p = req.params as Static<typeof S.CacheParams>;
      return store.caches.get(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        checkName('cache', p.cache),
      );
    },
  });
  app.patch(`${caBase}/:cache`, {
    schema: {
      tags: ['caches'],
      summary: 'Changes the display name or the default TTL',
      params: S.CacheParams,
      body: S.PatchCache,
      response: S.responses({ 200: S.Cache }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.CacheParams>;
      const b = req.body as Static<typeof S.PatchCache>;
      const [t, ns] = [checkName('tenant_id', p.tenant_id), checkName('namespace', p.namespace)];
      return store.caches.patch(t, ns, checkName('cache', p.cache), b);
    },
  });
  app.delete(`${caBase}/:cache`, {
    schema: {
      tags: ['caches'],
      summary: 'Deletes a cache and its shard assignments',
      params: S.CacheParams,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.CacheParams>;
      await store.caches.delete(
        checkName('tenant_id', p.tenant_id),
        checkName('namespace', p.namespace),
        checkName('cache', p.cache),
      );
      return reply.code(204).send();
    },
  });
}
