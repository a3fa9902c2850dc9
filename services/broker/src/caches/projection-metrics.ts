/**
 * Metrics of the caches, counters, watches and consumer groups served over the wire, registered
 * on the broker's own registry (so /metrics shows them beside the stream metrics).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export class ProjectionMetrics {
  readonly requests: Counter<'type'>;
  readonly refusals: Counter<'type' | 'code'>;
  readonly watches: Gauge;
  readonly watchesLagged: Counter;
  readonly watchEvents: Counter;
  readonly groupDelivered: Counter;
  readonly groupDeadLettered: Counter;
  readonly groupPollsCapped: Counter;
  readonly groupClaimsLapsed: Counter;
  readonly groupsInMemory: Gauge;
  /**
   * Requests counted since the last scrape, by type: a Map increment per request instead of
   * prom-client's label hashing, added to `requests` when it is collected. Its keys are the
   * request types this service handles, so it stays a handful of entries.
   */
  private readonly uncounted = new Map<string, number>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'felix_broker_projection_requests_total',
      help: 'Cache, counter, watch and group requests, by type',
      labelNames: ['type'],
      registers,
      collect: () => this.flushRequests(),
    });
    this.refusals = new Counter({
      name: 'felix_broker_projection_refusals_total',
      help: 'Cache, counter, watch and group requests answered with an error, by type and code',
      labelNames: ['type', 'code'],
      registers,
    });
    this.watches = new Gauge({
      name: 'felix_broker_cache_watches',
      help: 'Open cache watches',
      registers,
    });
    this.watchesLagged = new Counter({
      name: 'felix_broker_cache_watches_lagged_total',
      help: 'Cache watches ended because their queue overflowed',
      registers,
    });
    this.watchEvents = new Counter({
      name: 'felix_broker_cache_watch_events_total',
      help: 'cache_event frames written to watchers',
      registers,
    });
    this.groupDelivered = new Counter({
      name: 'felix_group_delivered_total',
      help: 'Records handed out by consumer-group polls (redeliveries included)',
      registers,
    });
    this.groupDeadLettered = new Counter({
      name: 'felix_group_dead_lettered_total',
      help: 'Records recorded as dead letters (attempt bound or group_dead_letter)',
      registers,
    });
    this.groupPollsCapped = new Counter({
      name: 'felix_group_polls_capped_total',
      help: 'Polls answered empty because the group was at its in-flight cap',
      registers,
    });
    this.groupClaimsLapsed = new Counter({
      name: 'felix_group_claims_lapsed_total',
      help: 'Claims whose visibility timeout passed; the record became owed',
      registers,
    });
    this.groupsInMemory = new Gauge({
      name: 'felix_group_states_in_memory',
      help: 'Consumer groups with in-flight state held in memory',
      registers,
    });
  }

  /** Counts one request of `type` (read by `requests` at the next scrape). */
  countRequest(type: string): void {
    this.uncounted.set(type, (this.uncounted.get(type) ?? 0) + 1);
  }

  private flushRequests(): void {
    for (const [type, n] of this.uncounted) this.requests.inc({ type }, n);
    this.uncounted.clear();
  }
}
