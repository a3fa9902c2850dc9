/**
 * Broker-side routing of one request to one shard: pure decisions over what a broker knows of
 * the shard (the assignment it holds, by generation, and whether it serves the shard now). The
 * broker that receives a client's request asks `routeAtIngress`; the broker that receives a
 * forward from another asks `judgeForward`. Neither does I/O: the broker turns each verdict into
 * its answer (serve, forward, `not_leader`, `StaleRoute`, `shard_unavailable`).
 */

/** What a broker knows of one shard's leadership (from its assignment feed). */
export interface ShardView {
  leader: string;
  generation: number;
}

/** Why a shard cannot be served or forwarded to now. */
export type UnavailableReason = 'not_assigned' | 'not_ready';

/** Where a client's request to a shard goes. */
export type IngressRoute =
  /** This broker leads and serves the shard. */
  | { kind: 'local' }
  /** Another broker leads it: forward a write, redirect anything else. */
  | { kind: 'remote'; leader: string; generation: number }
  /** Nobody serves it yet (no assignment, or this broker leads it but has not opened it). */
  | { kind: 'unavailable'; reason: UnavailableReason };

/**
 * The route of a request arriving from a client at broker `self`. A shard this broker serves is
 * always local, whatever the assignment says meanwhile (it stops serving before it lets go).
 */
export function routeAtIngress(
  self: string,
  view: ShardView | undefined,
  serving: boolean,
): IngressRoute {
  if (serving) return { kind: 'local' };
  if (view === undefined) return { kind: 'unavailable', reason: 'not_assigned' };
  if (view.leader !== self)
    return { kind: 'remote', leader: view.leader, generation: view.generation };
  return { kind: 'unavailable', reason: 'not_ready' };
}

/**
 * The route of a write arriving from a client at broker `self`. Unlike a read, a write never
 * stays local once the assignment names another leader, even while this broker still serves its
 * copy (it is letting it go): a write acked there by a leader-acked shard (a cache, a `leader`
 * stream) would be lost, since the new leader's log never gets it; it is forwarded instead.
 */
export function routeWriteAtIngress(
  self: string,
  view: ShardView | undefined,
  serving: boolean,
): IngressRoute {
  if (view !== undefined && view.leader !== self)
    return { kind: 'remote', leader: view.leader, generation: view.generation };
  return routeAtIngress(self, view, serving);
}

/** What the receiver of a forward does with it. */
export type ForwardVerdict =
  /** Same generation, and this broker leads and serves the shard: do it. */
  | { kind: 'serve' }
  /** The sender is behind, or this broker does not lead the shard: name who does (no relay). */
  | { kind: 'not_leader'; leader: string; generation: number }
  /** The sender knows a newer generation than this broker: this broker is behind. */
  | { kind: 'stale_route'; known: number }
  /** This broker leads the shard at that generation but does not serve it yet. */
  | { kind: 'unavailable'; reason: UnavailableReason };

/**
 * The verdict on a forward naming `generation`, received by broker `self`. Generations decide
 * first: a newer one than this broker knows means it is behind (`stale_route`, the sender
 * retries later); an older one means the sender is behind (`not_leader` naming the leader this
 * broker knows). At equal generations only the leader that serves the shard does the work; any
 * other broker answers `not_leader` and never forwards again, so forwards never chain.
 */
export function judgeForward(
  self: string,
  view: ShardView | undefined,
  serving: boolean,
  generation: number,
): ForwardVerdict {
  const known = view?.generation ?? 0;
  if (view === undefined || generation > known) return { kind: 'stale_route', known };
  if (generation < known || view.leader !== self)
    return { kind: 'not_leader', leader: view.leader, generation: known };
  if (!serving) return { kind: 'unavailable', reason: 'not_ready' };
  return { kind: 'serve' };
}
