/**
 * A new leader's fence (docs/replication.md, "The fence and divergent suffixes"): before it
 * serves a shard, it sends `Fence` (29) at its generation to every follower of the replica set;
 * each durably accepts the generation (refusing older leaders from then on) and answers
 * `FenceOk` (30) with its log end, commit offset and last record's generation. The leader opens
 * once a majority of the set, itself counted, has answered, so any majority a deposed leader
 * could still gather overlaps the fenced one. A follower saying a newer generation exists
 * deposes this leader. Unanswered followers are retried with backoff until the deadline.
 */
import {
  INTERNAL_ERROR,
  InternalFrameDecoder,
  type ShardRef,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { FENCE_ANSWER_TIMEOUT_MS, FENCE_RETRY_MS_MAX, FENCE_RETRY_MS_MIN } from '../limits.js';
import { type FencedLogKind, REPLICA_LOGS } from '../log-kind.js';
import type { PeerLink } from './shard-shipper.js';

export interface FenceAnswer {
  nodeId: string;
  logEnd: number;
  commitOffset: number;
  lastGeneration: number;
}

export interface FenceOutcome {
  /** A majority of the set (the leader counted) accepted the generation. */
  majority: boolean;
  /** A follower holds a newer generation: this broker is no longer the leader. */
  deposed: boolean;
  answers: FenceAnswer[];
  /** Per follower that did not accept, why its last try failed (what a retried open says). */
  unanswered: { nodeId: string; why: string }[];
}

export interface FenceOptions {
  shard: ShardRef;
  followers: readonly { nodeId: string; link: PeerLink }[];
  deadlineMs: number;
  /** The log fenced: a stream's records (the default), or a quorum cache shard's cache or
   *  counter log (each fenced on its own: each has its own replica file). */
  log?: FencedLogKind;
}

type Heard =
  | { kind: 'ok'; answer: FenceAnswer }
  | { kind: 'deposed'; why: string }
  | { kind: 'retry'; why: string };

function heardOf(nodeId: string, bytes: Uint8Array): Heard {
  try {
    const frames = new InternalFrameDecoder().push(bytes);
    const m = frames.length === 1 ? decodeInternalMessage(frames[0]!) : undefined;
    if (m?.kind === 'FenceOk') {
      const { logEnd, commitOffset, lastGeneration } = m;
      return { kind: 'ok', answer: { nodeId, logEnd, commitOffset, lastGeneration } };
    }
    if (m?.kind === 'ReplicateError' && m.code === INTERNAL_ERROR.FencedEpoch)
      return { kind: 'deposed', why: `holds a newer generation: ${m.detail}` };
    if (m?.kind === 'ReplicateError')
      return { kind: 'retry', why: `refused (code ${m.code}): ${m.detail}` };
    return { kind: 'retry', why: `answered ${m?.kind ?? `${frames.length} frames`}` };
  } catch {
    // A damaged answer counts as none: the fence is sent again.
    return { kind: 'retry', why: 'a malformed answer' };
  }
}

export async function fenceReplicaSet(opts: FenceOptions): Promise<FenceOutcome> {
  const setSize = opts.followers.length + 1;
  const needed = Math.floor(setSize / 2); // followers, beyond the leader itself
  const answers: FenceAnswer[] = [];
  const until = Date.now() + opts.deadlineMs;
  let deposed = false;
  const why = new Map<string, string>();
  const done = () => deposed || answers.length >= needed || Date.now() >= until;
  let correlation = 0;
  const one = async (f: { nodeId: string; link: PeerLink }): Promise<void> => {
    let delay = FENCE_RETRY_MS_MIN;
    while (!done()) {
      const frame = encodeInternalMessage({
        kind: 'Fence',
        correlationId: ++correlation,
        shard: opts.shard,
        log: REPLICA_LOGS[opts.log ?? 'stream'].wire,
      });
      let heard: Heard;
      try {
        const wait = Math.max(1, Math.min(FENCE_ANSWER_TIMEOUT_MS, until - Date.now()));
        heard = heardOf(f.nodeId, await f.link.request(frame, wait));
      } catch (err) {
        // No answer (link down, timed out): tried again after the backoff.
        heard = {
          kind: 'retry',
          why: `no answer: ${err instanceof Error ? err.message : String(err)}`,
        };
      }
      if (heard.kind === 'ok') {
        answers.push(heard.answer);
        return;
      }
      if (heard.kind === 'deposed') deposed = true;
      why.set(f.nodeId, heard.why);
      if (done()) return;
      await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, until - Date.now()))));
      delay = Math.min(FENCE_RETRY_MS_MAX, delay * 2);
    }
  };
  if (needed > 0) {
    // Open as soon as a majority answered: a dead follower's request may still be waiting.
    let heardEnough: () => void = () => undefined;
    const enough = new Promise<void>((r) => {
      heardEnough = r;
    });
    const all = opts.followers.map((f) =>
      one(f).then(() => {
        if (deposed || answers.length >= needed) heardEnough();
      }),
    );
    await Promise.race([Promise.all(all), enough]);
  }
  // A snapshot: a request still in flight at a majority may answer after this returns.
  const answered = [...answers];
  const ok = new Set(answered.map((a) => a.nodeId));
  const unanswered = opts.followers
    .filter((f) => !ok.has(f.nodeId))
    .map((f) => ({ nodeId: f.nodeId, why: why.get(f.nodeId) ?? 'no answer yet' }));
  return {
    majority: !deposed && answered.length >= needed,
    deposed,
    answers: answered,
    unanswered,
  };
}
