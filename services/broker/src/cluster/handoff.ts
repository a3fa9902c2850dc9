/**
 * The SIGTERM hand-off (docs/replication.md, "Hand-off on SIGTERM"). The broker already refuses
 * new writes (`draining`) and has let in-flight ones settle; this ships until every follower
 * holds every log of the shards it leads (bounded), tells the control plane it is leaving
 * (`POST /v1/nodes/{id}/drain`: it gets no new shards), sends a final report saying which shards
 * are drained and which followers hold all of each, and waits (bounded) until the control plane
 * has moved those shards, which it does at once to the most caught-up follower. A shard with no
 * level follower is not drained and stays, to wait for this broker's return as before.
 */
import type { Logger } from 'pino';
import { CONTROLPLANE_REQUEST_MS_MAX, HANDOFF_POLL_MS } from '../limits.js';
import type { ControlPlaneClient, ShardReport } from './control-plane-client.js';
import type { Membership } from './membership.js';
import type { Replicator } from './replicator.js';

export interface HandoffDeps {
  client: ControlPlaneClient;
  membership: Membership;
  /** The broker's replicator while it replicates (it may be absent: nothing to hand off). */
  replicator: () => Replicator | undefined;
  log: Logger;
}

export type HandoffOutcome = 'nothing_led' | 'handed_off' | 'timed_out' | 'refused';

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function keyOf(r: ShardReport): string {
  return `${r.tenant_id}/${r.namespace}/${r.kind}/${r.stream}/${r.shard}`;
}

/** Polls `done` until it holds or `deadline` (a `performance.now()` value) passes. */
async function until(done: () => boolean, deadline: number): Promise<boolean> {
  while (!done()) {
    if (performance.now() >= deadline) return false;
    await pause(HANDOFF_POLL_MS);
  }
  return true;
}

/** Runs the hand-off within `budgetMs`; never throws (a failure leaves the shards to failover). */
export async function handOff(deps: HandoffDeps, budgetMs: number): Promise<HandoffOutcome> {
  const deadline = performance.now() + budgetMs;
  const rep = deps.replicator();
  if (rep === undefined || rep.reports().length === 0 || !deps.membership.isRegistered)
    return 'nothing_led';
  // Most of the budget goes to shipping; the rest to the report and the move.
  await until(() => rep.allLevel(), performance.now() + budgetMs / 2);
  const final = rep.reports(true);
  const drained = new Set(final.filter((r) => r.drained === true).map(keyOf));
  deps.log.info({ shards: final.length, drained: drained.size }, 'handing off led shards');
  if (drained.size === 0) return 'refused';
  const m = deps.membership;
  const timeoutMs = Math.round(Math.min(CONTROLPLANE_REQUEST_MS_MAX, Math.max(250, budgetMs / 4)));
  try {
    await deps.client.drain(m.spec.node_id, timeoutMs);
    await deps.client.replicaStatus(
      m.spec.node_id,
      m.currentIncarnation,
      final,
      timeoutMs,
      m.nextReportSeq(),
    );
  } catch (err) {
    // A refused or failed hand-off leaves the shards where they are: the failover path (after
    // this broker's silence) or its return takes them, as without a hand-off.
    deps.log.warn({ err }, 'hand-off not accepted; leaving shards to failover');
    return 'refused';
  }
  const moved = await until(() => !rep.reports().some((r) => drained.has(keyOf(r))), deadline);
  return moved ? 'handed_off' : 'timed_out';
}
