/**
 * Consumer groups over durable stream shards (reference §5), behind one facade: each request is
 * checked (requests.ts) and answered by its part: long polls here, hand-out (hand-out.ts),
 * settles (settles.ts) and administration (admin.ts), over the groups held in memory and their
 * durable cursor and dead letters (registry.ts). Groups read a shard only as a RecordSource.
 * Claims live in memory (GroupState); a dead letter is recorded before the cursor moves past it.
 */
import type { Io } from '@felix/storage';
import type { GroupRecord, Message } from '@felix/wire';
import type { ProjectionMetrics } from '../caches/projection-metrics.js';
import { storageRefusal } from '../caches/cache-service.js';
import type { BrokerConfig } from '../config/types.js';
import { GROUP_SWEEP_INTERVAL_MS } from '../limits.js';
import type { ShardOwnership } from '../session/context.js';
import type { Negotiated } from '../session/negotiation.js';
import { checkTenant } from '../session/refusal.js';
import { describe, discard, listDeadLetters, redrive, remove, seek } from './admin.js';
import type { GroupCore } from './core.js';
import type { GroupState } from './group-state.js';
import { handOut } from './hand-out.js';
import type { RecordSource } from './record-source.js';
import { GroupRegistry } from './registry.js';
import {
  type GroupMsg,
  type Msg,
  type PollParty,
  type Scope,
  ScopeMemo,
  type StreamLookup,
  bad,
  pollParty,
} from './requests.js';
import { ackBatch, ackBatchNow, extend, nackBatch, settle } from './settles.js';
import { PollWaiters } from './waiters.js';

/** The asker of a request that has no stream (tests, admin): never ends. */
const OPEN = { ended: false } as const;

export class GroupService {
  private readonly core: GroupCore;
  private readonly registry: GroupRegistry;
  private readonly waiters = new PollWaiters();
  private closing = false;
  private readonly sweeper: NodeJS.Timeout;
  private readonly scopes: ScopeMemo;
  /** Control-plane mode: whether this broker may still hand out a shard's records (its lease
   *  held, the assignment naming it); a long poll asks again each time it wakes. */
  ownership: Pick<ShardOwnership, 'refuseMessage'> | undefined;

