/**
 * The history a campaign records: one JSON object per line (JSONL), in the order the recorder
 * wrote them. Every operation a workload makes is an `invoke` line followed by exactly one
 * completion line with the same `id`: `ok` (it happened), `fail` (it definitely did not: a
 * typed refusal whose retry class says nothing was applied) or `info` (outcome unknown: a
 * timeout, a lost connection, `unknown_outcome`). Observations that are not requests
 * (`deliver`, `gap`, the final reads) are single `ok` lines. `t` is milliseconds on one
 * monotonic clock shared by every process of the campaign (the campaign's start is 0).
 *
 * This file is the contract between the recorder (@felix/testing-cluster's workloads) and the
 * checker (this package): change it in one commit with both.
 */

export type Phase = 'invoke' | 'ok' | 'fail' | 'info';

/** Fields every line has. */
export interface LineBase {
  /** Monotonic milliseconds since the campaign started (fractions allowed). */
  t: number;
  /** The recording process: `pub-0`, `sub-1`, `cache-0`, `counter-0`, `group-0`, `nemesis`, `final`. */
  process: string;
  phase: Phase;
  /** Pairs an invoke with its completion; unique in the history (`<process>:<n>`). */
  id: string;
}

/** The first line of every history: what the campaign ran, for the checker's rules. */
export interface MetaLine {
  f: 'meta';
  t: 0;
  process: 'campaign';
  phase: 'ok';
  id: 'meta';
  seed: number;
  /**
   * Every stream the workloads used, with its shard count, whether it is durable and how many
   * copies each shard has (`replicas`, absent: one): a replicated shard's leader may move.
   */
  streams: { name: string; shards: number; durable: boolean; replicas?: number }[];
  /** Every consumer group: its stream, visibility timeout and cursor durability. */
  groups: {
    stream: string;
    group: string;
    visibilityMs: number;
    cursor: 'onCommit' | 'periodic';
    /** Hand-outs after which a record is dead-lettered (its attempt bound). */
    attemptsMax: number;
  }[];
  caches: string[];
  counters: string[];
}

/** Publish one unique value. ok: where it landed. `attempt` > 1 is a resend of the same value. */
export type PublishLine = LineBase & { f: 'publish' } & (
    | { phase: 'invoke'; stream: string; key?: string; value: string; attempt: number }
    | { phase: 'ok'; shard: number; offset: number }
    | { phase: 'fail' | 'info'; error: string }
  );

/** A subscriber (re)subscribes to one shard from `from` (the offset after its last delivery). */
export type SubscribeLine = LineBase & { f: 'subscribe' } & (
    | { phase: 'invoke'; stream: string; shard: number; from: number }
    | { phase: 'ok' }
    | { phase: 'fail' | 'info'; error: string }
  );

/** One record delivered to a subscriber (`sub` is the id of the subscribe that delivered it). */
export interface DeliverLine extends LineBase {
  f: 'deliver';
  phase: 'ok';
  sub: string;
  stream: string;
  shard: number;
  offset: number;
  value: string;
  /** Offsets just before this one that hold no record (the client's `skippedBefore`: a new
   *  leader's generation-start record), so no gap needs telling them. */
  skipped_before?: number;
}

/** The reader was told records `[from, to)` of a shard are lost to it (a `gap` / lostBefore). */
export interface GapLine extends LineBase {
  f: 'gap';
  phase: 'ok';
  sub: string;
  stream: string;
  shard: number;
  from: number;
  to: number;
}

/**
 * After the faults healed: the whole retained log of one shard, read from its first retained
 * offset `start` to its end; `values[i]` is the value at offset `start + i`, null where the
 * offset holds no record (a generation-start record the reader was told it skipped).
 */
export interface FinalReadLine extends LineBase {
  f: 'final_read';
  phase: 'ok';
  stream: string;
  shard: number;
  start: number;
  values: (string | null)[];
}

export type CachePutLine = LineBase & { f: 'cache_put' } & (
    | { phase: 'invoke'; cache: string; key: string; value: string }
    | { phase: 'ok' }
    | { phase: 'fail' | 'info'; error: string }
  );

export type CacheGetLine = LineBase & { f: 'cache_get' } & (
    | { phase: 'invoke'; cache: string; key: string }
    | { phase: 'ok'; value: string | null }
    | { phase: 'fail' | 'info'; error: string }
  );

/** After the faults healed: each key's value (null: absent). */
export interface CacheFinalLine extends LineBase {
  f: 'cache_final';
  phase: 'ok';
  cache: string;
  key: string;
  value: string | null;
}

