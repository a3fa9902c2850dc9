/**
 * One poll's hand-out decision: records a reclaim reserved for this connection first, then owed
 * records (lowest offset first), then new ones from the shard's visible tail, within the poll's
 * record and byte bounds and the group's in-flight cap. Each record handed out is claimed with a
 * visibility deadline; one past the attempt bound becomes a dead letter instead, and one that
 * retention removed is finished (retention outranks a group).
 */
import type { GroupRecord } from '@felix/wire';
import type { GroupCore } from './core.js';
import type { GroupState, Member } from './group-state.js';
import type { PollParty, Scope } from './requests.js';
import { finish, giveUp } from './settles.js';

interface HeldRecord {
  offset: number;
  payload: Uint8Array;
  timestampMicros: number;
}

/** The records of one poll answer, with the bounds they are taken under. */
class PollAnswer {
  readonly out: GroupRecord[] = [];
  bytes = 0;
  /** Set once a record did not fit: nothing more is taken. */
  full = false;
  /** The visibility deadline of the records taken from one read (no await between them). */
  deadline = 0;

  constructor(
    readonly st: GroupState,
    readonly maxBytes: number,
    readonly visibility: number,
    readonly party: PollParty,
  ) {}

  /** One record always fits; more only within the byte bound. */
  fits(len: number): boolean {
    return this.out.length === 0 || this.bytes + len <= this.maxBytes;
  }

  /**
   * Adds one record, with its append time only for a client that reads it (set after the fact:
   * no object spread per record on the poll path).
   */
  add(offset: number, payload: Uint8Array, attempts: number, skipped: number, micros: number) {
    this.bytes += payload.byteLength;
    const r: GroupRecord = { offset, payload, attempts, skipped_before: skipped };
    if (this.party.reportsTimes) r.timestamp_micros = micros;
    this.out.push(r);
  }

  /**
   * Claims one new record and hands it out, unless it is already finished, claimed or owed;
   * sets `full` (and takes nothing more) once the answer is full. Bound once per poll.
   */
  readonly take = (offset: number, payload: Uint8Array, timestampMicros: number): void => {
    if (this.full) return;
    if (!this.fits(payload.byteLength)) {
      this.full = true;
      return;
    }
    const st = this.st;
    // Offsets skipped below this record hold none (a generation start): finished as passed.
    for (let o = st.next; o < offset; o++) st.finish(o);
    st.next = Math.max(st.next, offset + 1);
    if (
      (st.done.size > 0 && st.done.has(offset)) ||
      st.claims.has(offset) ||
      (st.owed.size > 0 && st.owed.has(offset))
    )
      return;
    st.claim(offset, 1, this.deadline, this.party.member);
    // The first new record after a retention skip says how many records it skipped.
    const skipped = st.skippedPending > 0 ? st.takeSkipped() : 0;
    answer(this, offset, payload, skipped, timestampMicros);
  };
}

function answer(a: PollAnswer, offset: number, payload: Uint8Array, skipped: number, us: number) {
  a.add(offset, payload, 1, a.party.reportsSkips ? skipped : 0, us);
}

/**
 * One poll's records, in this turn when nothing needs an await (no reclaim or reserved records
 * for the poller, nothing owed, the new records in the shard's memory): the same claims, in the
 * same order, as the awaited path makes. Otherwise a promise of them.
 */
export function handOut(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  max: number,
  visibility: number,
  party: PollParty,
): GroupRecord[] | Promise<GroupRecord[]> {
  const now = Date.now();
  st.lastUsedMs = now;
  const lapsed = st.expire(now);
  if (lapsed > 0) core.metrics.groupClaimsLapsed.inc(lapsed);
  const answer = new PollAnswer(st, core.groups.max_poll_bytes, visibility, party);
  const member = party.member;
  if (member !== undefined && (party.reclaim || st.reserved.has(member.conn))) {
    return handOutAwaited(core, scope, st, max, answer);
  }
  const want = wanted(core, st, max, answer);
  if (want === 0) return delivered(core, answer);
  const tail = scope.source.appliedNext;
  if (st.owed.size === 0 && takeHeld(scope, st, want, answer, tail)) {
    return delivered(core, answer);
  }
  return handOutRest(core, scope, st, want, answer, tail);
}

/** Records the poll may take beyond those it holds, within the group's in-flight cap; 0 when
 *  the cap is reached (counted as a capped poll when the answer is empty). */
function wanted(core: GroupCore, st: GroupState, max: number, answer: PollAnswer): number {
  const room = core.groups.max_in_flight - st.claims.size;
  if (room > 0) return Math.min(max, answer.out.length + room);
  if (answer.out.length === 0) core.metrics.groupPollsCapped.inc();
  return 0;
}

function delivered(core: GroupCore, answer: PollAnswer): GroupRecord[] {
  core.metrics.groupDelivered.inc(answer.out.length);
  return answer.out;
}

/** The hand-out of a poll with a reclaim or reserved records: those first, then the rest. */
async function handOutAwaited(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  max: number,
  answer: PollAnswer,
): Promise<GroupRecord[]> {
  const member = answer.party.member!;
  if (answer.party.reclaim) {
    const n = st.reclaim(member);
    if (n > 0) core.metrics.groupClaimsReclaimed.inc(n);
  }
  // Reserved records are already in flight: they go out even at the in-flight cap.
  await handOutReserved(core, scope, st, member, max, answer);
  const want = wanted(core, st, max, answer);
  if (want === 0) return delivered(core, answer);
  return handOutRest(core, scope, st, want, answer, scope.source.appliedNext);
}

