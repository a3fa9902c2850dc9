/**
 * What each request needs: the permission table of the request edge (issue 21). Every request
 * type the HandlerTable serves has one row here, and `register` refuses a type without one, so
 * no request can be added unchecked. A row names the action and which message fields form the
 * object (`stream:T/N/S`, `cache:T/N/C`, `group:T/N/S/G`); the check reads those fields in place
 * and allocates nothing (PermissionSet.allows). The mapping follows @felix/authz's README
 * ("What each broker request needs"); counters use the cache actions (a counter is a key of its
 * cache: `counter_get` needs `cache.read`, `counter_add` needs `cache.write`).
 */
import type { Action } from '@felix/authz';

/** The object kinds a data request names, each read from the message's scope fields. */
export type AccessObject = 'stream' | 'cache' | 'group';

export interface Access {
  readonly action: Action;
  /** A second action that also allows the request (`stream_shards`: publishers and readers). */
  readonly orAction?: Action;
  readonly object: AccessObject;
  /**
   * Checked by the handler, not at admission, because the answer it owes has its own form (a
   * publish answers `publish_error` or a binary ack with its request id) and the binary publish
   * frame is read only there.
   */
  readonly inHandler?: boolean;
  /** Opens something that outlives the request (a subscription, a watch): it ends at expiry. */
  readonly longLived?: boolean;
}

/** A request every authenticated stream may send (the session's own, or one naming nothing). */
export const OPEN = 'open' as const;

const stream = (action: Action, extra: Partial<Access> = {}): Access => ({
  action,
  object: 'stream',
  ...extra,
});
const cache = (action: Action, extra: Partial<Access> = {}): Access => ({
  action,
  object: 'cache',
  ...extra,
});
const group = (action: Action): Access => ({ action, object: 'group' });

/** Every request type the broker serves, and what it needs. */
export const REQUEST_ACCESS: Readonly<Record<string, Access | typeof OPEN>> = {
  auth: OPEN,
  reauth: OPEN,
  publish: stream('stream.publish', { inHandler: true }),
  publish_batch: stream('stream.publish', { inHandler: true }),
  subscribe: stream('stream.subscribe', { longLived: true }),
  offset_for_time: stream('stream.subscribe'),
  stream_shards: stream('stream.subscribe', { orAction: 'stream.publish' }),
  // Where brokers and shard leaders are: what any client of the tenant needs to route, and no
  // record data (the handler answers another tenant's names with no owners).
  topology: OPEN,
  shard_owners: OPEN,
  cache_get: cache('cache.read'),
  cache_watch: cache('cache.read', { longLived: true }),
  // The width a client needs to span a prefix watch over a standalone broker's shards.
  cache_shards: cache('cache.read', { orAction: 'cache.write' }),
  cache_put: cache('cache.write'),
  cache_delete: cache('cache.write'),
  counter_get: cache('cache.read'),
  counter_add: cache('cache.write'),
  // Consumers: group.consume (a grant of stream.subscribe on the stream implies it).
  group_poll: group('group.consume'),
  group_ack: group('group.consume'),
  group_ack_batch: group('group.consume'),
  group_nack: group('group.consume'),
  group_nack_batch: group('group.consume'),
  group_extend: group('group.consume'),
  group_dead_letter: group('group.consume'),
  group_dead_letters: group('group.consume'),
  group_describe: group('group.consume'),
  // Administration changes the group for every consumer: group.manage.
  group_seek: group('group.manage'),
  group_delete: group('group.manage'),
  group_discard: group('group.manage'),
  group_redrive: group('group.manage'),
};

/** The binary publish frame: checked in its handler, as the JSON publish. */
export const PUBLISH_FRAME_ACCESS: Access = stream('stream.publish', { inHandler: true });
