/**
 * Consumer groups over durable stream shards (reference §5): long polls that hand out owed
 * records before new ones, claims with a visibility timeout, attempts, ack/nack/extend/dead
 * letter, the attempt bound, the in-flight cap, dead-letter listing/discard/redrive, seek,
 * describe and delete. The cursor (`<data_dir>/groups/`) and the dead letters
 * (`<data_dir>/dead-letters/`) are durable, written before the answer that depends on them;
 * claims live in memory (GroupState). A dead letter is recorded before the cursor moves past it.
 */
import {
  type CursorStore,
  type DeadLetterStore,
  type GroupShard,
  openCursorStore,
  openDeadLetterStore,
} from '@felix/storage';
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_GROUP_ADMIN,
  FEATURE_GROUP_CLAIM_CONTROL,
  FEATURE_GROUP_CONSUMER,
  FEATURE_GROUP_DEAD_LETTERS,
  FEATURE_GROUP_SKIPPED,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RECORDS_BINARY,
  FEATURE_RECORD_TIMESTAMPS,
  FLAG_BINARY_GROUP_RECORDS,
  type GroupRecord,
  type Message,
  encodeGroupRecordsFrame,
  fitsBinaryGroupRecords,
} from '@felix/wire';
import type { Catalog } from '../catalog/catalog.js';
import type { BrokerConfig } from '../config/types.js';
import { RequestRefusedError } from '../errors.js';
import {
  GROUP_ACK_BATCH_OFFSETS_MAX,
  GROUP_CONSUMER_NAME_BYTES_MAX,
  GROUP_DEAD_LETTER_LIST_MAX,
  GROUP_IDLE_EVICT_MS,
  GROUP_NACK_BATCH_OFFSETS_MAX,
  GROUP_NAME_BYTES_MAX,
  GROUP_SWEEP_INTERVAL_MS,
  GROUPS_IN_MEMORY_MAX,
} from '../limits.js';
import type { Negotiated } from '../session/negotiation.js';
import type { Shard } from '../streams/shard.js';
import type { ProjectionMetrics } from '../caches/projection-metrics.js';
import { checkTenant } from '../caches/cache-requests.js';
import { storageRefusal } from '../caches/cache-service.js';
import { GroupState, type Member } from './group-state.js';

export const GROUP_FEATURES =
  FEATURE_CONSUMER_GROUP |
  FEATURE_GROUP_DEAD_LETTERS |
  FEATURE_GROUP_ADMIN |
  FEATURE_GROUP_CLAIM_CONTROL |
  FEATURE_GROUP_CONSUMER |
  FEATURE_GROUP_SKIPPED;

/** High-word bits, Felix extensions: `group_ack_batch` and `group_nack_batch` (plain
 *  `group_ack` and `group_nack` stay) and binary `group_records` answers (the JSON answer stays). */
export const GROUP_FEATURES_HI =
  FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_NACK_BATCH | FEATURE_HI_GROUP_RECORDS_BINARY;

/**
 * A poll's answer as a binary `group_records` frame (flag 0x8000) when the client offered both
 * the flag and FEATURE_HI_GROUP_RECORDS_BINARY and the answer fits the layout; otherwise
 * undefined and the answer goes as JSON. Never a flag-bearing frame the client did not offer.
 */
export function groupAnswerFrame(auth: Negotiated, m: Message): Uint8Array | undefined {
  if (m.type !== 'group_records') return undefined;
  if ((auth.flags & FLAG_BINARY_GROUP_RECORDS) === 0) return undefined;
  if ((auth.featuresHi & FEATURE_HI_GROUP_RECORDS_BINARY) === 0) return undefined;
  return fitsBinaryGroupRecords(m) ? encodeGroupRecordsFrame(m) : undefined;
}

const GROUP_REQUESTS = new Set([
  'group_poll',
  'group_ack',
  'group_ack_batch',
  'group_nack',
  'group_nack_batch',
  'group_extend',
  'group_dead_letter',
  'group_dead_letters',
  'group_discard',
  'group_redrive',
  'group_seek',
  'group_describe',
  'group_delete',
]);

export function isGroupMessage(msg: Message): boolean {
  return GROUP_REQUESTS.has(msg.type);
}

