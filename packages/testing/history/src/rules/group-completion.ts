/**
 * Rule 8: consumer groups. Every retained offset below a group's final end is completed (an ack
 * ok or of unknown outcome) or dead-lettered. A record acked ok twice is allowed only when its
 * second hand-out came after the previous claim lapsed (visibilityMs after that poll began) or
 * after a fault that took claims away. An onCommit cursor never hands out a record again after
 * an ack of it completed ok, except after a kill, stop or restart at whose time the record was
 * above the group's durable cursor: the first offset not yet acked (the cursor is one offset and
 * moves only over a contiguous run of acks, so acks above a hole live in memory only). A
 * periodic cursor may hand acked work out again after any kill or restart that followed the ack.
 * On a replicated stream (meta `replicas` > 1) a group's state is acked on its shard's leader
 * alone and shipped afterwards, and its claims live in that leader's memory: a fault that may
 * move the leader (mayMoveLeader), standing from its injection to its heal, may take claims away
 * and make any ack completed before it forgotten (the new leader resumes from the cursor it was
 * shipped: docs/replication.md, "The redelivery window").
 */
import type { Findings } from '../findings.js';
import type { GroupFinalLine, MetaLine } from '../history.js';
import { type HistoryIndex, type Op, observed, pushTo, shardKey } from '../index-ops.js';
import {
  ABOVE_CURSOR_LOSS_FAULTS,
  CLAIM_LOSS_FAULTS,
  CURSOR_LOSS_FAULTS,
  type GroupPollInvoke,
  type GroupPollOk,
  type GroupSettleInvoke,
  HEALED_BY,
  type NemesisInvoke,
  mayMoveLeader,
} from './types.js';

export interface HandOut {
  poll: GroupPollInvoke;
  ok: GroupPollOk;
  offset: number;
  attempt: number;
}

type GroupMeta = MetaLine['groups'][number];

/** Hand-outs per stream, group and shard (NUL-joined), then per offset, in history order. */
export function handOutsOf(index: HistoryIndex): Map<string, Map<number, HandOut[]>> {
  const all = new Map<string, Map<number, HandOut[]>>();
  for (const op of index.opsByF.get('group_poll') ?? []) {
    if (op.outcome !== 'ok') continue;
    const poll = op.invoke as GroupPollInvoke;
    const key = `${poll.stream}\u0000${poll.group}\u0000${poll.shard}`;
    let byOffset = all.get(key);
    if (byOffset === undefined) {
      byOffset = new Map();
      all.set(key, byOffset);
    }
    const ok = op.completion as GroupPollOk;
    for (const r of ok.records)
      pushTo(byOffset, r.offset, { poll, ok, offset: r.offset, attempt: r.attempt });
  }
  return all;
}

/** Acks or nacks per stream, group, shard and offset (NUL-joined). */
function settlesOf(index: HistoryIndex, f: 'group_ack' | 'group_nack'): Map<string, Op[]> {
  const settles = new Map<string, Op[]>();
  for (const op of index.opsByF.get(f) ?? []) {
    const a = op.invoke as GroupSettleInvoke;
    pushTo(settles, `${a.stream}\u0000${a.group}\u0000${a.shard}\u0000${a.offset}`, op);
  }
  return settles;
}

export function checkGroupCompletion(index: HistoryIndex, findings: Findings): void {
  const handOuts = handOutsOf(index);
  const acks = settlesOf(index, 'group_ack');
  const nacks = settlesOf(index, 'group_nack');
  const faults = faultsOf(index);
  for (const final of observed<GroupFinalLine>(index, 'group_final')) {
    checkFinal(index, final, acks, findings);
  }
  for (const [key, byOffset] of handOuts) {
    const [stream, group, shard] = key.split('\u0000');
    const meta = index.meta?.groups.find((g) => g.stream === stream && g.group === group);
    if (meta === undefined) {
      findings.add('malformed-history', `group ${group} of stream ${stream} is not in meta`, [
        index.meta,
      ]);
      continue;
    }
    const read = index.finalReads.get(shardKey(stream!, Number(shard)));
    const cursorAt = cursorAtCrashes(acks, key, read?.start ?? 0, faults);
    const replicated = (index.meta?.streams.find((s) => s.name === stream)?.replicas ?? 1) > 1;
    for (const [offset, outs] of byOffset) {
      const settled = (acks.get(`${key}\u0000${offset}`) ?? []).filter((a) => a.outcome === 'ok');
      const ctx = {
        meta,
        outs,
        faults,
        nacks: nacks.get(`${key}\u0000${offset}`) ?? [],
        findings,
        where: `group ${group} of stream ${stream} shard ${shard} offset ${offset}`,
        offset,
        cursorAt,
        replicated,
      };
      checkTwiceAcked(ctx, settled);
      checkAckedRedelivered(ctx, settled);
    }
  }
}

