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

  constructor(
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
}

export async function handOut(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  max: number,
  visibility: number,
  party: PollParty,
): Promise<GroupRecord[]> {
  const { groups: g, metrics } = core;
  const now = Date.now();
  st.lastUsedMs = now;
  const lapsed = st.expire(now);
  if (lapsed > 0) metrics.groupClaimsLapsed.inc(lapsed);
  const answer = new PollAnswer(g.max_poll_bytes, visibility, party);
  const member = party.member;
  if (member !== undefined) {
    if (party.reclaim) {
      const n = st.reclaim(member);
      if (n > 0) metrics.groupClaimsReclaimed.inc(n);
    }
    // Reserved records are already in flight: they go out even at the in-flight cap.
    await handOutReserved(core, scope, st, member, max, answer);
  }
  const room = g.max_in_flight - st.claims.size;
  if (room <= 0) {
    if (answer.out.length === 0) metrics.groupPollsCapped.inc();
    metrics.groupDelivered.inc(answer.out.length);
    return answer.out;
  }
  const want = Math.min(max, answer.out.length + room);
  await handOutOwed(core, scope, st, want, answer);
  await handOutNew(core, scope, st, want, answer);
  metrics.groupDelivered.inc(answer.out.length);
  return answer.out;
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
 * New records from the group's next offset up to the visible tail: from the shard's memory in
 * place when it holds them (no disk read, no await, no copy per record), else from its log.
 */
async function handOutNew(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  want: number,
  answer: PollAnswer,
): Promise<void> {
  const source = scope.source;
  const tail = source.appliedNext;
  const { member, reportsSkips } = answer.party;
  while (answer.out.length < want && st.next < tail) {
    const from = st.next;
    const until = Math.min(tail, from + want - answer.out.length);
    // One deadline for the records of this read (no await between them).
    const deadline = Date.now() + answer.visibility;
    const done = st.done;
    const owed = st.owed;
    let full = false;
    // Claims one record of this read and hands it out, unless it is already finished, claimed
    // or owed; sets `full` (and takes nothing more) once the answer is full.
    const take = (offset: number, payload: Uint8Array, timestampMicros: number): void => {
      if (full) return;
      if (!answer.fits(payload.byteLength)) {
        full = true;
        return;
      }
      // Offsets skipped below this record hold none (a generation start): finished as passed.
      for (let o = st.next; o < offset; o++) st.finish(o);
      st.next = Math.max(st.next, offset + 1);
      if (
        (done.size > 0 && done.has(offset)) ||
        st.claims.has(offset) ||
        (owed.size > 0 && owed.has(offset))
      )
        return;
      st.claim(offset, 1, deadline, member);
      // The first new record after a retention skip says how many records it skipped.
      const skipped = st.skippedPending > 0 ? st.takeSkipped() : 0;
      answer.add(offset, payload, 1, reportsSkips ? skipped : 0, timestampMicros);
    };
    source.visitHeld(from, until, take);
    if (st.next === from && !full) {
      const r = await source.readLog(from, {
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
        break;
      }
      for (const rec of r.records) {
        if (rec.offset >= tail || answer.out.length >= want) break;
        take(rec.offset, rec.payload, rec.timestampMicros);
        if (full) break;
      }
    }
    if (full || st.next === from) break;
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
