/**
 * The groups held in memory and their durable halves: each group's GroupState (loaded from its
 * committed cursor and its redriven dead letters on first use, evicted when idle with no claim
 * standing, no cursor write owed and nothing a load would not rebuild, at most
 * GROUPS_IN_MEMORY_MAX), the cursor store
 * (`<data_dir>/groups/`) and the dead-letter store (`<data_dir>/dead-letters/`), and the cursor
 * commit: coalesced and awaited by the settle under `onCommit`, or written on a timer per group
 * under `periodic` (and at close), the stream's `group_cursor_fsync` or `groups.cursor_fsync`.
 */
import {
  type CursorStore,
  type DeadLetterStore,
  type GroupShard,
  type Io,
  type SegmentLog,
  openCursorStore,
  openDeadLetterStore,
} from '@felix/storage';
import type { ProjectionMetrics } from '../caches/projection-metrics.js';
import type { BrokerConfig } from '../config/types.js';
import {
  GROUP_IDLE_EVICT_HOLDING_MS,
  GROUP_IDLE_EVICT_MS,
  GROUPS_IN_MEMORY_MAX,
} from '../limits.js';
import { Refusal } from '../session/refusal.js';
import { GroupState } from './group-state.js';
import { type Scope, unknownGroup } from './requests.js';

export class GroupRegistry {
  readonly cursors: CursorStore;
  readonly deadLetters: DeadLetterStore;
  private readonly states = new Map<string, GroupState>();
  private readonly loading = new Map<string, Promise<GroupState>>();
  /** Deletes under way: a request for the group waits for its delete before loading it. */
  private readonly removing = new Map<string, Promise<unknown>>();
  /** Periodic groups whose position is ahead of their cursor: the timer that will write it. */
  private readonly owed = new Map<GroupState, { scope: Scope; timer: NodeJS.Timeout }>();

  constructor(
    dataDir: string,
    private readonly metrics: ProjectionMetrics,
    private readonly defaults: Pick<
      BrokerConfig['groups'],
      'cursor_fsync' | 'cursor_fsync_interval_ms'
    >,
    io?: Io,
  ) {
    const store = { root: dataDir, fsync: 'onCommit' as const, ...(io ? { io } : {}) };
    this.cursors = openCursorStore(store);
    this.deadLetters = openDeadLetterStore(store);
  }

  /** The group's state when it is in memory (nothing is loaded). */
  held(scope: Scope): GroupState | undefined {
    return this.states.get(scope.key);
  }

  /** Forgets the group's in-memory state (and a periodic write it owed); true when it was held. */
  forget(scope: Scope): boolean {
    const st = this.states.get(scope.key);
    if (st !== undefined) {
      this.cancel(st);
      st.detached = true;
    }
    const held = this.states.delete(scope.key);
    this.metrics.groupsInMemory.set(this.states.size);
    return held;
  }

  /**
   * Drops in-memory states idle for GROUP_IDLE_EVICT_MS with no claim standing, no poll waiting
   * on them and nothing a load would not rebuild (GroupState.holdsUnrebuildable). A state loaded
   * again starts from the durable cursor and accepts settles for anything below the tail. Before,
   * an idle state was dropped with owed records' attempt counts and acks above a gap: those
   * records came back counted from attempt 1, acked ones delivered again. A state idle for
   * GROUP_IDLE_EVICT_HOLDING_MS goes even holding claims or such things (its consumers are gone):
   * loaded again, it is as after a restart.
   */
  evictIdle(nowMs: number): void {
    for (const [key, st] of this.states) {
      const idleMs = nowMs - st.lastUsedMs;
      if (idleMs < GROUP_IDLE_EVICT_MS) continue;
      // A state owing a cursor write stays until it is written (its interval is far shorter).
      const writing = this.owed.has(st) || st.commitRun !== undefined;
      if (writing || st.parked > 0) continue;
      const holding = st.claims.size > 0 || st.holdsUnrebuildable();
      if (!holding || idleMs >= GROUP_IDLE_EVICT_HOLDING_MS) this.states.delete(key);
    }
    this.metrics.groupsInMemory.set(this.states.size);
  }

  /**
   * Runs a delete of the group: until it is done, a request for the group waits rather than
   * loading it from a cursor the delete has not removed yet (and writing it back after).
   */
  async removal<T>(scope: Scope, run: () => Promise<T>): Promise<T> {
    let done!: () => void;
    const gate = new Promise<void>((resolve) => {
      done = resolve;
    });
    // Set before `run` starts: its first store call may already let a request in.
    this.removing.set(scope.key, gate);
    try {
      // A load under way lands first, so the delete forgets it rather than it outliving the
      // delete in memory (its failure is its own request's answer).
      await this.loading.get(scope.key)?.catch(() => undefined);
      return await run();
    } finally {
      if (this.removing.get(scope.key) === gate) this.removing.delete(scope.key);
      done();
    }
  }

