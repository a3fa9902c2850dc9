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
import { HANDOFF_POLL_MS, SHARD_TRANSFERS_MAX, SHARD_TRANSFER_MS } from '../limits.js';
import { Refusal } from '../session/refusal.js';
import { shardKey, shardLabel } from './feed-items.js';
import type { TransferRequest } from './control-plane-client.js';
import type { Replicator } from './replicator.js';

export type { TransferRequest } from './control-plane-client.js';

export interface TransferDeps {
  replicator: () => Replicator | undefined;
  /** Whether the shard's groups hold claims or acks its next leader would not have
   *  (RidingLogs.busy): such a shard is not moved now; the control plane asks again. */
  busy: (t: TransferRequest) => boolean;
  /** Asks for a replica report now (replica-reporter.ts, `nudge`). */
  nudge: () => void;
  log: Logger;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `done` until it holds or `deadline` (a `performance.now()` value) passes. */
async function until(done: () => boolean, deadline: number): Promise<boolean> {
  while (!done()) {
    if (performance.now() >= deadline) return false;
    await pause(HANDOFF_POLL_MS);
  }
  return true;
}

/** The refusal of a write to shard `key` while it moves, or null when it does not. */
export function movingRefusal(rep: Replicator | undefined, key: string | undefined, where: string) {
  if (rep === undefined || key === undefined || !rep.moving.has(key)) return null;
  return new Refusal('draining', `${where} is moving to its preferred broker`, 'moving');
}

export class ShardTransfers {
  constructor(private readonly deps: TransferDeps) {}

  /** Starts each requested move not under way already, at most SHARD_TRANSFERS_MAX at once. */
  request(list: readonly TransferRequest[]): void {
    const rep = this.deps.replicator();
    if (rep === undefined) return;
    for (const t of list) {
      const key = shardKey(t.kind, t.tenant_id, t.namespace, t.stream, t.shard);
      if (rep.moving.has(key) || rep.moving.size >= SHARD_TRANSFERS_MAX || !rep.ships(key))
        continue;
      if (this.deps.busy(t)) continue;
      rep.moving.set(key, false);
      void this.run(rep, t, key);
    }
  }

  private async run(rep: Replicator, t: TransferRequest, key: string): Promise<void> {
    const deadline = performance.now() + SHARD_TRANSFER_MS;
    const gone = () => !rep.ships(key);
    let outcome = 'not_moved';
    try {
      const level = () => rep.isLevel(key) || gone();
      if ((await until(level, deadline)) && !gone()) {
        await pause(HANDOFF_POLL_MS);
        // A group request admitted before the refusals began may have claimed or acked since.
        if (this.deps.busy(t)) outcome = 'busy';
        else if ((await until(level, deadline)) && !gone()) {
          rep.moving.set(key, true); // its reports say `drained` from now
          this.deps.nudge();
        }
      }
      if (outcome !== 'busy') outcome = (await until(gone, deadline)) ? 'moved' : 'not_moved';
      this.deps.log.info({ shard: shardLabel(key), to: t.to, outcome }, 'shard transfer finished');
    } finally {
      rep.moving.delete(key);
    }
  }
}
