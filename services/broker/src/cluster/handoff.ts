/**
 * The SIGTERM hand-off (docs/replication.md, "Hand-off on SIGTERM"). The broker already refuses
 * new writes (`draining`) and has let in-flight ones settle; this ships until every follower
 * holds every log of the shards it leads (bounded), tells the control plane it is leaving
 * (`POST /v1/nodes/{id}/drain`: it gets no new shards), sends a final report saying which shards
 * are drained and which followers hold all of each, and waits (bounded) until the control plane
 * has moved those shards, which it does at once to the most caught-up follower, and until the
 * successor's fence has reached this broker's copy. A shard with no level follower is not
 * drained and stays, to wait for this broker's return as before.
 */
import type { ReplicaLogKind } from '@felix/replication';
import type { ShardRef } from '@felix/wire';
import type { Logger } from 'pino';
import { CONTROLPLANE_REQUEST_MS_MAX, HANDOFF_POLL_MS } from '../limits.js';
import type { ControlPlaneClient, ShardReport } from './control-plane-client.js';
import type { Membership } from './membership.js';
import type { Replicator } from './replicator.js';
import { refOfAssignment } from './shard-refs.js';

export interface HandoffDeps {
  client: ControlPlaneClient;
  membership: Membership;
  /** The broker's replicator while it replicates (it may be absent: nothing to hand off). */
  replicator: () => Replicator | undefined;
  /** This broker's follower copy of `log` of a shard: what it holds, the generation it accepted,
   *  and the newest generation whose batch it answered as held and through which offset
   *  (undefined: the copy is not open). */
  followerCopy: (ref: ShardRef, log: ReplicaLogKind) => FollowerCopy | undefined;
  /** The catalog's config of the reported shard's stream or cache (undefined: not known). */
  configOf: (r: ShardReport) => { consistency?: string; durable?: boolean } | undefined;
  log: Logger;
}

export interface FollowerCopy {
  base: number;
  tail: number;
  generation: number;
  held: number;
  heldThrough: number;
  fencedEnd: number;
  fencedGeneration: number;
}

/**
 * A log a successor fences before it serves, and what else it needs a majority to hold, counted
 * from where the copy ended at that fence: `past_end` a batch of its generation past that point
 * (a `quorum` stream's generation start, written when the log holds records); `to_end` a batch
 * of its generation reaching it (a `quorum` cache's logs, where it took them over, when not
 * empty).
 */
export interface SuccessorWait {
  log: ReplicaLogKind;
  held: 'none' | 'past_end' | 'to_end';
}

/** `not_fenced`: the shards moved, but a successor's fence had not reached this broker by the
 *  deadline (a successor whose set needs this broker for a majority waits for its return). */
export type HandoffOutcome = 'nothing_led' | 'handed_off' | 'not_fenced' | 'timed_out' | 'refused';

export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function keyOf(r: ShardReport): string {
  return `${r.tenant_id}/${r.namespace}/${r.kind}/${r.stream}/${r.shard}`;
}

/** Polls `done` until it holds or `deadline` (a `performance.now()` value) passes. */
export async function until(done: () => boolean, deadline: number): Promise<boolean> {
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
  if (!moved) return 'timed_out';
  const handed = final.filter((r) => drained.has(keyOf(r)));
  return (await successorsServed(deps, handed, deadline)) ? 'handed_off' : 'not_fenced';
}

/**
 * Waits (until `deadline`) for each successor to need this broker no more. This broker stays a
 * member of each moved shard's set, and the successor needs a majority of that set before it
 * serves (its fence; a quorum shard's first batch held): in a set of two, both. Leaving before
 * that would leave the successor waiting for this broker's return. False, said in a warning
 * naming what each copy lacked, when the deadline came first.
 */
async function successorsServed(
  deps: HandoffDeps,
  handed: readonly ShardReport[],
  deadline: number,
): Promise<boolean> {
  const copies = (r: ShardReport) =>
    successorWaitsOf(r, deps.configOf(r)).map((w) => ({
      ...w,
      copy: deps.followerCopy(refOfAssignment(r), w.log),
    }));
  const served = (r: ShardReport) =>
    copies(r).every(({ held, copy }) =>
      copy === undefined ? false : copy.generation > r.generation && holds(held, copy, r),
    );
  if (await until(() => handed.every(served), deadline)) return true;
  const waiting = handed
    .filter((r) => !served(r))
    .map((r) => ({ shard: keyOf(r), generation: r.generation, copies: copies(r) }));
  deps.log.warn({ waiting }, 'a successor had not fenced this broker when the hand-off ended');
  return false;
}

/**
 * What a new leader of a reported shard needs of each member of its set before it serves: a
 * stream's fence (fenced-open.ts) and a `quorum` stream's generation start held
 * (generation-start.ts); a durable `quorum` cache's fence of both its logs and each held to
 * where it was taken (cache-leading.ts). Other caches open unfenced.
 */
export function successorWaitsOf(
  r: ShardReport,
  config: { consistency?: string; durable?: boolean } | undefined,
): SuccessorWait[] {
  const quorum = config?.consistency === 'quorum';
  if (r.kind === 'stream') return [{ log: 'stream', held: quorum ? 'past_end' : 'none' }];
  if (!quorum || config?.durable !== true) return [];
  return [
    { log: 'cache', held: 'to_end' },
    { log: 'counters', held: 'to_end' },
  ];
}

/**
 * Whether `copy` holds what its successor needs beyond the fence (SuccessorWait's `held`),
 * measured from where the copy ended at that fence: the successor starts its generation there
 * (the leaver's copy is the furthest tail), a fixed mark even while the successor's own writes
 * arrive. A batch's end, not just its generation: the first batch of a new leader may stop short
 * of its generation start (one large record before it fills a batch).
 */
function holds(held: SuccessorWait['held'], copy: FollowerCopy, r: ShardReport): boolean {
  if (held === 'none') return true;
  if (copy.fencedGeneration <= r.generation) return false;
  const newer = copy.held > r.generation;
  // An empty stream gets no generation start; a log trimmed to its end gets no batch.
  if (held === 'past_end')
    return copy.fencedEnd === 0 || (newer && copy.heldThrough > copy.fencedEnd);
  return copy.fencedEnd <= copy.base || (newer && copy.heldThrough >= copy.fencedEnd);
}
