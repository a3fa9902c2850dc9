/**
 * The scopes a stream's subscriptions and watches were opened on, kept so a new token of the
 * connection (a `reauth`, a later stream's `auth`) can be checked against them: a narrower one
 * ends what it no longer allows (docs/security.md). No I/O.
 */
import type { Message } from '@felix/wire';
import { LONG_LIVED_SCOPES_PER_STREAM_MAX } from '../limits.js';
import type { Access } from './access.js';
import type { Outcome } from './handler.js';
import { Refusal } from './refusal.js';

/** What a subscription or watch was opened on: the access it needed and the scope fields the
 *  check reads (a copy: the request itself may be large, or a reader's). */
export interface OpenedScope {
  access: Access;
  msg: Message;
  /** Requests of this scope that opened or are opening: it is forgotten only at 0 (one refused
   *  must not erase the scope another of the same opened on). */
  holders: number;
}

/**
 * What a subscription or watch handler answers when it answered a refusal itself (a cursor
 * error, a watch refused): nothing opened, so its scope is forgotten, and nothing more to write.
 * Only `openLongLived` sees it; the session gets null.
 */
export const NOT_OPENED = new Refusal('invalid_request', 'answered by its handler', 'not_opened');

/**
 * Handles a subscription or watch request with its scope remembered from the start: a token
 * that changes while it opens (its handler waits for earlier answers first) is checked against it
 * too, so nothing opens under a token that no longer allows it; refused, the scope is forgotten
 * (a refused request opened nothing a later token could be checked against). A stream holding
 * LONG_LIVED_SCOPES_PER_STREAM_MAX scopes is refused another rather than forget one: a
 * forgotten scope would no longer be checked.
 */
export async function openLongLived(
  opened: OpenedScope[],
  access: Access,
  msg: Message,
  handle: () => Outcome | Promise<Outcome>,
): Promise<Outcome> {
  const kept = rememberOpened(opened, access, msg);
  if (kept === 'full') {
    return new Refusal(
      'limit_exceeded',
      `at most ${LONG_LIVED_SCOPES_PER_STREAM_MAX} subscriptions and watches of distinct scopes per stream`,
      'long_lived_scopes',
    );
  }
  let outcome: Outcome;
  try {
    outcome = await handle();
  } catch (err) {
    forget(opened, kept); // nothing opened
    throw err;
  }
  if (outcome !== null) forget(opened, kept);
  return outcome === NOT_OPENED ? null : outcome;
}

/** One request of the scope did not open: the scope goes once no other holds it. */
function forget(opened: OpenedScope[], scope: OpenedScope): void {
  scope.holders -= 1;
  if (scope.holders === 0) opened.splice(opened.indexOf(scope), 1);
}

/**
 * Notes the scope a subscription or watch request names, once per scope and action (counting
 * its holders); answers its entry, or 'full' at LONG_LIVED_SCOPES_PER_STREAM_MAX.
 */
function rememberOpened(opened: OpenedScope[], access: Access, msg: Message): OpenedScope | 'full' {
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
  const held = opened.find(same);
  if (held !== undefined) {
    held.holders += 1;
    return held;
  }
  if (opened.length >= LONG_LIVED_SCOPES_PER_STREAM_MAX) return 'full';
  const scope = {
    tenant_id: m.tenant_id,
    namespace: m.namespace,
    stream: m.stream,
    cache: m.cache,
  };
  const entry = { access, msg: scope as unknown as Message, holders: 1 };
  opened.push(entry);
  return entry;
}