  constructor(cfg: BrokerConfig, streams: StreamLookup, metrics: ProjectionMetrics, io?: Io) {
    this.scopes = new ScopeMemo(streams);
    this.registry = new GroupRegistry(cfg.durable.data_dir!, metrics, cfg.groups, io);
    this.core = { groups: cfg.groups, metrics, registry: this.registry, waiters: this.waiters };
    this.sweeper = setInterval(() => this.registry.evictIdle(Date.now()), GROUP_SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  /** Drops idle in-memory states (see GroupRegistry.evictIdle). */
  evictIdle(nowMs: number): void {
    this.registry.evictIdle(nowMs);
  }

  /** Records became visible on `source`: its waiting polls re-check their groups. */
  wake(source: RecordSource): void {
    this.waiters.wake(source);
  }

  /** Ends every wait: polls answer with what they have. */
  drain(): void {
    this.closing = true;
    this.waiters.wakeAll();
  }

  /** The durable group state of the shards this broker leads, for replication to ship and to
   *  release when another broker leads the shard (registry.ts). */
  get shardState(): Pick<GroupRegistry, 'shardLog' | 'releaseShard' | 'admitShard' | 'busyIn'> {
    return this.registry;
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    this.waiters.wakeAll();
    await this.registry.close();
  }

  /**
   * `conn` identifies the client's connection (named consumers' claims are per connection);
   * `asker` is the stream the request came on: a poll whose stream has ended claims nothing.
   * A poll or an ack batch that needs no await is answered in this turn (`answerNow`), the
   * rest with a promise.
   */
  answer(
    auth: Negotiated,
    m: Message,
    conn: object,
    asker: { readonly ended: boolean } = OPEN,
  ): Message | Promise<Message> {
    const msg = m as GroupMsg;
    let scope: Scope;
    try {
      checkTenant(auth, msg.tenant_id);
      scope = this.scopes.of(msg);
    } catch (err) {
      return Promise.reject(err);
    }
    try {
      const now = this.answerNow(auth, scope, msg, conn, asker);
      if (now !== undefined) return now;
    } catch (err) {
      return Promise.reject(storageRefusal(msg.type, err));
    }
    return this.answerLater(auth, scope, msg, conn, asker);
  }

  /**
   * The answer when it needs no await: a poll of a group held in memory with no hand-out
   * running whose records memory holds, or an ack batch settled in memory under `periodic`.
   * Undefined otherwise, having changed nothing the awaited path would not change first too.
   */
  private answerNow(
    auth: Negotiated,
    scope: Scope,
    msg: GroupMsg,
    conn: object,
    asker: { readonly ended: boolean },
  ): Message | Promise<Message> | undefined {
    if (msg.type === 'group_ack_batch') return ackBatchNow(this.core, auth, scope, msg);
    if (msg.type !== 'group_poll') return undefined;
    const st = this.registry.held(scope);
    // A group that never committed writes its position before its first answer (awaited).
    if (st === undefined || st.handingOut > 0 || st.committed === undefined) return undefined;
    const { max, visibility, until } = this.pollBounds(msg);
    const party = pollParty(auth, msg, conn);
    if (asker.ended) return { type: 'group_records', records: [], request_id: msg.request_id };
    const records = handOut(this.core, scope, st, max, visibility, party);
    if (records instanceof Promise) {
      return this.pollFrom(scope, msg, party, asker, { st, until, begun: records });
    }
    if (records.length > 0 || Date.now() >= until || this.closing) {
      return { type: 'group_records', records, request_id: msg.request_id };
    }
    return undefined; // nothing to hand out yet: the awaited poll waits for records
  }

  private async answerLater(
    auth: Negotiated,
    scope: Scope,
    msg: GroupMsg,
    conn: object,
    asker: { readonly ended: boolean },
  ): Promise<Message> {
    const core = this.core;
    try {
      switch (msg.type) {
        case 'group_poll':
          return await this.poll(scope, msg, pollParty(auth, msg, conn), asker);
        case 'group_ack':
        case 'group_nack':
        case 'group_dead_letter':
          return await settle(core, scope, msg);
        case 'group_ack_batch':
          return await ackBatch(core, auth, scope, msg);
        case 'group_nack_batch':
          return await nackBatch(core, auth, scope, msg);
        case 'group_extend':
          return await extend(core, scope, msg);
        case 'group_dead_letters':
          return await listDeadLetters(core, scope, msg);
        case 'group_discard':
          return await discard(core, scope, msg);
        case 'group_redrive':
          return await redrive(core, scope, msg);
        case 'group_seek':
          return await seek(core, scope, msg);
        case 'group_describe':
          return await describe(core, scope, msg);
        case 'group_delete':
          return await remove(core, scope, msg);
        default:
          throw bad(`unsupported request ${(msg as Message).type}`, 'unsupported_request');
      }
    } catch (err) {
      throw storageRefusal(msg.type, err);
    }
  }

  /** A poll's record count, visibility and wait deadline, within the group's bounds. */
  private pollBounds(msg: Msg<'group_poll'>): { max: number; visibility: number; until: number } {
    const g = this.core.groups;
    if (msg.max_records === 0) throw bad('max_records must be at least 1', 'bad_max_records');
    if (msg.visibility_ms === 0) throw bad('visibility_ms must be at least 1', 'bad_visibility');
    return {
      max: Math.min(msg.max_records, g.max_poll_records),
      visibility: Math.min(msg.visibility_ms ?? g.visibility_timeout_ms, g.max_visibility_ms),
      until: Date.now() + Math.min(msg.wait_ms, g.max_wait_ms),
    };
  }

  /**
   * A long poll: hands out what it can now; with nothing to hand out it waits (bounded by its
   * `wait_ms`) until its shard wakes it, a claim lapses or the periodic re-check comes.
   */
  private async poll(
    scope: Scope,
    msg: Msg<'group_poll'>,
    party: PollParty,
    asker: { readonly ended: boolean },
  ): Promise<Message> {
    const { max, visibility, until } = this.pollBounds(msg);
    const st = await this.registry.state(scope);
    for (;;) {
      // A poll whose client has gone (its stream ended while it waited) must not claim records
      // nobody will receive: they would wait out their visibility timeout.
      if (asker.ended || st.detached) {
        return { type: 'group_records', records: [], request_id: msg.request_id };
      }
      // Admitted while this broker held the lease and the shard, a poll that waited may have
      // outlived either: its claims would be unknown to the shard's next leader.
      const refusal = this.ownership?.refuseMessage(msg);
      if (refusal) throw refusal;
      // Read before the hand-out looks: a wake while its promise settles is not lost.
      const mark = this.waiters.mark();
      const records = await this.chained(st, () =>
        handOut(this.core, scope, st, max, visibility, party),
      );
      // The group is on disk before a consumer holds anything of it, so a settle after a
      // restart finds it.
      if (records.length > 0) await this.registry.establish(scope, st);
      const now = Date.now();
      if (records.length > 0 || now >= until || this.closing) {
        return { type: 'group_records', records, request_id: msg.request_id };
      }
      const lapse = st.earliestDeadline();
      const wakeAt = Math.min(until, lapse ?? until, now + this.core.groups.wait_recheck_ms);
      st.parked++;
      try {
        await this.waiters.sleep(scope.source, Math.max(1, wakeAt - now), mark);
      } finally {
        st.parked--;
      }
    }
  }

  /** A poll whose hand-out, begun in its own turn, needs an await: the later polls of its group
   *  queue behind it on the chain, and the poll goes on as an awaited one. */
  private async pollFrom(
    scope: Scope,
    msg: Msg<'group_poll'>,
    party: PollParty,
    asker: { readonly ended: boolean },
    { st, until, begun }: { st: GroupState; until: number; begun: Promise<GroupRecord[]> },
  ): Promise<Message> {
    // Chained before the first await (in the poll's own turn): later polls queue behind it.
    const records = await this.chained(st, () => begun);
    if (records.length > 0 || Date.now() >= until || this.closing) {
      return { type: 'group_records', records, request_id: msg.request_id };
    }
    // The poll hands out again, after a fresh mark, before it sleeps: a wake during this
    // await is not lost.
    return this.poll(scope, msg, party, asker);
  }

  /** Runs one hand-out after the group's hand-outs before it; counted while it runs. */
  private chained(
    st: GroupState,
    run: () => GroupRecord[] | Promise<GroupRecord[]>,
  ): Promise<GroupRecord[]> {
    st.handingOut++;
    const turn = st.pollChain.then(run).finally(() => {
      st.handingOut--;
    });
    // The chain only orders hand-outs; each turn's failure is its own poll's answer.
    st.pollChain = turn.catch(() => undefined);
    return turn;
  }
}
