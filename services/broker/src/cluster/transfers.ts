/**
 * Moving one shard this broker leads to its preferred broker at the control plane's request
 * (docs/replication.md, "Leaders return to their preferred brokers"): the SIGTERM hand-off of a
 * single shard by a broker that stays. Writes to it are refused `draining` (retryable: clients
 * send them again to the shard's next owner), it ships until every follower holds every log of
 * it to its end, twice across a poll so a write admitted just before the refusals began is
 * shipped too, and only then do its replica reports say `drained` (Replicator.reports), on which the
 * control plane moves it at once; the shard table then releases it. Only then does another
 * broker write it: a group ack the old leader answered on its own write is never lost to the
 * move, as it would be to a move the old leader did not see coming. Bounded by
 * SHARD_TRANSFER_MS, past which the shard takes writes again where it is.
 */
import type { Logger } from 'pino';
import { Counter, Registry } from 'prom-client';
import {
  HANDOFF_POLL_MS,
  SHARD_TRANSFERS_MAX,
  SHARD_TRANSFERS_RESTING_MAX,
  SHARD_TRANSFER_MS,
  SHARD_TRANSFER_RETRACT_MS,
  SHARD_TRANSFER_RETRY_MS,
} from '../limits.js';
import { Refusal } from '../session/refusal.js';
import { shardKey, shardLabel } from './feed-items.js';
import type { TransferRequest } from './control-plane-client.js';
import { pause, until } from './handoff.js';
import type { Replicator } from './replicator.js';

export type { TransferRequest } from './control-plane-client.js';

export interface TransferDeps {
  replicator: () => Replicator | undefined;
  /** Whether the shard's groups hold claims or acks its next leader would not have
   *  (RidingLogs.busy): such a shard is not moved now; the control plane asks again. */
  busy: (t: TransferRequest) => boolean;
  /** Asks for a replica report now (replica-reporter.ts, `nudge`). */
  nudge: () => void;
  /** Sends a report now and resolves with whether the control plane accepted it (false when it
   *  failed or was refused); a report made after the call, so it says what the call saw. */
  reported: () => Promise<boolean>;
  log: Logger;
  /** Where `felix_broker_shard_transfers_total` is registered (absent: a registry of its own). */
  registry?: Registry;
}

/** The refusal of a write to shard `key` while it moves, or null when it does not. */
export function movingRefusal(rep: Replicator | undefined, key: string | undefined, where: string) {
  if (rep === undefined || key === undefined || !rep.moving.has(key)) return null;
  return new Refusal('draining', `${where} is moving to its preferred broker`, 'moving');
}

export class ShardTransfers {
  /** Shards whose move did not happen, and until when (performance.now()) they are not tried
   *  again: a follower that cannot be level (halted, cut off) would otherwise have the shard
   *  refuse its writes for a bound at every report. */
  private readonly resting = new Map<string, number>();

  private readonly outcomes: Counter<'outcome'>;

  constructor(private readonly deps: TransferDeps) {
    this.outcomes = new Counter({
      name: 'felix_broker_shard_transfers_total',
      help: 'Shards this broker was asked to move to their preferred broker, by outcome (moved, not_moved, not_retracted, busy, refused: not started)',
      labelNames: ['outcome'],
      registers: [deps.registry ?? new Registry()],
    });
  }

  /** Starts each requested move not under way already, at most SHARD_TRANSFERS_MAX at once. */
  request(list: readonly TransferRequest[]): void {
    const rep = this.deps.replicator();
    if (rep === undefined) return;
    const now = performance.now();
    for (const [key, until] of this.resting) if (until <= now) this.resting.delete(key);
    for (const t of list) {
      const key = shardKey(t.kind, t.tenant_id, t.namespace, t.stream, t.shard);
      if (rep.moving.has(key)) continue;
      // Asked of the generation this broker leads at (a pass's answer may be older).
      if (this.resting.has(key) || rep.shippingGeneration(key, t.kind) !== t.generation) continue;
      if (rep.moving.size >= SHARD_TRANSFERS_MAX) {
        this.outcomes.inc({ outcome: 'refused' });
        continue;
      }
      if (this.deps.busy(t)) {
        this.outcomes.inc({ outcome: 'busy' });
        continue;
      }
      rep.moving.set(key, false);
      void this.run(rep, t, key);
    }
  }

  private async run(rep: Replicator, t: TransferRequest, key: string): Promise<void> {
    const gone = () => !rep.ships(key);
    let outcome = 'not_moved';
    try {
      const level = () => rep.isLevel(key, t.to) || gone();
      let deadline = performance.now() + SHARD_TRANSFER_MS;
      if ((await until(level, deadline)) && !gone()) {
        await pause(HANDOFF_POLL_MS);
        // A group request admitted before the refusals began may have claimed or acked since.
        if (this.deps.busy(t)) outcome = 'busy';
        else if ((await until(level, deadline)) && !gone()) {
          rep.moving.set(key, true); // its reports say `drained` from now
          this.deps.nudge();
          deadline = performance.now() + SHARD_TRANSFER_MS;
          outcome = (await until(gone, deadline)) ? 'moved' : await this.retract(rep, key);
        }
      }
      if (gone()) outcome = 'moved';
      else this.resting.set(key, performance.now() + SHARD_TRANSFER_RETRY_MS);
      if (this.resting.size > SHARD_TRANSFERS_RESTING_MAX) {
        const oldest = this.resting.keys().next().value;
        if (oldest !== undefined) this.resting.delete(oldest);
      }
      this.outcomes.inc({ outcome });
      this.deps.log.info({ shard: shardLabel(key), to: t.to, outcome }, 'shard transfer finished');
    } finally {
      rep.moving.delete(key);
    }
  }

  /**
   * The shard was reported drained and did not move: its reports stop saying so, and it takes
   * writes again only once the control plane accepted such a report (or it moved meanwhile),
   * since until then a pass may still move it on the drained one. Bounded by
   * SHARD_TRANSFER_RETRACT_MS, past which it takes writes again anyway (a broker cut off from the
   * control plane stops writing at its lease's end).
   */
  private async retract(rep: Replicator, key: string): Promise<string> {
    rep.moving.set(key, false);
    const deadline = performance.now() + SHARD_TRANSFER_RETRACT_MS;
    while (rep.ships(key) && performance.now() < deadline) {
      if (await this.deps.reported()) return 'not_moved';
      await pause(HANDOFF_POLL_MS);
    }
    return rep.ships(key) ? 'not_retracted' : 'moved';
  }
}