type GroupMsg = Extract<Message, { group: string; shard: number }>;
type Msg<T extends Message['type']> = Extract<Message, { type: T }>;

interface Scope {
  shard: Shard;
  id: GroupShard;
  group: string;
  key: string;
}

/**
 * Whether the shard's ring holds `from` (a non-empty range [from, until)) and retention has not
 * trimmed it from the log (the log decides what is gone).
 */
function ringHolds(shard: Shard, from: number, until: number): boolean {
  const ring = shard.ring;
  return ring.size > 0 && from >= ring.base && from >= shard.store!.baseOffset && from < until;
}

/** Records [from, until) the shard's ring holds, in offset order; empty when it holds none. */
function ringRecords(shard: Shard, from: number, until: number): HeldRecord[] {
  if (!ringHolds(shard, from, until)) return [];
  const ring = shard.ring;
  const out: HeldRecord[] = [];
  ring.visit(from, until, (offset, payload, timestampMicros) =>
    out.push({ offset, payload, timestampMicros }),
  );
  return out;
}

interface HeldRecord {
  offset: number;
  payload: Uint8Array;
  timestampMicros: number;
}

/** Who is polling and what it asked for beyond the records themselves. */
interface PollParty {
  /** A named consumer on its connection; undefined for an anonymous poll. */
  member: Member | undefined;
  /** The poll asked to reclaim the member's claims from its older connections. */
  reclaim: boolean;
  /** The client negotiated FEATURE_GROUP_SKIPPED (it reads `skipped_before`). */
  reportsSkips: boolean;
  /** The client negotiated FEATURE_RECORD_TIMESTAMPS (it reads `timestamp_micros`). */
  reportsTimes: boolean;
}

/**
 * One record of a poll's answer, with its append time only for a client that reads it (set
 * after the fact: no object spread per record on the poll path).
 */
function groupRecord(
  party: PollParty,
  offset: number,
  payload: Uint8Array,
  attempts: number,
  skipped: number,
  timestampMicros: number,
): GroupRecord {
  const r: GroupRecord = { offset, payload, attempts, skipped_before: skipped };
  if (party.reportsTimes) r.timestamp_micros = timestampMicros;
  return r;
}

const bad = (message: string, reason: string) =>
  new RequestRefusedError('invalid_request', 'fatal', message, reason);
const stale = (offset: number, fatal: boolean) =>
  new RequestRefusedError(
    'stale_claim',
    fatal ? 'fatal' : 'retry',
    `the claim on offset ${offset} no longer stands`,
    'stale_claim',
  );

