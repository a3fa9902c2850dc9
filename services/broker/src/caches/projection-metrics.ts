/**
 * Metrics of the caches, counters, watches and consumer groups served over the wire, registered
 * on the broker's own registry (so /metrics shows them beside the stream metrics).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** Requests of one type counted since the last scrape. */
export interface RequestCount {
  n: number;
}

export class ProjectionMetrics {
  readonly requests: Counter<'type'>;
  readonly refusals: Counter<'type' | 'code'>;
  readonly watches: Gauge;
  readonly watchesOpened: Counter;
  readonly watchesLagged: Counter;
  readonly watchEvents: Counter;
  readonly groupDelivered: Counter;
  readonly groupDeadLettered: Counter;
  readonly groupPollsCapped: Counter;
  readonly groupClaimsLapsed: Counter;
  readonly groupClaimsReclaimed: Counter;
  readonly groupRecordsSkipped: Counter;
  readonly groupsInMemory: Gauge;
  /**
   * Requests counted since the last scrape, by type: a cell increment per request instead of
   * prom-client's label hashing, added to `requests` when it is collected. Its keys are the
   * request types this service handles, so it stays a handful of entries.
   */
  private readonly uncounted = new Map<string, RequestCount>();

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
    this.watchesOpened = new Counter({
      name: 'felix_broker_cache_watches_opened_total',
      help: 'Cache watches started (this counter minus the open gauge is how many have ended)',
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
    this.groupClaimsReclaimed = new Counter({
      name: 'felix_group_claims_reclaimed_total',
      help: 'Claims a named consumer reclaimed from its older connections',
      registers,
    });
    this.groupRecordsSkipped = new Counter({
      name: 'felix_group_records_skipped_total',
      help: 'Records retention removed before a group handed them out (reported as skipped_before)',
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
    this.requestCount(type).n++;
  }

  /**
   * The count of `type`'s requests not yet scraped: a hot path keeps it and increments `n`
   * itself (no lookup per request).
   */
  requestCount(type: string): RequestCount {
    let count = this.uncounted.get(type);
    if (count === undefined) {
      count = { n: 0 };
      this.uncounted.set(type, count);
    }
    return count;
  }

  private flushRequests(): void {
    for (const [type, count] of this.uncounted) {
      if (count.n === 0) continue;
      this.requests.inc({ type }, count.n);
      count.n = 0;
    }
  }
}
