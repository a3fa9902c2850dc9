/**
 * Runs placement passes one at a time, coalescing triggers: any number of triggers while a pass
 * runs cause exactly one more pass. Writes that change what placement sees trigger a pass.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { LivenessConfig } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { PlacementOutcome } from '../store/assignments.js';
import type { ControlStore } from '../store/store.js';
import { placementNodes } from './liveness.js';
import { reportTrust } from './promotion.js';

export class PlacementRunner {
  private running: Promise<void> | undefined;
  private dirty = false;
  private last: PlacementOutcome | undefined;
  private count = 0;

  constructor(
    private readonly store: ControlStore,
    private readonly liveness: LivenessConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Asks for a pass; resolves when a pass that started after this call has finished. */
  trigger(): Promise<void> {
    this.dirty = true;
    if (!this.running) {
      this.running = this.loop().finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }

  /** Resolves when no pass is running (shutdown waits on this; it starts nothing). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Passes run so far (finished, whatever their outcome). */
  get passes(): number {
    return this.count;
  }

  get lastOutcome(): PlacementOutcome | undefined {
    return this.last;
  }

  private async loop(): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      try {
        const nowMs = this.clock.nowMs();
        const out = await this.store.assignments.pass(
          (nodes) => placementNodes(nodes, this.liveness, nowMs),
          reportTrust(this.liveness, nowMs),
          { delayMs: this.liveness.leaderRebalanceDelayMs ?? 0 },
        );
        this.last = out;
        this.metrics.placementPasses.inc({ outcome: 'ok' });
        this.metrics.assignmentWrites.inc(out.written.length);
        this.metrics.unplacedShards.set(out.unplaced);
        this.metrics.leadersReturned.inc(out.returned.length);
        if (out.returned.length > 0) {
          this.log.info(
            {
              shards: out.returned.map(
                (a) => `${a.tenant_id}/${a.namespace}/${a.kind}/${a.stream}/${a.shard}@${a.leader}`,
              ),
            },
            'leadership returned to preferred brokers',
          );
        }
        if (out.written.length > 0) {
          this.log.info(
            { written: out.written.length, unplaced: out.unplaced },
            'placement pass wrote assignments',
          );
        }
      } catch (err) {
        // What a failed pass would have asked is unknown: no leader is asked to move anything.
        this.last = undefined;
        this.metrics.placementPasses.inc({ outcome: 'error' });
        this.log.warn({ err }, 'placement pass failed; the next trigger retries');
      }
      this.count++;
    }
  }
}
