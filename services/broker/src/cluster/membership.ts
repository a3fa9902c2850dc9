/**
 * This broker's membership in the control plane: register (node id, addresses, zone, labels,
 * capacity, incarnation), heartbeat at the interval the control plane names, and deregister at
 * SIGTERM. The incarnation is the wall clock in milliseconds at registration, kept above the one
 * before, so a restarted broker always outranks its previous life. A heartbeat answered `down`
 * or `left`, or refused as unknown or stale, re-registers with a newer incarnation. Failures are
 * counted and retried with backoff, never fatal. Every accepted call renews the write lease
 * (cluster/lease.ts) from when it was sent; a node the control plane no longer counts live loses
 * it at once.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { ControlPlaneRefusedError, ControlPlaneUnavailableError } from '../errors.js';
import {
  CONTROLPLANE_REQUEST_MS_MAX,
  CONTROLPLANE_RETRY_MS_MAX,
  CONTROLPLANE_RETRY_MS_MIN,
} from '../limits.js';
import {
  type ControlPlaneClient,
  FEATURE_REPLICA_REPORT_SEQ,
  FEATURE_REPLICA_REPORT_UID,
  type RegisterRequest,
} from './control-plane-client.js';
import { sleep } from './feed-follower.js';
import { Lease } from './lease.js';

export type NodeSpec = Omit<RegisterRequest, 'incarnation'>;

export class Membership {
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private incarnation = 0;
  private registered = false;
  private intervalMs = 5_000;
  private readonly failures: Counter<'kind'>;
  private readonly registrations: Counter;
  /** Whether this broker may write the shards it leads (renewed by accepted heartbeats). */
  readonly lease = new Lease();
  /** The lapse of the lease held since the last accepted call was logged (true before any). */
  private lapseSaid = true;
  /** The number of the last replica report sent (nextReportSeq). */
  private reportSeq = 0;
  /** Whether the control plane said (at its last answer) that it reads a report's `seq`. */
  private seqRead = false;
  private uidRead = false;

  constructor(
    private readonly client: ControlPlaneClient,
    readonly spec: NodeSpec,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.failures = new Counter({
      name: 'felix_broker_heartbeat_failures_total',
      help: 'Control-plane registration and heartbeat calls that failed, by kind',
      labelNames: ['kind'],
      registers: [registry],
    });
    this.registrations = new Counter({
      name: 'felix_broker_registrations_total',
      help: 'Registrations with the control plane (each with a new incarnation)',
      registers: [registry],
    });
  }

  /** True once a registration was accepted (and not since lost). */
  get isRegistered(): boolean {
    return this.registered;
  }

  get currentIncarnation(): number {
    return this.incarnation;
  }

  /**
   * The number of the next replica report (from 1 in this process, never reused): the periodic
   * reporter's and the hand-off's share one count, so the control plane can refuse a report
   * applied after a newer one (a request given up on that still arrived). Undefined while the
   * control plane does not read it (an older one refuses the field).
   */
  nextReportSeq(): number | undefined {
    if (!this.seqRead) return undefined;
    this.reportSeq += 1;
    return this.reportSeq;
  }

  /** Whether the control plane said (at its last answer) that it reads a report's `uid`. */
  get reportsUid(): boolean {
    return this.uidRead;
  }

  private heard(features: readonly string[] | undefined): void {
    this.seqRead = features?.includes(FEATURE_REPLICA_REPORT_SEQ) ?? false;
    this.uidRead = features?.includes(FEATURE_REPLICA_REPORT_UID) ?? false;
  }

  /** The heartbeat interval the control plane named (5 s until it answers). */
  get heartbeatIntervalMs(): number {
    return this.intervalMs;
  }

  start(): void {
    this.loop ??= this.run();
  }

  private nextIncarnation(): number {
    this.incarnation = Math.max(Date.now(), this.incarnation + 1);
    return this.incarnation;
  }

  /** Counts and logs a failed call; an unknown node or a stale incarnation starts over. */
  private callFailed(err: unknown): void {
    const refused = err instanceof ControlPlaneRefusedError;
    this.failures.inc({ kind: refused ? 'refused' : 'unavailable' });
    if (refused && this.registered && (err.status === 404 || err.status === 409)) {
      // Unknown node (a fresh control-plane database) or a stale incarnation: start over.
      this.lease.depose();
      this.registered = false;
    }
    // Not answering: the broker's warnings per outage say so (reachability.ts).
    const level = err instanceof ControlPlaneUnavailableError ? 'debug' : 'warn';
    this.log[level]({ err, registered: this.registered }, 'control plane membership call failed');
    if (!this.lapseSaid && this.lease.remainingMs === 0) {
      this.lapseSaid = true;
      this.log.warn(
        'write lease lapsed: writes to the shards this broker leads are refused until a heartbeat is accepted',
      );
    }
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let delay = CONTROLPLANE_RETRY_MS_MIN;
    while (!signal.aborted) {
      try {
        const sentAt = performance.now();
        if (!this.registered) {
          const r = await this.client.register({
            ...this.spec,
            incarnation: this.nextIncarnation(),
          });
          this.registered = true;
          this.intervalMs = r.heartbeatIntervalMs;
          this.heard(r.controlPlaneFeatures);
          this.lease.renew(sentAt, r.expiryTimeoutMs);
          this.lapseSaid = false;
          this.registrations.inc();
          this.log.info(
            {
              incarnation: this.incarnation,
              lifecycle: r.lifecycle,
              heartbeat_interval_ms: r.heartbeatIntervalMs,
              controlplane: this.client.url,
            },
            'registered with the control plane',
          );
        } else {
          // Each attempt is abandoned after a quarter of the interval, so a slow answer cannot
          // eat the lease (reference: a quarter of the retry budget).
          const r = await this.client.heartbeat(
            this.spec.node_id,
            this.incarnation,
            Math.min(CONTROLPLANE_REQUEST_MS_MAX, Math.max(250, this.intervalMs)),
          );
          this.intervalMs = r.heartbeatIntervalMs;
          this.heard(r.controlPlaneFeatures);
          if (r.lifecycle === 'down' || r.lifecycle === 'left') {
            this.log.warn(
              { lifecycle: r.lifecycle },
              'the control plane no longer counts this node live; re-registering',
            );
            this.lease.depose();
            this.registered = false;
            continue;
          }
          this.lease.renew(sentAt, r.expiryTimeoutMs);
          this.lapseSaid = false;
        }
        delay = CONTROLPLANE_RETRY_MS_MIN;
        await sleep(this.intervalMs, signal);
      } catch (err) {
        if (signal.aborted) return;
        this.callFailed(err);
        await sleep(delay, signal);
        delay = Math.min(
          delay * 2,
          CONTROLPLANE_RETRY_MS_MAX,
          Math.max(CONTROLPLANE_RETRY_MS_MIN, this.intervalMs / 5),
        );
      }
    }
  }

  /** Stops heartbeating and tells the control plane this node is leaving (bounded wait). */
  async leave(timeoutMs: number): Promise<void> {
    this.abort.abort();
    await this.loop;
    if (!this.registered) return;
    try {
      await this.client.deregister(this.spec.node_id, timeoutMs);
      this.registered = false;
      this.log.info('deregistered from the control plane');
    } catch (err) {
      this.log.warn({ err }, 'deregistering failed; the control plane will mark this node down');
    }
  }
}