export class GroupService {
  private readonly cursors: CursorStore;
  private readonly deadLetters: DeadLetterStore;
  private readonly states = new Map<string, GroupState>();
  private readonly loading = new Map<string, Promise<GroupState>>();
  private waiters = new Set<() => void>();
  private closing = false;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly cfg: BrokerConfig,
    private readonly catalog: Catalog,
    private readonly metrics: ProjectionMetrics,
  ) {
    const store = { root: cfg.durable.data_dir!, fsync: 'onCommit' as const };
    this.cursors = openCursorStore(store);
    this.deadLetters = openDeadLetterStore(store);
    this.sweeper = setInterval(() => this.evictIdle(Date.now()), GROUP_SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  /**
   * Drops in-memory states idle for GROUP_IDLE_EVICT_MS with no claim standing. A state loaded
   * again starts from the durable cursor and accepts settles for anything below the tail.
   */
  evictIdle(nowMs: number): void {
    for (const [key, st] of this.states) {
      if (st.claims.size === 0 && nowMs - st.lastUsedMs >= GROUP_IDLE_EVICT_MS) {
        this.states.delete(key);
      }
    }
    this.metrics.groupsInMemory.set(this.states.size);
  }

  /** Wakes every waiting poll to re-check its group (a publish, a settle, a drain). */
  wake(): void {
    const w = this.waiters;
    this.waiters = new Set();
    for (const f of w) f();
  }

  /** Ends every wait: polls answer with what they have. */
  drain(): void {
    this.closing = true;
    this.wake();
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    this.wake();
    await this.cursors.close();
    await this.deadLetters.close();
  }

  /** `conn` identifies the client's connection (named consumers' claims are per connection). */
  async answer(auth: Negotiated, m: Message, conn: object): Promise<Message> {
    const msg = m as GroupMsg;
    checkTenant(auth, msg.tenant_id);
    const scope = this.scope(msg);
    try {
      switch (msg.type) {
        case 'group_poll':
          return await this.poll(scope, msg, this.party(auth, msg, conn));
        case 'group_ack':
        case 'group_nack':
        case 'group_dead_letter':
          return await this.settle(scope, msg);
        case 'group_ack_batch':
          return await this.ackBatch(auth, scope, msg);
        case 'group_nack_batch':
          return await this.nackBatch(auth, scope, msg);
        case 'group_extend':
          return await this.extend(scope, msg);
        case 'group_dead_letters':
          return {
            type: 'group_dead_letter_list',
            offsets: (
              await this.deadLetters.list(scope.id, scope.group, GROUP_DEAD_LETTER_LIST_MAX)
            )
              .filter((d) => d.state === 'dead')
              .map((d) => d.offset),
            request_id: msg.request_id,
          };
        case 'group_discard':
          return await this.discard(scope, msg);
        case 'group_redrive':
          return await this.redrive(scope, msg);
        case 'group_seek':
          return await this.seek(scope, msg);
        case 'group_describe':
          return await this.describe(scope, msg);
        case 'group_delete':
          return await this.remove(scope, msg);
        default:
          throw bad(`unsupported request ${(msg as Message).type}`, 'unsupported_request');
      }
    } catch (err) {
      throw storageRefusal(msg.type, err);
    }
  }

  private scope(msg: GroupMsg): Scope {
    const s = this.catalog.get(msg.tenant_id, msg.namespace, msg.stream);
    if (s === undefined) {
      throw new RequestRefusedError(
        'not_found',
        'retry_after',
        `stream ${msg.namespace}/${msg.stream} not found`,
        'unknown_stream',
      );
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
      shard,
      id,
      group: msg.group,
      key: JSON.stringify([msg.tenant_id, msg.namespace, msg.stream, msg.shard, msg.group]),
    };
  }

  /** The group's in-memory state, loading it from the durable cursor and dead letters. */
  private state(scope: Scope): Promise<GroupState> {
    const held = this.states.get(scope.key);
    if (held !== undefined) return Promise.resolve(held);
    let p = this.loading.get(scope.key);
    if (p === undefined) {
      if (this.states.size >= GROUPS_IN_MEMORY_MAX) {
        return Promise.reject(
          new RequestRefusedError(
            'limit_exceeded',
            'retry_after',
            `at most ${GROUPS_IN_MEMORY_MAX} groups in memory`,
            'group_limit',
          ),
        );
      }
      p = (async () => {
        const committed = await this.cursors.position(scope.id, scope.group);
        const store = scope.shard.store!;
        const base = store.baseOffset;
        const st = new GroupState(
          Math.max(committed ?? base, base),
          committed,
          scope.shard.appliedNext,
          Date.now(),
        );
        // Retention passed the group's cursor while nothing held it in memory.
        if (committed !== undefined && committed < base) {
          st.skippedPending = base - committed;
          this.metrics.groupRecordsSkipped.inc(base - committed);
        }
        for (const d of await this.deadLetters.list(scope.id, scope.group)) {
          if (d.state !== 'redriven') continue;
          st.redriven.add(d.offset);
          st.owed.set(d.offset, 0);
        }
        this.states.set(scope.key, st);
        this.metrics.groupsInMemory.set(this.states.size);
        return st;
      })().finally(() => this.loading.delete(scope.key));
      this.loading.set(scope.key, p);
    }
    return p;
  }

  /** The state when the group exists (in memory, a cursor, or dead letters); else not_found. */
  private async existing(scope: Scope): Promise<GroupState> {
    const held = this.states.get(scope.key);
    if (held !== undefined) return held;
    const committed = await this.cursors.position(scope.id, scope.group);
    if (committed === undefined) {
      const dl = await this.deadLetters.list(scope.id, scope.group, 1);
      if (dl.length === 0) {
        throw new RequestRefusedError(
          'not_found',
          'retry_after',
          `group ${scope.group} not found`,
          'unknown_group',
        );
      }
    }
    return this.state(scope);
  }

  // ---- poll ----

  /** Checks a poll's `consumer` and `reclaim` (reference §5: 1–128 bytes; reclaim needs a name). */
  private party(auth: Negotiated, msg: Msg<'group_poll'>, conn: object): PollParty {
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
      // Names are scoped to the authenticated principal; until authorization lands that is the
      // tenant, which the group's scope already holds.
      member: name === undefined ? undefined : { name, conn },
      reclaim: msg.reclaim,
      reportsSkips: (auth.features & FEATURE_GROUP_SKIPPED) !== 0,
      reportsTimes: (auth.features & FEATURE_RECORD_TIMESTAMPS) !== 0,
    };
  }

  private async poll(scope: Scope, msg: Msg<'group_poll'>, party: PollParty): Promise<Message> {
    const g = this.cfg.groups;
    if (msg.max_records === 0) throw bad('max_records must be at least 1', 'bad_max_records');
    if (msg.visibility_ms === 0) throw bad('visibility_ms must be at least 1', 'bad_visibility');
    const max = Math.min(msg.max_records, g.max_poll_records);
    const visibility = Math.min(msg.visibility_ms ?? g.visibility_timeout_ms, g.max_visibility_ms);
    const until = Date.now() + Math.min(msg.wait_ms, g.max_wait_ms);
    const st = await this.state(scope);
    for (;;) {
      const turn = st.pollChain.then(() => this.handOut(scope, st, max, visibility, party));
      st.pollChain = turn.catch(() => undefined);
      const records = await turn;
      const now = Date.now();
      if (records.length > 0 || now >= until || this.closing) {
        return { type: 'group_records', records, request_id: msg.request_id };
      }
      const lapse = st.earliestDeadline();
      const wakeAt = Math.min(until, lapse ?? until, now + g.wait_recheck_ms);
      await this.sleep(Math.max(1, wakeAt - now));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  /**
   * One hand-out decision: records a reclaim reserved for this connection first, then owed
   * records (lowest offset first), then new ones.
   */
  private async handOut(
    scope: Scope,
    st: GroupState,
    max: number,
    visibility: number,
    party: PollParty,
  ): Promise<GroupRecord[]> {
    const g = this.cfg.groups;
    const now = Date.now();
    st.lastUsedMs = now;
    const lapsed = st.expire(now);
    if (lapsed > 0) this.metrics.groupClaimsLapsed.inc(lapsed);
    const member = party.member;
    const out: GroupRecord[] = [];
    let bytes = 0;
    const store = scope.shard.store!;
    const fits = (len: number) => out.length === 0 || bytes + len <= g.max_poll_bytes;
    if (member !== undefined) {
      if (party.reclaim) {
        const n = st.reclaim(member);
        if (n > 0) this.metrics.groupClaimsReclaimed.inc(n);
      }
      // Reserved records are already in flight: they go out even at the in-flight cap.
      await this.handOutReserved(scope, st, member, max, visibility, out, fits, party, (len) => {
        bytes += len;
      });
    }
    const room = g.max_in_flight - st.claims.size;
    if (room <= 0) {
      if (out.length === 0) this.metrics.groupPollsCapped.inc();
      this.metrics.groupDelivered.inc(out.length);
      return out;
    }
    const want = Math.min(max, out.length + room);
    for (const offset of st.owedInOrder()) {
      if (out.length >= want) break;
      const attempts = st.owed.get(offset);
      if (attempts === undefined) continue;
      if (attempts >= g.max_attempts) {
        await this.giveUp(scope, st, offset);
        continue;
      }
      const rec = await this.recordAt(scope, offset, () => st.owed.has(offset));
      if (rec === 'settled') continue;
      if (rec === 'gone') {
        // Retention outranks a group: a record that is gone cannot be delivered again.
        await this.finish(scope, st, offset);
        continue;
      }
      if (!fits(rec.payload.byteLength)) break;
      st.claim(offset, attempts + 1, Date.now() + visibility, member);
      bytes += rec.payload.byteLength;
      out.push(groupRecord(party, offset, rec.payload, attempts + 1, 0, rec.timestampMicros));
    }
    const tail = scope.shard.appliedNext;
    while (out.length < want && st.next < tail) {
      const from = st.next;
      const until = Math.min(tail, from + want - out.length);
      // One deadline for the records of this read (no await between them).
      const deadline = Date.now() + visibility;
      const done = st.done;
      const owed = st.owed;
      let full = false;
      // Claims one record of this read and hands it out, unless it is already finished,
      // claimed or owed; false once the answer is full.
      const take = (offset: number, payload: Uint8Array, timestampMicros: number): boolean => {
        if (!fits(payload.byteLength)) {
          full = true;
          return false;
        }
        st.next = Math.max(st.next, offset + 1);
        if (
          (done.size > 0 && done.has(offset)) ||
          st.claims.has(offset) ||
          (owed.size > 0 && owed.has(offset))
        )
          return true;
        st.claim(offset, 1, deadline, member);
        bytes += payload.byteLength;
        // The first new record after a retention skip says how many records it skipped.
        const skipped = st.skippedPending > 0 ? st.takeSkipped() : 0;
        const skips = party.reportsSkips ? skipped : 0;
        out.push(groupRecord(party, offset, payload, 1, skips, timestampMicros));
        return true;
      };
      // The shard's ring holds the newest records in memory: a group near the tail takes them
      // from there in place (no disk read, no await, no copy per record); the log is the
      // fallback.
      if (ringHolds(scope.shard, from, until)) {
        scope.shard.ring.visit(from, until, (offset, payload, timestampMicros) => {
          if (!full) take(offset, payload, timestampMicros);
        });
      }
      if (st.next === from && !full) {
        const r = await store.read(from, {
          maxRecords: want - out.length,
          maxBytes: Math.max(1, g.max_poll_bytes - bytes),
        });
        if (r.kind === 'trimmed') {
          const skipped = st.skipTo(r.oldest);
          if (skipped > 0) this.metrics.groupRecordsSkipped.inc(skipped);
          await this.commit(scope, st);
          continue;
        }
        if (r.records.length === 0) break;
        for (const rec of r.records) {
          if (rec.offset >= tail || out.length >= want) break;
          if (!take(rec.offset, rec.payload, rec.timestampMicros)) break;
        }
      }
      if (full || st.next === from) break;
    }
    this.metrics.groupDelivered.inc(out.length);
    return out;
  }

  /**
   * The record at `offset`, from the shard's ring or else its log: 'gone' when retention removed
   * it, 'settled' when `stillOut` says it stopped being the caller's to hand out while the log
   * was read.
   */
  private async recordAt(
    scope: Scope,
    offset: number,
    stillOut: () => boolean,
  ): Promise<HeldRecord | 'gone' | 'settled'> {
    const held = ringRecords(scope.shard, offset, offset + 1)[0];
    if (held !== undefined) return held;
    const r = await scope.shard.store!.read(offset, { maxRecords: 1, maxBytes: 1 });
    if (!stillOut()) return 'settled';
    const rec = r.kind === 'records' ? r.records[0] : undefined;
    return rec === undefined || rec.offset !== offset ? 'gone' : rec;
  }

  /**
   * Hands this connection the records a reclaim reserved for it, lowest offset first, each as a
   * new delivery (attempts + 1, a fresh visibility). One past the attempt bound becomes a dead
   * letter instead, as an owed record would.
   */
  private async handOutReserved(
    scope: Scope,
    st: GroupState,
    member: Member,
    max: number,
    visibility: number,
    out: GroupRecord[],
    fits: (len: number) => boolean,
    party: PollParty,
    took: (len: number) => void,
  ): Promise<void> {
    const g = this.cfg.groups;
    while (out.length < max) {
      const claim = st.nextReserved(member.conn);
      if (claim === undefined) return;
      const offset = claim.offset;
      if (claim.attempts >= g.max_attempts) {
        await this.giveUp(scope, st, offset);
        continue;
      }
      const rec = await this.recordAt(scope, offset, () => st.claims.get(offset) === claim);
      if (rec === 'settled') continue; // settled or lapsed while the log was read
      if (rec === 'gone') {
        await this.finish(scope, st, offset); // retention removed it
        continue;
      }
      if (!fits(rec.payload.byteLength)) {
        st.unreserve(member.conn, offset);
        return;
      }
      st.claim(offset, claim.attempts + 1, Date.now() + visibility, member);
      took(rec.payload.byteLength);
      const attempts = claim.attempts + 1;
      out.push(groupRecord(party, offset, rec.payload, attempts, 0, rec.timestampMicros));
    }
  }

  // ---- settles ----

  private tailCheck(scope: Scope, offset: number): void {
    const tail = scope.shard.appliedNext;
    if (offset >= tail)
      throw bad(`offset ${offset} is at or past the tail ${tail}`, 'offset_past_tail');
  }

  private async settle(
    scope: Scope,
    msg: Msg<'group_ack'> | Msg<'group_nack'> | Msg<'group_dead_letter'>,
  ): Promise<Message> {
    this.tailCheck(scope, msg.offset);
    const st = await this.existing(scope);
    st.lastUsedMs = Date.now();
    const offset = msg.offset;
    const ok: Message = { type: 'cache_ok', request_id: msg.request_id };
    if (msg.type === 'group_nack') {
      const handed = this.handBack(st, offset, msg.attempts, msg.delay_ms ?? 0, Date.now());
      if (handed !== 'handed') throw stale(offset, handed === 'stale_named');
      this.wake();
      return ok;
    }
    const claim = st.claims.get(offset);
    if (claim === undefined && st.isUnknown(offset)) throw stale(offset, false);
    if (claim === undefined && !st.owed.has(offset) && !st.redriven.has(offset)) {
      if (offset < st.position || st.done.has(offset)) return ok; // already finished
    }
    if (msg.type === 'group_dead_letter') await this.giveUp(scope, st, offset);
    else await this.finish(scope, st, offset);
    return ok;
  }

  /**
   * `group_ack_batch`: every offset is acknowledged as a `group_ack` naming it would be, and the
   * one answer goes once the position covering them is durable (one cursor write for the batch,
   * coalesced with the writes of other settles in flight). Offsets whose claim no longer stands
   * are named in `stale` instead of failing the batch; an offset past the tail refuses the whole
   * request before anything is settled.
   */
  private async ackBatch(
    auth: Negotiated,
    scope: Scope,
    msg: Msg<'group_ack_batch'>,
  ): Promise<Message> {
    if ((auth.featuresHi & FEATURE_HI_GROUP_ACK_BATCH) === 0) {
      throw bad('group_ack_batch was not negotiated', 'ack_batch_not_negotiated');
    }
    const offsets = msg.offsets;
    if (offsets.length === 0 || offsets.length > GROUP_ACK_BATCH_OFFSETS_MAX) {
      throw bad(`a batch names 1..${GROUP_ACK_BATCH_OFFSETS_MAX} offsets`, 'bad_ack_batch');
    }
    for (const offset of offsets) this.tailCheck(scope, offset);
    const st = await this.existing(scope);
    st.lastUsedMs = Date.now();
    const stale: number[] = [];
    let finished = false;
    for (const offset of offsets) {
      const claim = st.claims.get(offset);
      if (claim === undefined) {
        if (st.isUnknown(offset)) {
          stale.push(offset);
          continue;
        }
        const pending = st.owed.has(offset) || st.redriven.has(offset);
        if (!pending && (offset < st.position || st.done.has(offset))) continue; // finished
      }
      const redriven = st.redriven.delete(offset);
      st.finish(offset);
      // A redriven entry goes durably before the position can pass it (as a single ack does).
      if (redriven) await this.deadLetters.finish(scope.id, scope.group, offset);
      finished = true;
    }
    if (finished) {
      await this.commit(scope, st);
      this.wake();
    }
    return { type: 'group_acked', stale, request_id: msg.request_id };
  }

  /**
   * One nack of `offset`: 'stale_named' when `attempts` names a delivery other than the standing
   * claim's, 'stale' when no claim stands and the offset is not owed already (handed back, so
   * 'handed' again), else the claim goes back: owed now, or after `delayMs` (bounded by the
   * visibility maximum; it stays in flight meanwhile).
   */
  private handBack(
    st: GroupState,
    offset: number,
    attempts: number | undefined,
    delayMs: number,
    nowMs: number,
  ): 'handed' | 'stale' | 'stale_named' {
    const claim = st.claims.get(offset);
    if (attempts !== undefined && claim?.attempts !== attempts) return 'stale_named';
    if (claim === undefined) return st.owed.has(offset) ? 'handed' : 'stale';
    if (delayMs > 0) {
      st.reschedule(claim, nowMs + Math.min(delayMs, this.cfg.groups.max_visibility_ms), true);
    } else {
      st.claims.delete(offset);
      st.owed.set(offset, claim.attempts);
    }
    return 'handed';
  }

  /**
   * `group_nack_batch`: every offset is handed back as a `group_nack` naming it (with
   * `attempts[i]` when given, and the request's one `delay_ms`) would be, answered once.
   * Offsets whose claim no longer stands are named in `stale` instead of failing the batch, and
   * those whose `attempts` named another delivery also in `superseded` (a single nack's fatal
   * case); an empty or oversized list, an attempts list of another length or an offset past the
   * tail refuses the whole request before anything is handed back.
   */
  private async nackBatch(
    auth: Negotiated,
    scope: Scope,
    msg: Msg<'group_nack_batch'>,
  ): Promise<Message> {
    if ((auth.featuresHi & FEATURE_HI_GROUP_NACK_BATCH) === 0) {
      throw bad('group_nack_batch was not negotiated', 'nack_batch_not_negotiated');
    }
    const { offsets, attempts } = msg;
    if (offsets.length === 0 || offsets.length > GROUP_NACK_BATCH_OFFSETS_MAX) {
      throw bad(`a batch names 1..${GROUP_NACK_BATCH_OFFSETS_MAX} offsets`, 'bad_nack_batch');
    }
    if (attempts !== undefined && attempts.length !== offsets.length) {
      throw bad('attempts names one delivery per offset', 'bad_nack_batch');
    }
    for (const offset of offsets) this.tailCheck(scope, offset);
    const st = await this.existing(scope);
    const now = Date.now();
    st.lastUsedMs = now;
    const delay = msg.delay_ms ?? 0;
    const stale: number[] = [];
    // The offsets a single nack would refuse as fatal (its `attempts` named another delivery).
    const superseded: number[] = [];
    for (let i = 0; i < offsets.length; i++) {
      const offset = offsets[i]!;
      const handed = this.handBack(st, offset, attempts?.[i], delay, now);
      if (handed === 'handed') continue;
      stale.push(offset);
      if (handed === 'stale_named') superseded.push(offset);
    }
    if (stale.length < offsets.length) this.wake();
    return {
      type: 'group_nacked',
      stale,
      request_id: msg.request_id,
      ...(superseded.length > 0 ? { superseded } : {}),
    };
  }

  /** Records `offset` as a dead letter, then finishes it (the cursor never passes it first). */
  private async giveUp(scope: Scope, st: GroupState, offset: number): Promise<void> {
    st.release(offset);
    st.redriven.delete(offset);
    await this.deadLetters.record(scope.id, scope.group, offset);
    this.metrics.groupDeadLettered.inc();
    st.finish(offset);
    await this.commit(scope, st);
    this.wake();
  }

  /** Finishes `offset`: a redriven entry is removed durably, then the cursor advances. */
  private async finish(scope: Scope, st: GroupState, offset: number): Promise<void> {
    const redriven = st.redriven.delete(offset);
    st.finish(offset);
    if (redriven) await this.deadLetters.finish(scope.id, scope.group, offset);
    await this.commit(scope, st);
    this.wake();
  }

  /**
   * Makes the position durable (never backwards) before the settle is answered. Commits
   * coalesce: while one cursor write is in flight, every settle behind it waits for it and then
   * one write covers them all, so a burst of acks costs one write, not one each.
   */
  private async commit(scope: Scope, st: GroupState): Promise<void> {
    const target = st.position;
    for (;;) {
      if (st.committed !== undefined && st.committed >= target) return;
      const running = st.commitRun;
      if (running !== undefined) {
        await running.catch(() => undefined);
        continue;
      }
      const run = this.cursors.commit(scope.id, scope.group, st.position).then((at) => {
        st.committed = Math.max(st.committed ?? 0, at);
      });
      st.commitRun = run;
      try {
        await run;
      } finally {
        if (st.commitRun === run) st.commitRun = undefined;
      }
    }
  }

  private async extend(scope: Scope, msg: Msg<'group_extend'>): Promise<Message> {
    if (msg.extend_ms === 0) throw bad('extend_ms must be at least 1', 'bad_extend');
    this.tailCheck(scope, msg.offset);
    const st = await this.existing(scope);
    st.expire(Date.now());
    const claim = st.claims.get(msg.offset);
    if (claim === undefined || claim.delayed || claim.attempts !== msg.attempts) {
      throw stale(msg.offset, true);
    }
    const visible = Math.min(msg.extend_ms, this.cfg.groups.max_visibility_ms);
    st.reschedule(claim, Date.now() + visible);
    return { type: 'group_extended', visible_ms: visible, request_id: msg.request_id };
  }

  // ---- dead letters ----

  private async discard(scope: Scope, msg: Msg<'group_discard'>): Promise<Message> {
    if (!(await this.deadLetters.discard(scope.id, scope.group, msg.offset))) {
      throw bad(`no dead letter at offset ${msg.offset}`, 'no_dead_letter');
    }
    return { type: 'cache_ok', request_id: msg.request_id };
  }

  private async redrive(scope: Scope, msg: Msg<'group_redrive'>): Promise<Message> {
    const st = await this.state(scope);
    // Durable first: a redrive answered is a redrive that survives a restart.
    if (!(await this.deadLetters.redrive(scope.id, scope.group, msg.offset))) {
      throw bad(`no dead letter at offset ${msg.offset}`, 'no_dead_letter');
    }
    st.done.delete(msg.offset);
    st.redriven.add(msg.offset);
    st.owed.set(msg.offset, 0);
    this.wake();
    return { type: 'cache_ok', request_id: msg.request_id };
  }

  // ---- admin ----

  private async seek(scope: Scope, msg: Msg<'group_seek'>): Promise<Message> {
    const store = scope.shard.store!;
    const tail = scope.shard.appliedNext;
    const st = await this.state(scope);
    if (msg.if_new && st.committed !== undefined) {
      return {
        type: 'group_position',
        offset: st.position,
        moved: false,
        request_id: msg.request_id,
      };
    }
    const start = msg.start;
    const target =
      start === 'earliest' ? store.baseOffset : start === 'latest' ? tail : start.offset;
    if (target > tail) throw bad(`offset ${target} is past the tail ${tail}`, 'offset_past_tail');
    const at = Math.max(target, store.baseOffset);
    await this.cursors.seek(scope.id, scope.group, at);
    st.reset(at);
    st.committed = at;
    this.wake();
    return { type: 'group_position', offset: at, moved: true, request_id: msg.request_id };
  }

  private async describe(scope: Scope, msg: Msg<'group_describe'>): Promise<Message> {
    const st = this.states.get(scope.key);
    const committed = st?.committed ?? (await this.cursors.position(scope.id, scope.group));
    st?.expire(Date.now());
    const dead = (await this.deadLetters.list(scope.id, scope.group)).filter(
      (d) => d.state === 'dead',
    ).length;
    if (st === undefined && committed === undefined && dead === 0) {
      throw new RequestRefusedError(
        'not_found',
        'retry_after',
        `group ${scope.group} not found`,
        'unknown_group',
      );
    }
    return {
      type: 'group_info',
      ...(committed !== undefined ? { committed } : {}),
      tail: scope.shard.appliedNext,
      in_flight: st?.claims.size ?? 0,
      owed: st?.owed.size ?? 0,
      dead_letters: dead,
      request_id: msg.request_id,
    };
  }

  private async remove(scope: Scope, msg: Msg<'group_delete'>): Promise<Message> {
    const inMemory = this.states.delete(scope.key);
    this.metrics.groupsInMemory.set(this.states.size);
    const committed = await this.cursors.position(scope.id, scope.group);
    let existed = inMemory || committed !== undefined;
    if (committed !== undefined) await this.cursors.delete(scope.id, scope.group);
    for (;;) {
      const page = await this.deadLetters.list(scope.id, scope.group);
      if (page.length === 0) break;
      existed = true;
      for (const d of page) {
        if (d.state === 'dead') await this.deadLetters.discard(scope.id, scope.group, d.offset);
        else await this.deadLetters.finish(scope.id, scope.group, d.offset);
      }
    }
    this.wake();
    return { type: 'group_deleted', existed, request_id: msg.request_id };
  }
}