export type CounterAddLine = LineBase & { f: 'counter_add' } & (
    | { phase: 'invoke'; counter: string; key: string; delta: number }
    | { phase: 'ok' }
    | { phase: 'fail' | 'info'; error: string }
  );

/** After the faults healed: a counter key's sum. */
export interface CounterFinalLine extends LineBase {
  f: 'counter_final';
  phase: 'ok';
  counter: string;
  key: string;
  value: number;
}

/** One record handed out by a poll: its claim belongs to the poll's consumer. */
export interface HandedOut {
  offset: number;
  value: string;
  /** 1 on the first hand-out, +1 each time the broker hands it out again. */
  attempt: number;
}

export type GroupPollLine = LineBase & { f: 'group_poll' } & (
    | { phase: 'invoke'; stream: string; group: string; shard: number; consumer: string }
    | { phase: 'ok'; records: HandedOut[] }
    | { phase: 'fail' | 'info'; error: string }
  );

/** ack completes a handed-out record; nack gives it back for another hand-out. */
export type GroupSettleLine = LineBase & { f: 'group_ack' | 'group_nack' } & (
    | {
        phase: 'invoke';
        stream: string;
        group: string;
        shard: number;
        offset: number;
        consumer: string;
      }
    | { phase: 'ok' }
    | { phase: 'fail' | 'info'; error: string }
  );

/**
 * After the faults healed and a final consumer drained the group: the shard's dead-lettered
 * offsets and the group's end (every offset below `end` was handed out at least once).
 */
export interface GroupFinalLine extends LineBase {
  f: 'group_final';
  phase: 'ok';
  stream: string;
  group: string;
  shard: number;
  end: number;
  deadLettered: number[];
}

/**
 * A fault (`kill`, `stop`, `restart`, `pause`, `resume`, `partition`, `heal`, `slow_fsync`,
 * `fail_fsync`, `heal_fsync`, `restart_controlplane`) recorded by the nemesis: invoke when it
 * starts, ok when it took effect (info when it could not be confirmed).
 */
export type NemesisLine = LineBase & { f: 'nemesis'; process: 'nemesis' } & (
    | { phase: 'invoke'; fault: string; target: string; params?: Record<string, number | string> }
    | { phase: 'ok' | 'info' | 'fail'; error?: string }
  );

export type HistoryLine =
  | MetaLine
  | PublishLine
  | SubscribeLine
  | DeliverLine
  | GapLine
  | FinalReadLine
  | CachePutLine
  | CacheGetLine
  | CacheFinalLine
  | CounterAddLine
  | CounterFinalLine
  | GroupPollLine
  | GroupSettleLine
  | GroupFinalLine
  | NemesisLine;

/** The rules, by the name a report prints (docs/reliability.md explains each). */
export type RuleName =
  /** 1: every acknowledged publish is in the final read, at the (shard, offset) its ack named. */
  | 'acked-publish-present'
  /** 2: no two observations (deliveries, acks, final reads) differ at one (shard, offset). */
  | 'offset-agreement'
  /** 3: each reader sees a shard's offsets rise by one, except across a gap it was told of. */
  | 'per-shard-order'
  /** 4: no value nobody published; no value twice unless its publish was resent. */
  | 'no-phantom-or-duplicate'
  /** 5: a reader never sees a shard's offsets go back, across reconnects and restarts. */
  | 'monotonic-reads'
  /** 6: final cache values are last-acked or unknown writes; no get reads an overwritten value. */
  | 'cache-register'
  /** 7: a counter's final sum is the acked adds plus a subset of the unknown ones. */
  | 'counter-sum'
  /** 8: every record completed or dead-lettered; no second completion without a lapse or fault. */
  | 'group-completion'
  /** The history itself is broken (an unpaired completion, a missing final read, bad JSON). */
  | 'malformed-history';

export interface Violation {
  rule: RuleName;
  /** One sentence a person can act on, naming stream/shard/offset/key/value. */
  message: string;
  /** The lines that break the rule (at most a few), for the report and the timeline. */
  lines: HistoryLine[];
}

export interface Report {
  valid: boolean;
  violations: Violation[];
  /** Violations per rule, every rule listed (0 when it held). */
  byRule: Record<RuleName, number>;
  stats: {
    durationMs: number;
    /** Completed operations by kind and phase, e.g. { publish: { ok: 10, info: 1, fail: 0 } }. */
    ops: Record<string, { ok: number; fail: number; info: number }>;
    /** ok operations per second over the whole history. */
    okPerSecond: number;
    faults: number;
    /** Records handed out again (group), counted over all groups. */
    redeliveries: number;
    /** The longest time from a kill/stop/restart/pause to the next ok operation of any workload. */
    longestUnavailabilityMs: number;
  };
}
