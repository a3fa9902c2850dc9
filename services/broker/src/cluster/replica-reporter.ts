/**
 * Sends the replica reports of the shards this broker leads (docs/replication.md, "Replica
 * reports and promotion"): once per heartbeat interval, every led replicated shard in one
 * request (split past REPLICA_REPORT_SHARDS_MAX), while registered. The control plane promotes
 * from the last report it accepted, so reports keep coming even when nothing changed (a report
 * is believed only for a while). A refused or failed report is logged and the next interval
 * sends a fresh one; reports are never fatal.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { ControlPlaneRefusedError } from '../errors.js';
import {
  CONTROLPLANE_REQUEST_MS_MAX,
  REPLICA_REPORT_REGISTERED_POLL_MS,
  REPLICA_REPORT_SHARDS_MAX,
} from '../limits.js';
import type { ControlPlaneClient, ShardReport } from './control-plane-client.js';
import { sleep } from './feed-follower.js';
import type { Membership } from './membership.js';

export class ReplicaReporter {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly sent: Counter<'outcome'>;

  constructor(
    private readonly client: ControlPlaneClient,
    private readonly membership: Membership,
    /** The reports of the shards this broker leads now (the Replicator's), or none. */
    private readonly source: () => ShardReport[],
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.sent = new Counter({
      name: 'felix_broker_replica_reports_total',
      help: 'Replica-status requests sent to the control plane, by outcome (accepted, refused, failed)',
      labelNames: ['outcome'],
      registers: [registry],
    });
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      // Until registered the interval is a 5 s placeholder: look again soon, so the first report
      // goes out as soon as the broker is registered (a leader lost before any report of its
      // followers leaves its shard unplaced).
      if (!this.membership.isRegistered) {
        await sleep(REPLICA_REPORT_REGISTERED_POLL_MS, signal);
        continue;
      }
      const reports = this.source();
      for (let i = 0; i < reports.length && !signal.aborted; i += REPLICA_REPORT_SHARDS_MAX)
        await this.send(reports.slice(i, i + REPLICA_REPORT_SHARDS_MAX));
      await sleep(this.membership.heartbeatIntervalMs, signal);
    }
  }

  private async send(shards: ShardReport[]): Promise<void> {
    const m = this.membership;
    const timeoutMs = Math.min(CONTROLPLANE_REQUEST_MS_MAX, Math.max(250, m.heartbeatIntervalMs));
    try {
      await this.client.replicaStatus(m.spec.node_id, m.currentIncarnation, shards, timeoutMs);
      this.sent.inc({ outcome: 'accepted' });
    } catch (err) {
      // A refusal names shards this broker no longer leads at that generation (it hears so from
      // the assignment feed); a failure is retried by the next interval's report.
      const refused = err instanceof ControlPlaneRefusedError;
      this.sent.inc({ outcome: refused ? 'refused' : 'failed' });
      this.log.debug({ err, shards: shards.length }, 'replica report not accepted');
    }
  }
}
