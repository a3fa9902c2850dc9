/**
 * Settling claims: `group_ack`, `group_nack`, `group_dead_letter`, their batch forms, and
 * `group_extend`. A finished offset's cursor position is durable before the settle is answered,
 * a dead letter is recorded before the cursor passes it, and a settle that frees a record wakes
 * the polls waiting on the group's shard.
 */
import {
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RELEASE,
  type Message,
} from '@felix/wire';
import { GROUP_ACK_BATCH_OFFSETS_MAX, GROUP_NACK_BATCH_OFFSETS_MAX } from '../limits.js';
import type { Negotiated } from '../session/negotiation.js';
import type { GroupCore } from './core.js';
import { type GroupState, standsFor } from './group-state.js';
import { type Msg, type Scope, bad, stale, tailCheck } from './requests.js';

type SettleMsg = Msg<'group_ack'> | Msg<'group_nack'> | Msg<'group_dead_letter'>;

export async function settle(core: GroupCore, scope: Scope, msg: SettleMsg): Promise<Message> {
  tailCheck(scope, msg.offset);
  const st = await core.registry.existing(scope);
  st.lastUsedMs = Date.now();
  const offset = msg.offset;
  const ok: Message = { type: 'cache_ok', request_id: msg.request_id };
  if (msg.type === 'group_nack') {
    const handed = handBack(core, st, offset, msg.attempts, msg.delay_ms ?? 0, Date.now());
    if (handed !== 'handed') throw stale(offset, handed === 'stale_named');
    core.waiters.wake(scope.source);
    return ok;
  }
  const claim = st.claims.get(offset);
  // A settle naming its delivery is refused while another delivery's claim stands: a late
  // dead letter from a holder whose claim lapsed must not end the next holder's work.
  // An ack still finishes a record a reclaim reserved (it says the work is done); a dead letter
  // naming the old delivery does not.
  const named =
    msg.type === 'group_ack'
      ? claim?.attempts === msg.attempts
      : standsFor(claim, msg.attempts ?? 0);
  if (msg.attempts !== undefined && claim !== undefined && !named) {
    throw stale(offset, true);
  }
  if (claim === undefined && st.isUnknown(offset)) throw stale(offset, false);
  if (claim === undefined && !st.owed.has(offset) && !st.redriven.has(offset)) {
    if (offset < st.position || st.done.has(offset)) return ok; // already finished
  }
  if (msg.type === 'group_dead_letter') await giveUp(core, scope, st, offset);
  else await finish(core, scope, st, offset);
  return ok;
}

/**
 * `group_ack_batch`: every offset is acknowledged as a `group_ack` naming it would be, and the
 * one answer goes once the position covering them is durable (one cursor write for the batch,
 * coalesced with the writes of other settles in flight). Offsets whose claim no longer stands
 * are named in `stale` instead of failing the batch; an offset past the tail refuses the whole
 * request before anything is settled.
 */
export async function ackBatch(
  core: GroupCore,
  auth: Negotiated,
  scope: Scope,
  msg: Msg<'group_ack_batch'>,
): Promise<Message> {
  checkAckBatch(auth, scope, msg);
  const st = await core.registry.existing(scope);
  st.lastUsedMs = Date.now();
  const staleOffsets: number[] = [];
  let finished = false;
  for (const offset of msg.offsets) {
    const redriven = st.redriven.has(offset);
    if (!ackOne(st, offset, staleOffsets)) continue;
    // A redriven entry goes durably before the position can pass it (as a single ack does).
    if (redriven) await core.registry.deadLetters.finish(scope.id, scope.group, offset);
    finished = true;
  }
  if (finished) {
    await core.registry.commit(scope, st);
    core.waiters.wake(scope.source);
  }
  return { type: 'group_acked', stale: staleOffsets, request_id: msg.request_id };
}

/**
 * `group_ack_batch` answered in this turn, as `ackBatch` answers it, when nothing in it awaits:
 * the group is in memory, its cursor is `periodic` (answered once settled in memory) and no
 * offset named is a redriven dead letter (finished durably first). Undefined otherwise, having
 * changed nothing. A refusal is thrown before anything is settled.
 */
export function ackBatchNow(
  core: GroupCore,
  auth: Negotiated,
  scope: Scope,
  msg: Msg<'group_ack_batch'>,
): Message | undefined {
  const st = core.registry.held(scope);
  if (st === undefined || core.registry.cursorFsync(scope) !== 'periodic') return undefined;
  checkAckBatch(auth, scope, msg);
  if (st.redriven.size > 0 && msg.offsets.some((o) => st.redriven.has(o))) return undefined;
  st.lastUsedMs = Date.now();
  const staleOffsets: number[] = [];
  let finished = false;
  for (const offset of msg.offsets) finished = ackOne(st, offset, staleOffsets) || finished;
  if (finished) {
    // Periodic: the position is written within the group's interval, nothing to await.
    void core.registry.commit(scope, st);
    core.waiters.wake(scope.source);
  }
  return { type: 'group_acked', stale: staleOffsets, request_id: msg.request_id };
}

/** The refusals of an ack batch, made before anything is settled. */
function checkAckBatch(auth: Negotiated, scope: Scope, msg: Msg<'group_ack_batch'>): void {
  if ((auth.featuresHi & FEATURE_HI_GROUP_ACK_BATCH) === 0) {
    throw bad('group_ack_batch was not negotiated', 'ack_batch_not_negotiated');
  }
  const offsets = msg.offsets;
  if (offsets.length === 0 || offsets.length > GROUP_ACK_BATCH_OFFSETS_MAX) {
    throw bad(`a batch names 1..${GROUP_ACK_BATCH_OFFSETS_MAX} offsets`, 'bad_ack_batch');
  }
  for (const offset of offsets) tailCheck(scope, offset);
}