/** Owed records, then new ones up to `tail`. */
async function handOutRest(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  want: number,
  answer: PollAnswer,
  tail: number,
): Promise<GroupRecord[]> {
  await handOutOwed(core, scope, st, want, answer);
  await handOutNew(core, scope, st, want, answer, tail);
  return delivered(core, answer);
}

/** Owed records (lapsed or handed back), lowest offset first, each as a new delivery. */
async function handOutOwed(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  want: number,
  answer: PollAnswer,
): Promise<void> {
  for (const offset of st.owedInOrder()) {
    if (answer.out.length >= want) break;
    const attempts = st.owed.get(offset);
    if (attempts === undefined) continue;
    if (attempts >= core.groups.max_attempts) {
      await giveUp(core, scope, st, offset);
      continue;
    }
    const rec = await recordAt(scope, offset, () => st.owed.has(offset));
    if (rec === 'settled') continue;
    if (rec === 'gone') {
      // Retention outranks a group: a record that is gone cannot be delivered again.
      await finish(core, scope, st, offset);
      continue;
    }
    if (!answer.fits(rec.payload.byteLength)) break;
    st.claim(offset, attempts + 1, Date.now() + answer.visibility, answer.party.member);
    answer.add(offset, rec.payload, attempts + 1, 0, rec.timestampMicros);
  }
}

/**
 * New records from the group's next offset up to `tail` that the shard's memory holds, taken in
 * place (no disk read, no await, no copy per record). False when the group's next record is not
 * in memory and the answer wants more: the log is read from there.
 */
function takeHeld(
  scope: Scope,
  st: GroupState,
  want: number,
  answer: PollAnswer,
  tail: number,
): boolean {
  while (answer.out.length < want && st.next < tail && !answer.full) {
    const from = st.next;
    const until = Math.min(tail, from + want - answer.out.length);
    answer.deadline = Date.now() + answer.visibility;
    if (!scope.source.visitHeld(from, until, answer.take)) return false;
    if (st.next === from) break;
  }
  return true;
}

/** New records up to `tail`: from the shard's memory when it holds them, else from its log. */
async function handOutNew(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  want: number,
  answer: PollAnswer,
  tail: number,
): Promise<void> {
  while (!takeHeld(scope, st, want, answer, tail)) {
    const from = st.next;
    answer.deadline = Date.now() + answer.visibility;
    const r = await scope.source.readLog(from, {
      maxRecords: want - answer.out.length,
      maxBytes: Math.max(1, core.groups.max_poll_bytes - answer.bytes),
    });
    if (r.kind === 'trimmed') {
      const skipped = st.skipTo(r.oldest);
      if (skipped > 0) core.metrics.groupRecordsSkipped.inc(skipped);
      await core.registry.commit(scope, st);
      continue;
    }
    if (r.records.length === 0) {
      // Only records that are no event (a generation start) lie in [from, next): pass them.
      const passed = Math.min(r.next, tail);
      for (let o = from; o < passed; o++) st.finish(o);
      st.next = Math.max(st.next, passed);
      if (passed > from) continue;
      return;
    }
    for (const rec of r.records) {
      if (rec.offset >= tail || answer.out.length >= want) break;
      answer.take(rec.offset, rec.payload, rec.timestampMicros);
      if (answer.full) break;
    }
    if (answer.full || st.next === from) return;
  }
}

/**
 * Hands this connection the records a reclaim reserved for it, lowest offset first, each as a
 * new delivery (attempts + 1, a fresh visibility). One past the attempt bound becomes a dead
 * letter instead, as an owed record would.
 */
async function handOutReserved(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  member: Member,
  max: number,
  answer: PollAnswer,
): Promise<void> {
  while (answer.out.length < max) {
    const claim = st.nextReserved(member.conn);
    if (claim === undefined) return;
    const offset = claim.offset;
    if (claim.attempts >= core.groups.max_attempts) {
      await giveUp(core, scope, st, offset);
      continue;
    }
    const rec = await recordAt(scope, offset, () => st.claims.get(offset) === claim);
    if (rec === 'settled') continue; // settled or lapsed while the log was read
    if (rec === 'gone') {
      await finish(core, scope, st, offset); // retention removed it
      continue;
    }
    if (!answer.fits(rec.payload.byteLength)) {
      st.unreserve(member.conn, offset);
      return;
    }
    st.claim(offset, claim.attempts + 1, Date.now() + answer.visibility, member);
    answer.add(offset, rec.payload, claim.attempts + 1, 0, rec.timestampMicros);
  }
}

/**
 * The record at `offset`, from the shard's memory or else its log: 'gone' when retention removed
 * it, 'settled' when `stillOut` says it stopped being the caller's to hand out while the log
 * was read.
 */
async function recordAt(
  scope: Scope,
  offset: number,
  stillOut: () => boolean,
): Promise<HeldRecord | 'gone' | 'settled'> {
  let held: HeldRecord | undefined;
  scope.source.visitHeld(offset, offset + 1, (o, payload, timestampMicros) => {
    held = { offset: o, payload, timestampMicros };
  });
  if (held !== undefined) return held;
  const r = await scope.source.readLog(offset, { maxRecords: 1, maxBytes: 1 });
  if (!stillOut()) return 'settled';
  const rec = r.kind === 'records' ? r.records[0] : undefined;
  return rec === undefined || rec.offset !== offset ? 'gone' : rec;
}