function checkFinal(
  index: HistoryIndex,
  final: GroupFinalLine,
  acks: Map<string, Op[]>,
  findings: Findings,
) {
  const read = index.finalReads.get(shardKey(final.stream, final.shard));
  const where = `group ${final.group} of stream ${final.stream} shard ${final.shard}`;
  if (read === undefined) {
    findings.add('malformed-history', `incomplete final read: ${where} has no final_read`, [final]);
    return;
  }
  const dead = new Set(final.deadLettered);
  const end = Math.min(final.end, read.start + read.values.length);
  for (let offset = read.start; offset < end; offset++) {
    if (dead.has(offset) || read.values[offset - read.start] === null) continue;
    const key = `${final.stream}\u0000${final.group}\u0000${final.shard}\u0000${offset}`;
    if ((acks.get(key) ?? []).some((a) => a.outcome !== 'fail')) continue;
    findings.add(
      'group-completion',
      `${where} offset ${offset} (value ${read.values[offset - read.start]}) was neither ` +
        `completed nor dead-lettered`,
      [final],
    );
  }
}

type Fault = NemesisInvoke & { end: number; healedAt: number };

/**
 * The nemesis faults in history order. A fault is under way from its invoke until it took effect
 * (a restart's SIGTERM drain may still answer requests); one never confirmed lasts to the end.
 * It stands until the heal after it completed (`healedAt`): the next heal of its kind for its
 * target (or for all), or its own effect when nothing heals it.
 */
function faultsOf(index: HistoryIndex): Fault[] {
  const ops = index.opsByF.get('nemesis') ?? [];
  return ops.map((op, i) => {
    const f = op.invoke as NemesisInvoke;
    const end = op.completion?.t ?? Number.POSITIVE_INFINITY;
    const heals = HEALED_BY[f.fault];
    if (heals === undefined) return { ...f, end, healedAt: end };
    const heal = ops.slice(i + 1).find((h) => {
      const hf = h.invoke as NemesisInvoke;
      return heals.includes(hf.fault) && (hf.target === f.target || hf.target === 'all');
    });
    const healedAt = heal === undefined ? Number.POSITIVE_INFINITY : (heal.completion?.t ?? end);
    return { ...f, end, healedAt: Math.max(end, healedAt) };
  });
}

/** Whether a fault that may move a replicated shard's leader stood at some time in [from, to]. */
function leaderMayHaveMoved(faults: Fault[], from: number, to: number): boolean {
  return faults.some((f) => mayMoveLeader(f) && f.t <= to && f.healedAt >= from);
}

interface OffsetContext {
  meta: GroupMeta;
  outs: HandOut[];
  faults: Fault[];
  nacks: Op[];
  findings: Findings;
  where: string;
  offset: number;
  /** The group's durable cursor at each crash (cursorAtCrashes). */
  cursorAt: Map<Fault, number>;
  /** The group's stream is replicated: its leader may move (leaderMayHaveMoved). */
  replicated: boolean;
}

/**
 * The group's durable cursor at each crash (kill, stop, restart), replayed from the ok acks in
 * completion order: the cursor moves over a contiguous run of acked offsets from `start`; a
 * crash keeps only the acks below the cursor and forgets the rest, as the broker does. Where the
 * history cannot say (an ack completed while the crash was under way, a dead letter whose time
 * is unknown) the replay takes the lower cursor, so the rule never blames a correct broker.
 */
function cursorAtCrashes(
  acks: Map<string, Op[]>,
  key: string,
  start: number,
  faults: Fault[],
): Map<Fault, number> {
  const done: { t: number; offset: number }[] = [];
  const prefix = `${key}\u0000`;
  for (const [k, ops] of acks) {
    if (!k.startsWith(prefix)) continue;
    const offset = Number(k.slice(prefix.length));
    for (const a of ops) {
      if (a.outcome === 'ok' && a.completion !== undefined)
        done.push({ t: a.completion.t, offset });
    }
  }
  done.sort((x, y) => x.t - y.t);
  const crashes = faults.filter((f) => ABOVE_CURSOR_LOSS_FAULTS.has(f.fault));
  crashes.sort((x, y) => x.t - y.t);
  const acked = new Set<number>();
  const at = new Map<Fault, number>();
  let cursor = start;
  let next = 0;
  for (const crash of crashes) {
    for (; next < done.length && done[next]!.t < crash.t; next++) acked.add(done[next]!.offset);
    while (acked.has(cursor)) cursor++;
    at.set(crash, cursor);
    for (const o of acked) if (o >= cursor) acked.delete(o);
    // Acks answered while the crash was under way count as forgotten.
    while (next < done.length && done[next]!.t <= crash.end) next++;
  }
  return at;
}

/** Whether a fault of `kinds` was under way at some time in [from, to]. */
function faultBetween(faults: Fault[], kinds: ReadonlySet<string>, from: number, to: number) {
  return faults.some((f) => kinds.has(f.fault) && f.t <= to && f.end >= from);
}

