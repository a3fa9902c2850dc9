/**
 * Sends the replica reports of the shards this broker leads (docs/replication.md, "Replica
 * reports and promotion"): once per heartbeat interval, every led replicated shard in one
 * request (split past REPLICA_REPORT_SHARDS_MAX), while registered. The control plane promotes
 * from the last report it accepted, so reports keep coming even when nothing changed (a report
 * is believed only for a while). A refused or failed report is logged and the next interval
 * sends a fresh one; reports are never fatal.
 *
 * A report also goes out early when `nudge` says a follower came newly in sync (the Replicator's
 * `onInSyncJoined`): a shard whose leader just took over names no follower in sync until its
 * shippers hear from them, and a leader lost before its next interval's report left the shard
 * unplaced for want of a candidate. Nudges are coalesced, at most one early report per
 * REPLICA_REPORT_NUDGE_GAP_MS.
 *
 * Each request is numbered (`seq`, Membership.nextReportSeq): one given up on (timed out) may
 * still be applied after the next, and the control plane refuses the older so it cannot take
 * back what the newer said.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { ControlPlaneRefusedError } from '../errors.js';
import {
  CONTROLPLANE_REQUEST_MS_MAX,
  REPLICA_REPORT_NUDGE_GAP_MS,
  REPLICA_REPORT_REGISTERED_POLL_MS,
  REPLICA_REPORT_SHARDS_MAX,
} from '../limits.js';
import type { ControlPlaneClient, ShardReport, TransferRequest } from './control-plane-client.js';
import { sleep } from './feed-follower.js';
import type { Membership } from './membership.js';

export class ReplicaReporter {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly sent: Counter<'outcome'>;
  /** Callers of `reported` waiting for the next report's outcome (at most one per shard being
   *  moved: SHARD_TRANSFERS_MAX). */
  private readonly waiting: Array<(accepted: boolean) => void> = [];
  /** Told the shard moves the control plane asked for in its answer (transfers.ts). */
  onTransfers: (list: TransferRequest[]) => void = () => undefined;
  /** Set by `nudge`: the next report goes out without waiting for the interval. */
  private nudged = false;
  /** Ends the current wait for the interval early (a nudge), when one is running. */
  private wake: (() => void) | null = null;

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

  /** A follower came newly in sync: report soon rather than at the next interval. */
  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  /** Sends a report soon (a nudge) and resolves with whether the control plane accepted it: a
   *  report made after this call (transfers.ts: one that no longer says a shard is drained). */
  reported(): Promise<boolean> {
    if (this.abort.signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      this.waiting.push(resolve);
      this.nudge();
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    for (const w of this.waiting.splice(0)) w(false);
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
      this.nudged = false;
      const reports = this.source();
      for (let i = 0; i < reports.length && !signal.aborted; i += REPLICA_REPORT_SHARDS_MAX)
        await this.send(reports.slice(i, i + REPLICA_REPORT_SHARDS_MAX));
      // The gap first: nudges arriving meanwhile ride with the report after it.
      await sleep(REPLICA_REPORT_NUDGE_GAP_MS, signal);
      await this.interval(
        Math.max(0, this.membership.heartbeatIntervalMs - REPLICA_REPORT_NUDGE_GAP_MS),
        signal,
      );
    }
  }

  /** Waits `ms`, or less when nudged (before or during the wait), or until stopped. */
  private interval(ms: number, signal: AbortSignal): Promise<void> {
    if (this.nudged || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  private async send(shards: ShardReport[]): Promise<void> {
    // Those who asked before this report was made learn its outcome.
    const told = this.waiting.splice(0);
    let accepted = false;
    try {
      accepted = await this.sendNow(shards);
    } finally {
      for (const w of told) w(accepted);
    }
  }

  private async sendNow(shards: ShardReport[]): Promise<boolean> {
    const m = this.membership;
    const timeoutMs = Math.min(CONTROLPLANE_REQUEST_MS_MAX, Math.max(250, m.heartbeatIntervalMs));
    try {
      const transfers = await this.client.replicaStatus(
        m.spec.node_id,
        m.currentIncarnation,
        shards,
        timeoutMs,
        m.nextReportSeq(),
      );
      this.sent.inc({ outcome: 'accepted' });
      if (transfers.length > 0) this.onTransfers(transfers);
      return true;
    } catch (err) {
      // A refusal names shards this broker no longer leads at that generation (it hears so from
      // the assignment feed); a failure is retried by the next interval's report.
      const refused = err instanceof ControlPlaneRefusedError;
      this.sent.inc({ outcome: refused ? 'refused' : 'failed' });
      this.log.debug({ err, shards: shards.length }, 'replica report not accepted');
      return false;
    }
  }
}
