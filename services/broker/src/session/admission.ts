/**
 * Admission: the one place every authenticated request passes after its handler is found and
 * before the handler runs. Authorization (the authz issue: is this principal allowed this request
 * on this resource?) and the shard-ownership decision (serve here, refuse with `not_leader`, or
 * forward a write to the leader: `forwardable`) sit here, once, instead of in each handler.
 *
 * Authorization first: the connection's grant (auth/grant.ts) against the request type's row of
 * the permission table (auth/access.ts): `unauthenticated` once the token expired, `forbidden`
 * naming the action and object when it is not granted. Publishes are checked in their handler
 * (their refusal is a `publish_error` or binary ack with the request id). Then, in control-plane
 * mode, a request whose message names its shard is refused when this broker does not hold it.
 * A publish names its shard only after routing its key: its handler asks the same ownership
 * check after the tenant and stream checks whose answers come first (`ShardLocation`).
 */
import type { Message } from '@felix/wire';
import type { SessionContext } from './context.js';
import type { HandlerEntry, RequestContext } from './handler.js';
import { NotLeaderRefusal, type Refusal } from './refusal.js';

/** The requests an expired token may still send: the ones that bring a fresh token. */
const OPEN_AFTER_EXPIRY: ReadonlySet<string> = new Set(['auth', 'reauth']);

export function admit(
  ctx: SessionContext,
  rc: RequestContext,
  entry: HandlerEntry,
  req: Message,
): Refusal | null {
  const access = entry.access;
  if (access !== null && access.inHandler !== true) {
    const refused = rc.grant.check(access, req);
    if (refused !== null) return refused;
  } else if (access === null && rc.grant.expired && !OPEN_AFTER_EXPIRY.has(req.type)) {
    // A request naming nothing (where brokers and shard leaders are) is still one of an expired
    // token's: refused as every later request is, until a reauth.
    return rc.grant.expiredRefusal();
  }
  const handler = entry.handler;
  if (handler.shardLocation === 'message' && ctx.ownership !== undefined) {
    return ctx.ownership.refuseMessage(req);
  }
  return null;
}

/**
 * Whether admission's refusal is a write to hand to its handler's `forward` instead: the shard
 * is led by another broker and the request is one that is forwarded (its handler says how).
 */
export function forwardable(entry: HandlerEntry, refusal: Refusal): refusal is NotLeaderRefusal {
  return refusal instanceof NotLeaderRefusal && entry.handler.forward !== undefined;
}