  /** The group's in-memory state, loading it from the durable cursor and dead letters. */
  state(scope: Scope): Promise<GroupState> {
    const held = this.states.get(scope.key);
    if (held !== undefined) return Promise.resolve(held);
    const removing = this.removing.get(scope.key);
    if (removing !== undefined) return removing.then(() => this.state(scope));
    let p = this.loading.get(scope.key);
    if (p === undefined) {
      if (this.states.size >= GROUPS_IN_MEMORY_MAX) {
        const message = `at most ${GROUPS_IN_MEMORY_MAX} groups in memory`;
        return Promise.reject(
          new Refusal('limit_exceeded', message, 'group_limit', { retry: 'retry_after' }),
        );
      }
      p = this.load(scope).finally(() => this.loading.delete(scope.key));
      this.loading.set(scope.key, p);
    }
    return p;
  }

  private async load(scope: Scope): Promise<GroupState> {
    const committed = await this.cursors.position(scope.id, scope.group);
    const base = scope.source.logBaseOffset;
    const position = Math.max(committed ?? base, base);
    // A group with no cursor never handed anything out (its first hand-out writes one,
    // `establish`): no settle from before this load can be its, so none below the tail is taken
    // on trust. Before, a late ack from a deleted group's worker finished a record of the group
    // made again under its name, which then never handed that record out.
    const fresh = committed === undefined ? position : scope.source.appliedNext;
    const st = new GroupState(position, committed, fresh, Date.now());
    // Retention passed the group's cursor while nothing held it in memory.
    if (committed !== undefined && committed < base) {
      st.skippedPending = base - committed;
      this.metrics.groupRecordsSkipped.inc(base - committed);
    }
    await this.loadDeadLetters(scope, st);
    this.states.set(scope.key, st);
    this.metrics.groupsInMemory.set(this.states.size);
    return st;
  }

  /**
   * Every dead letter of the group (the whole walk bounded by what the store holds): one given
   * up on above the position is finished, one redriven is owed again.
   */
  private async loadDeadLetters(scope: Scope, st: GroupState): Promise<void> {
    await this.deadLetters.each(scope.id, scope.group, (d) => {
      if (d.state === 'dead') {
        // Given up on above a record still unfinished (the cursor could not pass it yet), or
        // just before a crash: finished, never handed out again as new work.
        if (d.offset >= st.position) st.finish(d.offset);
        return;
      }
      st.redriven.add(d.offset);
      st.owed.set(d.offset, 0);
    });
  }

  /** The state when the group exists (in memory, a cursor, or dead letters); else not_found. */
  async existing(scope: Scope): Promise<GroupState> {
    const held = this.states.get(scope.key);
    if (held !== undefined) return held;
    const removing = this.removing.get(scope.key);
    if (removing !== undefined) {
      await removing;
      return this.existing(scope);
    }
    const committed = await this.cursors.position(scope.id, scope.group);
    if (committed === undefined) {
      const dl = await this.deadLetters.list(scope.id, scope.group, 1);
      if (dl.length === 0) throw unknownGroup(scope.group);
    }
    return this.state(scope);
  }

  /**
   * A settle moved the position. `onCommit`: the position is durable before the settle is
   * answered. `periodic`: the settle is answered now and the position is written within the
   * group's interval (a crash redelivers what was acked since the last write, never less).
   */
  commit(scope: Scope, st: GroupState): Promise<void> | undefined {
    const interval = this.periodicMs(scope);
    if (interval === undefined) return this.persist(scope, st);
    this.writeLater(scope, st, interval);
    return undefined;
  }

  /**
   * A group that never committed is about to hand out its first records: its position is
   * written first (once in the group's life, under either durability). Before, such a group
   * left no trace on disk until its first cursor write, so a consumer that outlived a broker
   * restart had its acks of what it held refused as not_found, the group unknown.
   */
  async establish(scope: Scope, st: GroupState): Promise<void> {
    if (st.committed === undefined) await this.persist(scope, st);
  }

  /** The scope's groups' cursor durability: the stream's own, else the broker's default. */
  cursorFsync(scope: Scope): 'onCommit' | 'periodic' {
    return (scope.stream.group_cursor_fsync ?? this.defaults.cursor_fsync) === 'periodic'
      ? 'periodic'
      : 'onCommit';
  }

  /** The scope's cursor write interval when its groups are `periodic`, else undefined. */
  private periodicMs(scope: Scope): number | undefined {
    if (this.cursorFsync(scope) !== 'periodic') return undefined;
    const s = scope.stream;
    return s.group_cursor_fsync_interval_ms ?? this.defaults.cursor_fsync_interval_ms;
  }

