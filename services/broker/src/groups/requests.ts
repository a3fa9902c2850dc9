/**
 * What a group request names, checked: the group's scope (tenant, stream, shard, group name) on
 * a durable shard this broker serves, and who a poll is for (consumer name, reclaim, what the
 * client reads). The refusals shared by the group files are made here.
 */
import type { GroupShard } from '@felix/storage';
import { FEATURE_GROUP_SKIPPED, FEATURE_RECORD_TIMESTAMPS, type Message } from '@felix/wire';
import { GROUP_CONSUMER_NAME_BYTES_MAX, GROUP_NAME_BYTES_MAX } from '../limits.js';
import type { Negotiated } from '../session/negotiation.js';
import { Refusal } from '../session/refusal.js';
import type { StreamConfig } from '../config/types.js';
import type { StreamRuntime } from '../streams/shard.js';
import type { Member } from './group-state.js';
import type { RecordSource } from './record-source.js';

export type GroupMsg = Extract<Message, { group: string; shard: number }>;
export type Msg<T extends Message['type']> = Extract<Message, { type: T }>;

/** One group on one stream shard. */
export interface Scope {
  source: RecordSource;
  id: GroupShard;
  group: string;
  /** The group's key in the registry. */
  key: string;
  /** The stream's config: its groups' cursor durability, when it names one. */
  stream: StreamConfig;
}

/** Who is polling and what it asked for beyond the records themselves. */
export interface PollParty {
  /** A named consumer on its connection; undefined for an anonymous poll. */
  member: Member | undefined;
  /** The poll asked to reclaim the member's claims from its older connections. */
  reclaim: boolean;
  /** The client negotiated FEATURE_GROUP_SKIPPED (it reads `skipped_before`). */
  reportsSkips: boolean;
  /** The client negotiated FEATURE_RECORD_TIMESTAMPS (it reads `timestamp_micros`). */
  reportsTimes: boolean;
}

export const bad = (message: string, reason: string): Refusal =>
  new Refusal('invalid_request', message, reason);

/** A settle naming a claim that no longer stands: `fatal` when it named another delivery. */
export const stale = (offset: number, fatal: boolean): Refusal =>
  new Refusal('stale_claim', `the claim on offset ${offset} no longer stands`, 'stale_claim', {
    retry: fatal ? 'fatal' : 'retry',
  });

export const unknownGroup = (group: string): Refusal =>
  new Refusal('not_found', `group ${group} not found`, 'unknown_group');

export type StreamLookup = (
  tenant: string,
  namespace: string,
  name: string,
) => StreamRuntime | undefined;

/** The request's scope, or a refusal: unknown stream, not durable, bad shard or group name. */
export function scopeOf(streams: StreamLookup, msg: GroupMsg): Scope {
  const s = streams(msg.tenant_id, msg.namespace, msg.stream);
  if (s === undefined) {
    const message = `stream ${msg.namespace}/${msg.stream} not found`;
    throw new Refusal('not_found', message, 'unknown_stream');
  }
  if (!s.config.durable) throw bad('consumer groups need a durable stream', 'group_not_durable');
  const shard = s.shards[msg.shard];
  if (shard === undefined || shard.store === null) {
    throw bad(
      `shard ${msg.shard} out of range (stream has ${s.shards.length})`,
      'shard_out_of_range',
    );
  }
  const bytes = Buffer.byteLength(msg.group);
  if (bytes === 0 || bytes > GROUP_NAME_BYTES_MAX || msg.group.includes('\u001F')) {
    throw bad(`a group name is 1..${GROUP_NAME_BYTES_MAX} bytes without U+001F`, 'bad_group');
  }
  const id: GroupShard = {
    tenant: msg.tenant_id,
    namespace: msg.namespace,
    stream: msg.stream,
    shard: msg.shard,
  };
  return {
    source: shard,
    id,
    group: msg.group,
    key: JSON.stringify([msg.tenant_id, msg.namespace, msg.stream, msg.shard, msg.group]),
    stream: s.config,
  };
}

/**
 * The scope of the group last asked for, reused while requests name the same group on the same
 * stream runtime and shard (a consume loop names one group on every poll and ack): its checks
 * and its registry key are made once, not per request. The lookup still runs every time, so a
 * stream removed or reconfigured (a new runtime or shard) is seen at once.
 */
export class ScopeMemo {
  private last: Scope | undefined;
  private runtime: StreamRuntime | undefined;

  constructor(private readonly streams: StreamLookup) {}

  of(msg: GroupMsg): Scope {
    const s = this.streams(msg.tenant_id, msg.namespace, msg.stream);
    const last = this.last;
    if (
      last !== undefined &&
      s !== undefined &&
      s === this.runtime &&
      last.source === s.shards[msg.shard] &&
      last.group === msg.group &&
      last.id.shard === msg.shard &&
      last.id.tenant === msg.tenant_id &&
      last.id.namespace === msg.namespace &&
      last.id.stream === msg.stream
    ) {
      return last;
    }
    const scope = scopeOf(() => s, msg);
    this.last = scope;
    this.runtime = s;
    return scope;
  }
}

/** Checks a poll's `consumer` and `reclaim` (reference §5: 1–128 bytes; reclaim needs a name). */
export function pollParty(auth: Negotiated, msg: Msg<'group_poll'>, conn: object): PollParty {
  const name = msg.consumer;
  if (name !== undefined) {
    const bytes = Buffer.byteLength(name);
    if (bytes === 0 || bytes > GROUP_CONSUMER_NAME_BYTES_MAX) {
      throw bad(`a consumer name is 1..${GROUP_CONSUMER_NAME_BYTES_MAX} bytes`, 'bad_consumer');
    }
  } else if (msg.reclaim) {
    throw bad('reclaim needs a consumer name', 'reclaim_without_consumer');
  }
  return {
    // Names are scoped to the group (its scope holds the tenant), not to the token's principal:
    // docs/queues.md, "Known gaps".
    member: name === undefined ? undefined : { name, conn },
    reclaim: msg.reclaim,
    reportsSkips: (auth.features & FEATURE_GROUP_SKIPPED) !== 0,
    reportsTimes: (auth.features & FEATURE_RECORD_TIMESTAMPS) !== 0,
  };
}

/** Refuses an offset at or past the shard's visible tail. */
export function tailCheck(scope: Scope, offset: number): void {
  const tail = scope.source.appliedNext;
  if (offset >= tail) {
    throw bad(`offset ${offset} is at or past the tail ${tail}`, 'offset_past_tail');
  }
}
