/** Prometheus metrics of one control-plane instance (its own registry, so tests can run several). */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  requestSeconds: Histogram<'route'>;
  longPollWaiters: Gauge;
  longPollOverflow: Counter;
  placementPasses: Counter<'outcome'>;
  assignmentWrites: Counter;
  unplacedShards: Gauge;
  leadersReturned: Counter;
  nodesMarkedDown: Counter;
  heartbeats: Counter<'outcome'>;
  replicaReports: Counter<'outcome'>;
  authRefusals: Counter<'reason'>;
  bootstrapAttempts: Counter<'outcome'>;
}

function replicaReportsCounter(registry: Registry): Counter<'outcome'> {
  return new Counter({
    name: 'felix_controlplane_replica_reports_total',
    help: 'Shard replica reports received, by outcome (accepted, stale, not_leader, unassigned, future_generation)',
    labelNames: ['outcome'],
    registers: [registry],
  });
}

/** What placement passes did. */
function placementMetrics(
  registry: Registry,
): Pick<Metrics, 'placementPasses' | 'assignmentWrites' | 'unplacedShards' | 'leadersReturned'> {
  return {
    placementPasses: new Counter({
      name: 'felix_controlplane_placement_passes_total',
      help: 'Placement passes run, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    assignmentWrites: new Counter({
      name: 'felix_controlplane_assignment_writes_total',
      help: 'Shard assignments written (each bumps its generation)',
      registers: [registry],
    }),
    unplacedShards: new Gauge({
      name: 'felix_controlplane_unplaced_shards',
      help: 'Shards the last placement pass could not place',
      registers: [registry],
    }),
    leadersReturned: new Counter({
      name: 'felix_controlplane_leaders_returned_total',
      help: 'Quorum shards whose leadership placement moved back to their preferred broker',
      registers: [registry],
    }),
  };
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'felix_controlplane_' });
  return {
    registry,
    requests: new Counter({
      name: 'felix_controlplane_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'felix_controlplane_http_request_seconds',
      help: 'Time to answer an HTTP request (long polls included)',
      labelNames: ['route'],
      buckets: [0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 25],
      registers: [registry],
    }),
    longPollWaiters: new Gauge({
      name: 'felix_controlplane_long_poll_waiters',
      help: 'Change-feed long polls parked right now',
      registers: [registry],
    }),
    longPollOverflow: new Counter({
      name: 'felix_controlplane_long_poll_overflow_total',
      help: 'Long polls answered at once because LONG_POLL_WAITERS_MAX were already parked',
      registers: [registry],
    }),
    ...placementMetrics(registry),
    nodesMarkedDown: new Counter({
      name: 'felix_controlplane_nodes_marked_down_total',
      help: 'Nodes the sweep marked down after L + margin of silence',
      registers: [registry],
    }),
    heartbeats: new Counter({
      name: 'felix_controlplane_heartbeats_total',
      help: 'Heartbeats answered, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    replicaReports: replicaReportsCounter(registry),
    authRefusals: new Counter({
      name: 'felix_controlplane_auth_refusals_total',
      help: 'Requests refused by the guard, by reason (no_token, a token refusal reason, forbidden)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    bootstrapAttempts: new Counter({
      name: 'felix_controlplane_bootstrap_attempts_total',
      help: 'Bootstrap listener requests, by outcome (initialized, already_initialized, bad_token, dev_token, refused)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}