/** The hand-out an ack settles: the latest one to its consumer before the ack began. */
function handOutSettled(outs: HandOut[], ack: GroupSettleInvoke): HandOut | undefined {
  let found: HandOut | undefined;
  for (const h of outs) if (h.poll.consumer === ack.consumer && h.ok.t <= ack.t) found = h;
  return found;
}

/**
 * Whether `before`'s holder gave the record back (a nack not refused) before `out` handed it
 * out again. The nack took effect somewhere between its invoke and its answer, so one invoked
 * before the next hand-out was answered may explain it even if its own answer came later.
 */
function givenBack(nacks: Op[], before: HandOut, out: HandOut): boolean {
  return nacks.some((n) => {
    const nack = n.invoke as GroupSettleInvoke;
    return (
      n.outcome !== 'fail' &&
      nack.consumer === before.poll.consumer &&
      nack.t >= before.ok.t &&
      nack.t <= out.ok.t
    );
  });
}

/**
 * Two hand-outs acked ok is two completions: each hand-out after the first must follow a
 * lapsed claim, a fault, a nack of the hand-out before it, or go to the consumer that held it
 * (a reclaim). Two acks of one hand-out are one.
 */
function checkTwiceAcked(ctx: OffsetContext, settled: Op[]) {
  const acked = new Set<HandOut>();
  for (const ack of settled) {
    const a = ack.invoke as GroupSettleInvoke;
    const out = handOutSettled(ctx.outs, a);
    if (out !== undefined) acked.add(out);
    else {
      ctx.findings.add(
        'group-completion',
        `${ctx.where} acked by ${a.consumer}, who was never handed it`,
        [a, ack.completion],
      );
    }
  }
  if (acked.size < 2) return;
  const completions = [...acked].sort((x, y) => ctx.outs.indexOf(x) - ctx.outs.indexOf(y));
  for (const out of completions.slice(1)) {
    const before = ctx.outs[ctx.outs.indexOf(out) - 1];
    if (before === undefined) continue;
    const lapsed = out.ok.t >= before.poll.t + ctx.meta.visibilityMs;
    if (lapsed || faultBetween(ctx.faults, CLAIM_LOSS_FAULTS, before.poll.t, out.ok.t)) continue;
    if (ctx.replicated && leaderMayHaveMoved(ctx.faults, before.poll.t, out.ok.t)) continue;
    // A named consumer polling on a new connection reclaims the claims its name still holds
    // (reference §5): its own claim handed back to it is one holder, not two.
    if (before.poll.consumer === out.poll.consumer) continue;
    if (givenBack(ctx.nacks, before, out)) continue;
    ctx.findings.add(
      'group-completion',
      `${ctx.where} (value of attempt ${out.attempt}) was completed twice: handed to ` +
        `${out.poll.consumer} at ${out.ok.t} while ${before.poll.consumer}'s claim from ` +
        `${before.poll.t} had not lapsed (visibility ${ctx.meta.visibilityMs} ms), was not ` +
        'given back, and no fault came between',
      [before.ok, out.ok, ...settled.map((a) => a.completion)],
    );
  }
}

/**
 * Whether acked work handed out again between `from` and `to` is explained by a fault: with
 * periodic, any kill or restart; with onCommit, a kill, stop or restart while the record was
 * above the durable cursor; on a replicated stream, also any fault that may have moved the
 * leader in between.
 */
function cursorForgot(ctx: OffsetContext, from: number, to: number): boolean {
  if (ctx.replicated && leaderMayHaveMoved(ctx.faults, from, to)) return true;
  if (ctx.meta.cursor === 'periodic' && faultBetween(ctx.faults, CURSOR_LOSS_FAULTS, from, to))
    return true;
  return ctx.faults.some(
    (f) =>
      ABOVE_CURSOR_LOSS_FAULTS.has(f.fault) &&
      f.t <= to &&
      f.end >= from &&
      (ctx.cursorAt.get(f) ?? Number.POSITIVE_INFINITY) <= ctx.offset,
  );
}

/**
 * Acked work handed out again: only after a fault that made the cursor forget the ack. Each
 * hand-out is judged against the latest ok ack that completed before its poll began.
 */
function checkAckedRedelivered(ctx: OffsetContext, settled: Op[]) {
  for (const out of ctx.outs) {
    let first: Op | undefined;
    for (const a of settled) {
      const t = a.completion?.t;
      if (t !== undefined && t < out.poll.t && (first === undefined || t > first.completion!.t))
        first = a;
    }
    if (first?.completion === undefined) continue;
    const ackedAt = first.completion.t;
    if (cursorForgot(ctx, ackedAt, out.ok.t)) continue;
    ctx.findings.add(
      'group-completion',
      `${ctx.where} was handed out again to ${out.poll.consumer} (attempt ${out.attempt}) after ` +
        `its ack completed ok at ${ackedAt} (cursor ${ctx.meta.cursor})`,
      [first.invoke, first.completion, out.ok],
    );
    return;
  }
}
