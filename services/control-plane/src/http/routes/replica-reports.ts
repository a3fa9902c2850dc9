/**
 * Replica reports: a shard leader's word on what its replicas hold (`POST
 * /v1/nodes/{node_id}/replica-status`, with the heartbeat's permission), which placement reads
 * to choose whom to promote, and the operator's read of what is stored (`GET
 * /v1/replica-reports`).
 */
import type { Static } from '@sinclair/typebox';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { checkName } from '../../catalog-names.js';
import { ReportNotAcceptedError } from '../../errors.js';
import { PAGE_LIMIT_MAX, REPLICA_REPORT_BODY_BYTES_MAX } from '../../limits.js';
import type { Transfer } from '../../store/assignments.js';
import type { ReportInput } from '../../store/replica-reports.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';

type ShardReport = Static<typeof S.ShardReport>;

function inputOf(r: ShardReport): ReportInput {
  return {
    tenant_id: r.tenant_id,
    namespace: r.namespace,
    kind: r.kind,
    stream: r.stream,
    shard: r.shard,
    generation: r.generation,
    leader_offset: r.leader_offset,
    commit_offset: r.commit_offset ?? 0,
    replica_offsets: r.replica_offsets,
    halted: r.halted ?? [],
    ...(r.rebuilt === undefined ? {} : { rebuilt: r.rebuilt }),
    drained: r.drained ?? false,
    caught_up: r.caught_up ?? [],
    in_sync: r.in_sync ?? [],
    ...(r.uid === undefined ? {} : { uid: r.uid }),
  };
}

/** The leadership moves the last placement pass asked of `nodeId` (cluster/rebalance.ts). */
function transfersFor(all: readonly Transfer[], nodeId: string) {
  return all
    .filter((t) => t.from === nodeId)
    .map((t) => ({
      tenant_id: t.key.tenant,
      namespace: t.key.namespace,
      kind: t.key.kind,
      stream: t.key.name,
      shard: t.key.shard,
      generation: t.generation,
      to: t.to,
    }));
}

/** Says which shard reports were not accepted and why (the request's own line says only 409). */
function logOutcomes(
  log: FastifyBaseLogger,
  nodeId: string,
  shards: readonly { outcome: string }[],
): void {
  // `not_leader` is at the assignment's own generation: another leader claims it.
  const ahead = shards.filter(
    (s) => s.outcome === 'future_generation' || s.outcome === 'not_leader',
  );
  if (ahead.length > 0) {
    // Only a database that went back in time (a restore) is behind its brokers.
    log.warn(
      { node_id: nodeId, shards: ahead.slice(0, 8), count: ahead.length },
      'a broker leads at a generation its assignment does not name (a restored database?); the assignment moves past it when the report names the current creation',
    );
  }
  // Usually benign (`stale`: a shard that moved since the broker sent its report).
  const notAccepted = shards.filter((s) => s.outcome !== 'accepted');
  if (notAccepted.length > 0)
    log.info(
      { node_id: nodeId, shards: notAccepted.slice(0, 8), count: notAccepted.length },
      'replica reports not accepted',
    );
}

export function replicaReportRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.post('/v1/nodes/:node_id/replica-status', {
    bodyLimit: REPLICA_REPORT_BODY_BYTES_MAX,
    schema: {
      tags: ['nodes'],
      summary:
        "A leader's report of what each replica of the shards it leads holds; 200 when every shard's report was accepted, 409 naming each outcome otherwise",
      params: S.NodeParams,
      body: S.ReplicaStatus,
      response: S.responses({ 200: S.ReplicaStatusReply, 409: S.ReplicaStatusRefused }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.NodeParams>;
      const b = req.body as Static<typeof S.ReplicaStatus>;
      const nodeId = checkName('node_id', p.node_id);
      const { outcomes, established } = await ctx.store.replicaReports.recordTelling(
        nodeId,
        b.incarnation,
        b.shards.map(inputOf),
        b.seq,
      );
      const shards = b.shards.map((s, i) => ({
        tenant_id: s.tenant_id,
        namespace: s.namespace,
        kind: s.kind,
        stream: s.stream,
        shard: s.shard,
        outcome: outcomes[i]!,
      }));
      for (const o of outcomes) ctx.metrics.replicaReports.inc({ outcome: o });
      logOutcomes(req.log, nodeId, shards);
      // A leaving leader's drained shards move at once (docs/replication.md, "Hand-off on
      // SIGTERM"), not at the next timed pass; and a leader's first report at its generation
      // lets placement change its quorum set (drop a member that left, top it up) at once.
      if (established || b.shards.some((s, i) => s.drained === true && outcomes[i] === 'accepted'))
        void ctx.placement.trigger();
      if (outcomes.every((o) => o === 'accepted')) {
        const transfers = transfersFor(ctx.placement.lastOutcome?.transfers ?? [], nodeId);
        return transfers.length === 0 ? { shards } : { shards, transfers };
      }
      const refused = new ReportNotAcceptedError(
        `${outcomes.filter((o) => o !== 'accepted').length} of ${outcomes.length} shard reports were not accepted`,
      );
      return reply.code(409).send({
        code: refused.code,
        message: refused.message,
        request_id: String(req.id),
        shards,
      });
    },
  });

  app.get('/v1/replica-reports', {
    schema: {
      tags: ['placement'],
      summary: 'The replica reports placement would promote from (the latest per shard)',
      response: S.responses({ 200: S.ReportList }),
    },
    handler: async () => ({ items: await ctx.store.replicaReports.list(PAGE_LIMIT_MAX) }),
  });
}
