/**
 * The scopes a stream's subscriptions and watches were opened on, kept so a new token of the
 * connection (a `reauth`, a later stream's `auth`) can be checked against them: a narrower one
 * ends what it no longer allows (docs/security.md). No I/O.
 */
import type { Message } from '@felix/wire';
import { LONG_LIVED_SCOPES_PER_STREAM_MAX } from '../limits.js';
import type { Access } from './access.js';
import type { Outcome } from './handler.js';

/** What a subscription or watch was opened on: the access it needed and the scope fields the
 *  check reads (a copy: the request itself may be large, or a reader's). */
export interface OpenedScope {
  access: Access;
  msg: Message;
}

/** A subscription's or watch's request, handled: its scope is remembered once it was served
 *  (a refused one opened nothing a later token could be checked against). */
export async function opening(
  handled: Outcome | Promise<Outcome>,
  opened: OpenedScope[],
  access: Access,
  msg: Message,
): Promise<Outcome> {
  const outcome = await handled;
  if (outcome === null) rememberOpened(opened, access, msg);
  return outcome;
}

/**
 * Notes the scope a subscription or watch request names, once per scope and action, at most
 * LONG_LIVED_SCOPES_PER_STREAM_MAX per stream (the oldest goes): a client repeating a refused
 * subscribe on one stream must not grow it.
 */
function rememberOpened(opened: OpenedScope[], access: Access, msg: Message): void {
  // Only the scope the check reads: the message itself may be large, or a reader's.
  const m = msg as unknown as Record<string, unknown>;
  const same = (o: OpenedScope) => {
    const x = o.msg as unknown as Record<string, unknown>;
    return (
      o.access === access &&
      x.tenant_id === m.tenant_id &&
      x.namespace === m.namespace &&
      x.stream === m.stream &&
      x.cache === m.cache
    );
  };
  if (opened.some(same)) return;
  if (opened.length >= LONG_LIVED_SCOPES_PER_STREAM_MAX) opened.shift();
  const scope = {
    tenant_id: m.tenant_id,
    namespace: m.namespace,
    stream: m.stream,
    cache: m.cache,
  };
  opened.push({ access, msg: scope as unknown as Message });
}
