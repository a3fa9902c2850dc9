/** Ownership routes: shard assignments (paged, snapshot, changes) and the dry-run plan. */
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { placementNodes } from '../../cluster/liveness.js';
import { reportTrust } from '../../cluster/promotion.js';
import { PAGE_LIMIT_DEFAULT } from '../../limits.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';
import { feedRoutes } from './catalog.js';

export function assignmentRoutes(app: FastifyInstance, ctx: RouteContext): void {
  feedRoutes(
    app,
    ctx,
    'assignments',
    '/v1/shard-assignments',
    'assignment',
    S.Assignment,
    'placement',
  );

  app.get('/v1/shard-assignments', {
    schema: {
      tags: ['placement'],
      querystring: S.AssignmentQuery,
      response: S.responses({ 200: S.AssignmentPage }),
    },
    handler: async (req) => {
      const q = req.query as Static<typeof S.AssignmentQuery>;
      return ctx.store.assignments.list(q.limit ?? PAGE_LIMIT_DEFAULT, q.cursor, q.leader);
    },
  });

  app.get('/v1/placement/plan', {
    schema: {
      tags: ['placement'],
      summary: 'What a placement pass would change now, without writing it',
      response: S.responses({ 200: S.PlanReply }),
    },
    handler: async () => {
      const nowMs = ctx.clock.nowMs();
      const entries = await ctx.store.assignments.plan(
        (nodes) => placementNodes(nodes, ctx.liveness, nowMs),
        reportTrust(ctx.liveness, nowMs),
        { delayMs: ctx.liveness.leaderRebalanceDelayMs ?? 0 },
      );
      const items = [];
      let unchanged = 0;
      for (const e of entries) {
        const key = {
          tenant_id: e.key.tenant,
          namespace: e.key.namespace,
          kind: e.key.kind,
          stream: e.key.name,
          shard: e.key.shard,
        };
        if (!e.placement.placed) items.push({ ...key, action: 'unplaceable' as const });
        else if (!e.placement.changed) unchanged++;
        else
          items.push({
            ...key,
            action: e.current ? ('change' as const) : ('place' as const),
            ...e.placement.assignment,
          });
      }
      return { shards: entries.length, unchanged, items };
    },
  });
}