/**
 * Acks one offset of a batch in memory: true when it finished it now; false when its claim no
 * longer stands (named in `staleOffsets`) or it was finished already.
 */
function ackOne(st: GroupState, offset: number, staleOffsets: number[]): boolean {
  const claim = st.claims.get(offset);
  if (claim === undefined) {
    if (st.isUnknown(offset)) {
      staleOffsets.push(offset);
      return false;
    }
    const pending = st.owed.has(offset) || st.redriven.has(offset);
    if (!pending && (offset < st.position || st.done.has(offset))) return false; // finished
  }
  st.redriven.delete(offset);
  st.finish(offset);
  return true;
}

/**
 * One nack of `offset`: 'stale_named' when `attempts` names a delivery other than the standing
 * claim's, 'stale' when no claim stands and the offset is not owed already (handed back, so
 * 'handed' again), else the claim goes back: owed now, or after `delayMs` (bounded by the
 * visibility maximum; it stays in flight meanwhile). A `release` (a record the application
 * never saw) takes back the delivery's count: the next one carries the same `attempts`.
 */
function handBack(
  core: GroupCore,
  st: GroupState,
  offset: number,
  attempts: number | undefined,
  delayMs: number,
  nowMs: number,
  release = false,
): 'handed' | 'stale' | 'stale_named' {
  const claim = st.claims.get(offset);
  if (attempts !== undefined && !standsFor(claim, attempts)) return 'stale_named';
  if (claim === undefined) return st.owed.has(offset) ? 'handed' : 'stale';
  if (delayMs > 0) {
    st.reschedule(claim, nowMs + Math.min(delayMs, core.groups.max_visibility_ms), true);
  } else {
    st.claims.delete(offset);
    st.owed.set(offset, release ? claim.attempts - 1 : claim.attempts);
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
export async function nackBatch(
  core: GroupCore,
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
  // A release names deliveries the application never saw: honoured only where negotiated.
  const release = msg.release === true && (auth.featuresHi & FEATURE_HI_GROUP_RELEASE) !== 0;
  const delay = msg.delay_ms ?? 0;
  if (release && delay > 0) throw bad('a release takes no delay_ms', 'bad_nack_batch');
  // A release takes back a count, so it must name the deliveries it releases.
  if (release && attempts === undefined)
    throw bad('a release names each delivery (attempts)', 'bad_nack_batch');
  for (const offset of offsets) tailCheck(scope, offset);
  const st = await core.registry.existing(scope);
  const now = Date.now();
  st.lastUsedMs = now;
  const staleOffsets: number[] = [];
  // The offsets a single nack would refuse as fatal (its `attempts` named another delivery).
  const superseded: number[] = [];
  for (let i = 0; i < offsets.length; i++) {
    const offset = offsets[i]!;
    const handed = handBack(core, st, offset, attempts?.[i], delay, now, release);
    if (handed === 'handed') continue;
    staleOffsets.push(offset);
    if (handed === 'stale_named') superseded.push(offset);
  }
  if (staleOffsets.length < offsets.length) core.waiters.wake(scope.source);
  return {
    type: 'group_nacked',
    stale: staleOffsets,
    request_id: msg.request_id,
    ...(superseded.length > 0 ? { superseded } : {}),
  };
}

export async function extend(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_extend'>,
): Promise<Message> {
  if (msg.extend_ms === 0) throw bad('extend_ms must be at least 1', 'bad_extend');
  tailCheck(scope, msg.offset);
  const st = await core.registry.existing(scope);
  st.expire(Date.now());
  const claim = st.claims.get(msg.offset);
  if (claim === undefined || claim.delayed || !standsFor(claim, msg.attempts)) {
    throw stale(msg.offset, true);
  }
  const visible = Math.min(msg.extend_ms, core.groups.max_visibility_ms);
  st.reschedule(claim, Date.now() + visible);
  return { type: 'group_extended', visible_ms: visible, request_id: msg.request_id };
}

/** Records `offset` as a dead letter, then finishes it (the cursor never passes it first). */
export async function giveUp(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  offset: number,
): Promise<void> {
  st.release(offset);
  st.redriven.delete(offset);
  await core.registry.deadLetters.record(scope.id, scope.group, offset);
  if (st.detached) {
    // The group was deleted while this entry was written: the delete's sweep may have passed
    // it already, and it would outlive the group (shown to one made again under its name).
    await core.registry.deadLetters.discard(scope.id, scope.group, offset);
    return;
  }
  core.metrics.groupDeadLettered.inc();
  st.finish(offset);
  await core.registry.commit(scope, st);
  core.waiters.wake(scope.source);
}

/** Finishes `offset`: a redriven entry is removed durably, then the cursor advances. */
export async function finish(
  core: GroupCore,
  scope: Scope,
  st: GroupState,
  offset: number,
): Promise<void> {
  const redriven = st.redriven.delete(offset);
  st.finish(offset);
  if (redriven) await core.registry.deadLetters.finish(scope.id, scope.group, offset);
  await core.registry.commit(scope, st);
  core.waiters.wake(scope.source);
}
