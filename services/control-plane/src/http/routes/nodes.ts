/**
 * Membership routes: register, heartbeat, drain, deregister, accepting a lost node's data, delete,
 * and the placement view.
 */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { checkName } from '../../catalog-names.js';
import { placementNodes, placementView } from '../../cluster/liveness.js';
import { reportTrust } from '../../cluster/promotion.js';
import { ControlPlaneError } from '../../errors.js';
import { PAGE_LIMIT_DEFAULT } from '../../limits.js';
import type { NodeRecord, RegisterInput } from '../../store/types.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';

/**
 * What this control plane reads beyond its first release, told to each broker in its register
 * and heartbeat answers so a newer broker sends only fields the control plane takes (an older
 * one refuses unknown fields): `replica_report_seq`, a replica report's `seq`;
 * `replica_report_uid`, the creation id of each reported shard's stream or cache.
 */
export const CONTROL_PLANE_FEATURES: readonly string[] = [
  'replica_report_seq',
  'replica_report_uid',
];

/** The registration a `POST /v1/nodes` body asks for, defaults filled in. */
function registration(b: Static<typeof S.RegisterNode>, regionId: string): RegisterInput {
  return {
    node_id: checkName('node_id', b.node_id),
    advertise_addr: b.advertise_addr,
    client_addr: b.client_addr ?? null,
    region: b.region ?? regionId,
    zone: b.zone ?? null,
    labels: b.labels ?? {},
    capacity: { max_shards: b.capacity?.max_shards ?? 0, weight: b.capacity?.weight ?? 1 },
    incarnation: b.incarnation,
    ...(b.durable_storage === undefined ? {} : { durable_storage: b.durable_storage }),
  };
}

export function nodeRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { store, liveness } = ctx;
  const view = async (node: NodeRecord) => {
    const load =
      node.spec.capacity.max_shards > 0 ? await store.nodes.copiesHeldBy(node.node_id) : 0;
    return { node, placement: placementView(node, liveness, ctx.clock.nowMs(), load) };
  };

  app.post('/v1/nodes', {
    schema: {
      tags: ['nodes'],
      summary: 'Registers a broker, or re-registers it with a newer incarnation',
      body: S.RegisterNode,
      response: S.responses({ 200: S.Registered }),
    },
    handler: async (req) => {
      const b = req.body as Static<typeof S.RegisterNode>;
      const { node, revived } = await store.nodes.register(registration(b, ctx.regionId));
      if (revived) void ctx.placement.trigger();
      return {
        node,
        heartbeat_interval_ms: liveness.heartbeatIntervalMs,
        expiry_timeout_ms: liveness.expiryTimeoutMs,
        fleet_features: [],
        control_plane_features: CONTROL_PLANE_FEATURES,
      };
    },
  });

  app.post('/v1/nodes/:node_id/heartbeat', {
    schema: {
      tags: ['nodes'],
      summary: 'Renews the lease; an older incarnation gets 409; a down node must re-register',
      params: S.NodeParams,
      body: S.Heartbeat,
      response: S.responses({ 200: S.HeartbeatReply }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NodeParams>;
      const b = req.body as Static<typeof S.Heartbeat>;
      try {
        const nodeId = checkName('node_id', p.node_id);
        const stamp = ctx.clock.nowMs();
        const lifecycle = await store.nodes.heartbeat(nodeId, b.incarnation, stamp);
        if (lifecycle === 'live' || lifecycle === 'draining') ctx.heard(nodeId, stamp);
        ctx.metrics.heartbeats.inc({ outcome: lifecycle });
        return {
          node_id: p.node_id,
          lifecycle,
          heartbeat_interval_ms: liveness.heartbeatIntervalMs,
          expiry_timeout_ms: liveness.expiryTimeoutMs,
          fleet_features: [],
          control_plane_features: CONTROL_PLANE_FEATURES,
        };
      } catch (err) {
        ctx.metrics.heartbeats.inc({
          outcome: err instanceof ControlPlaneError ? err.code : 'error',
        });
        throw err;
      }
    },
  });

  app.post('/v1/nodes/:node_id/drain', {
    schema: {
      tags: ['nodes'],
      summary: 'Marks a live node draining: it keeps its shards and receives no new ones',
      params: S.NodeParams,
      response: S.responses({ 200: S.NodeView }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NodeParams>;
      const node = await store.nodes.drain(checkName('node_id', p.node_id));
      void ctx.placement.trigger();
      return view(node);
    },
  });

  app.post('/v1/nodes/:node_id/deregister', {
    schema: {
      tags: ['nodes'],
      summary:
        'Marks a node left; the shards it leads move once L + margin has passed since its last heartbeat (a quorum set short of a majority without it drops it at once if it leads nothing)',
      params: S.NodeParams,
      response: S.responses({ 200: S.NodeView }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NodeParams>;
      const node = await store.nodes.deregister(checkName('node_id', p.node_id));
      void ctx.placement.trigger();
      return view(node);
    },
  });

  acceptLossRoute(app, ctx);

  app.delete('/v1/nodes/:node_id', {
    schema: {
      tags: ['nodes'],
      summary: 'Forgets a node that is down or left and named in no assignment',
      params: S.NodeParams,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.NodeParams>;
      await store.nodes.delete(checkName('node_id', p.node_id));
      return reply.code(204).send();
    },
  });

  app.get('/v1/nodes', {
    schema: {
      tags: ['nodes'],
      summary: 'Nodes with their placement view (eligible, routable, heartbeat age, reasons)',
      querystring: S.NodeListQuery,
      response: S.responses({ 200: S.NodePage }),
    },
    handler: async (req) => {
      const q = req.query as Static<typeof S.NodeListQuery>;
      const page = await store.nodes.list(q.limit ?? PAGE_LIMIT_DEFAULT, q.cursor, q.lifecycle);
      return { items: await Promise.all(page.items.map(view)), next_cursor: page.next_cursor };
    },
  });

  app.get('/v1/nodes/:node_id', {
    schema: { tags: ['nodes'], params: S.NodeParams, response: S.responses({ 200: S.NodeView }) },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NodeParams>;
      return view(await store.nodes.get(checkName('node_id', p.node_id)));
    },
  });
}

/** An operator gives a lost node's data up (docs/control-plane.md, "Accepting a lost node's data"). */
function acceptLossRoute(app: FastifyInstance, ctx: RouteContext): void {
  app.post('/v1/nodes/:node_id/accept-loss', {
    schema: {
      tags: ['nodes'],
      summary:
        "Gives up a down or departed node's data: the shards it leads move to live replicas or empty nodes",
      params: S.NodeParams,
      response: S.responses({ 200: S.AcceptedLoss }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.NodeParams>;
      const nowMs = ctx.clock.nowMs();
      const out = await ctx.store.assignments.acceptLoss(
        (nodes) => placementNodes(nodes, ctx.liveness, nowMs),
        reportTrust(ctx.liveness, nowMs),
        checkName('node_id', p.node_id),
      );
      req.log.warn(
        { node_id: p.node_id, moved: out.moved.length, still_led: out.still_led },
        'operator accepted the loss of a node: its shards reopen without its data',
      );
      // Refreshes the unplaced-shards gauge; the move itself is already written.
      void ctx.placement.trigger();
      return out;
    },
  });
}
