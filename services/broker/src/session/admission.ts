/**
 * Admission: the one place every authenticated request passes after its handler is found and
 * before the handler runs. Authorization (the authz issue: is this principal allowed this request
 * on this resource?) and the shard-ownership decision (serve here, refuse with `not_leader`, or,
 * once replication lands, forward to the leader) sit here, once, instead of in each handler.
 *
 * Today: tokens are accepted as given (no authorization yet), and in control-plane mode a
 * request whose message names its shard is refused when this broker does not hold that shard.
 * A publish names its shard only after routing its key: its handler asks the same ownership
 * check after the tenant and stream checks whose answers come first (`ShardLocation`).
 */
import type { Message } from '@felix/wire';
import type { SessionContext } from './context.js';
import type { Handler, RequestContext } from './handler.js';
import type { Refusal } from './refusal.js';

export function admit(
  ctx: SessionContext,
  _rc: RequestContext,
  handler: Handler,
  req: Message,
): Refusal | null {
  // Authorization of `_rc.principal` for `req` goes here.
  if (handler.shardLocation === 'message' && ctx.ownership !== undefined) {
    return ctx.ownership.refuseMessage(req);
  }
  return null;
}