  private writeLater(scope: Scope, st: GroupState, intervalMs: number): void {
    if (this.owed.has(st) || (st.committed !== undefined && st.committed >= st.position)) return;
    const timer = setTimeout(() => {
      this.owed.delete(st);
      this.persist(scope, st).catch(() => {
        // Not written (storage refused): try again next interval while the group is held; until
        // then a crash redelivers more, and nothing is lost.
        if (this.states.get(scope.key) === st) this.writeLater(scope, st, intervalMs);
      });
    }, intervalMs);
    timer.unref(); // close() writes what is owed; a timer alone keeps no process alive
    this.owed.set(st, { scope, timer });
  }

  /** Drops the periodic write `st` owes (a seek or a delete sets the cursor itself). */
  private cancel(st: GroupState): void {
    const owed = this.owed.get(st);
    if (owed === undefined) return;
    clearTimeout(owed.timer);
    this.owed.delete(st);
  }

  /**
   * Before a seek writes the cursor: no periodic write is owed any more, and one in flight has
   * landed (so it cannot carry the old position past the seek's).
   */
  async quiesce(st: GroupState): Promise<void> {
    this.cancel(st);
    // Its failure was its own settle's answer (or is retried); the seek writes regardless.
    await st.commitRun?.catch(() => undefined);
  }

  /**
   * Writes the position durably (never backwards). Writes coalesce: while one cursor write is
   * in flight, every settle behind it waits for it and then one write covers them all, so a
   * burst of acks costs one write, not one each.
   */
  private async persist(scope: Scope, st: GroupState): Promise<void> {
    const target = st.position;
    const seeks = st.seeks;
    for (;;) {
      // A seek since this settle set the cursor itself and voided what was settled before it.
      // Before, this loop went on writing the new, lower position to reach `target`: each write
      // a no-op answered from memory, so it spun without yielding and froze the broker.
      if (st.seeks !== seeks) return;
      // Deleted: the delete removes the cursor; a write now would bring the group back.
      if (st.detached) return;
      if (st.committed !== undefined && st.committed >= target) return;
      const running = st.commitRun;
      if (running !== undefined) {
        // Its failure is its own settle's answer; this one writes again.
        await running.catch(() => undefined);
        continue;
      }
      const run = this.cursors.commit(scope.id, scope.group, st.position).then((at) => {
        // Landed before a seek's write (the store's lock keeps order): the seek's offset stands.
        if (st.seeks === seeks) st.committed = Math.max(st.committed ?? 0, at);
      });
      st.commitRun = run;
      try {
        await run;
      } finally {
        if (st.commitRun === run) st.commitRun = undefined;
      }
    }
  }

  /** The log of a stream shard's group cursors or dead letters (opening it), to ship. */
  shardLog(kind: 'groupCursors' | 'deadLetters', shard: GroupShard): Promise<SegmentLog> {
    return kind === 'groupCursors' ? this.cursors.log(shard) : this.deadLetters.log(shard);
  }

  /**
   * This broker no longer leads the stream shard: its groups leave memory (a periodic write
   * still owed is dropped: the new leader redelivers from the last cursor it was shipped) and
   * its cursor and dead-letter logs close until `admitShard`, so a replica of them may append;
   * a later lead replays what it holds then.
   */
  async releaseShard(shard: GroupShard): Promise<void> {
    const prefix = `${JSON.stringify([shard.tenant, shard.namespace, shard.stream, shard.shard]).slice(0, -1)},`;
    for (const [key, st] of this.states) {
      if (!key.startsWith(prefix)) continue;
      this.cancel(st);
      this.states.delete(key);
    }
    this.metrics.groupsInMemory.set(this.states.size);
    await this.cursors.release(shard);
    await this.deadLetters.release(shard);
  }

  /**
   * Whether a group of the stream shard holds what its next leader would not have: a claim
   * standing, an ack above an unfinished record (in memory only), or a cursor write owed. A
   * shard moved to its preferred broker (cluster/transfers.ts) waits for none of these.
   */
  busyIn(shard: GroupShard): boolean {
    const prefix = `${JSON.stringify([shard.tenant, shard.namespace, shard.stream, shard.shard]).slice(0, -1)},`;
    for (const [key, st] of this.states) {
      if (!key.startsWith(prefix)) continue;
      if (st.claims.size > 0 || st.holdsUnrebuildable()) return true;
      if (this.owed.has(st) || st.commitRun !== undefined) return true;
    }
    return false;
  }

  /** This broker leads the stream shard (again): its group logs may open, by replay. */
  admitShard(shard: GroupShard): void {
    this.cursors.admit(shard);
    this.deadLetters.admit(shard);
  }

  /** Writes what periodic groups owe (a clean shutdown loses no acknowledged position), then closes. */
  async close(): Promise<void> {
    const owed = [...this.owed];
    for (const [, o] of owed) clearTimeout(o.timer);
    this.owed.clear();
    // A write that fails here only means redelivery after the restart; the stores close anyway.
    await Promise.allSettled(owed.map(([st, o]) => this.persist(o.scope, st)));
    await this.cursors.close();
    await this.deadLetters.close();
  }
}
