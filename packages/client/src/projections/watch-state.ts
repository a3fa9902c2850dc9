/**
 * A cache watch's state across re-watches and the reading of one started watch's frames
 * (cache.ts starts and re-starts it): its current values, then its changes, until the broker
 * ends it, it lags, or a refusal ends it.
 */
import { type Message, decodeMessage } from '@felix/wire';
import {
  EventStreamTimeoutError,
  NotLeaderError,
  SubscribeTimeoutError,
  notLeaderOf,
  refusalOf,
} from '../errors.js';
import {
  EVENT_STREAM_REOPENS_MAX,
  NOT_LEADER_RESUBSCRIBES_MAX,
  SUBSCRIBE_UNANSWERED_RETRIES_MAX,
} from '../limits.js';
import type { FrameStream, InFrame } from '../protocol/frame-stream.js';
import type { CacheWatchEvent } from './watch-events.js';

type Answer<T extends Message['type']> = Extract<Message, { type: T }>;

/**
 * Whether a watch that failed on a live connection ends although its failure class passes. An
 * event stream that never came is a stream lost on the way: watched again, but a broker that
 * never opens one ends the watch typed rather than have it re-watch for ever; so is a watch the
 * broker never answered (a stalled handler, an answer lost), as for a subscription; and so is a
 * `not_leader` the client cannot follow (no routing, or no shard known to follow it for): it
 * was re-watched on the same broker for ever, watching nothing.
 */
export function givesUpOn(err: unknown, st: WatchState, followed: boolean): boolean {
  if (err instanceof NotLeaderError && !followed)
    return ++st.notLeaderAnswers > NOT_LEADER_RESUBSCRIBES_MAX;
  if (err instanceof EventStreamTimeoutError)
    return ++st.eventStreamsMissing > EVENT_STREAM_REOPENS_MAX;
  if (err instanceof SubscribeTimeoutError)
    return ++st.watchesUnanswered > SUBSCRIBE_UNANSWERED_RETRIES_MAX;
  return false;
}

/**
 * Reads the refusal the broker ends a started watch with on its control stream (`unauthenticated`
 * once the connection's token expired, `forbidden` under a narrower one) before it resets the
 * watch's events: the watch then ends with it, as a subscription does, instead of re-watching.
 */
export function endingOf(ctl: FrameStream | undefined): { refusal: Error | null } {
  const ended: { refusal: Error | null } = { refusal: null };
  ctl?.next().then(
    (f) => {
      if (f === null || f.flags !== 0) return;
      try {
        const end = decodeMessage(f.payload);
        if (end.type === 'error') ended.refusal = refusalOf(end);
      } catch (err) {
        ended.refusal = err as Error; // an undecodable frame ends the watch as broken
      }
    },
    () => undefined, // the stream was reset (closed by us, or the connection went): no refusal
  );
  return ended;
}

/** The watch's next frame (null: the broker ended its events); when a refusal came on its
 *  control stream (see endingOf), that refusal instead. */
async function nextWatchFrame(
  events: FrameStream,
  current: WatchState['current'],
): Promise<InFrame | null> {
  let frame: InFrame | null;
  try {
    frame = await events.next();
  } catch (err) {
    throw current.ended?.refusal ?? err;
  }
  const refusal = current.ended?.refusal;
  if (refusal) throw refusal;
  return frame;
}

/**
 * The current values a retained or resnapshot start sends first (`left` of them still to come;
 * -1 once live). They are not history, so the watch's position moves past them only when the
 * phase ends.
 */
export class CurrentValues {
  left: number;
  /** Current values yielded in this phase. */
  delivered = 0;

  constructor(
    private readonly st: WatchState,
    private readonly answer: Answer<'cache_watch_started'>,
  ) {
    this.left = st.retainedPhase || answer.resnapshot ? (answer.retained_count ?? 0) : -1;
  }

  get floor(): number {
    return this.answer.resume_offset;
  }

  complete(): CacheWatchEvent {
    const st = this.st;
    this.left = -1;
    st.retainedPhase = false;
    // After a resnapshot the changes go on from its floor, which a failover can put below
    // the old position (the new leader's log parted there): changes from it are all new.
    st.next = this.answer.resnapshot ? this.floor : Math.max(st.next ?? 0, this.floor);
    return { type: 'state_complete', retainedCount: this.delivered, resumeOffset: this.floor };
  }
}

/** A started watch's events until the broker ends it or it lags, moving `st` along. */
export async function* watchEvents(
  events: FrameStream,
  st: WatchState,
  phase: CurrentValues,
): AsyncGenerator<CacheWatchEvent> {
  for (;;) {
    const frame = await nextWatchFrame(events, st.current);
    if (frame === null) return; // the broker ended the watch (shutting down): re-watch
    const msg = decodeMessage(frame.payload);
    if (msg.type === 'cache_watch_lagged') {
      st.next = msg.resume_from;
      st.resumed = false;
      yield { type: 'lagged', resumeFrom: msg.resume_from };
      return;
    }
    if (!isCacheEvent(msg)) continue;
    // Current values all sit below the floor. The broker counts them when the watch registers
    // and skips one it finds replaced or deleted by the time it reads it (that change follows
    // live, at or past the floor): the first change there ends the phase. Before, it was taken
    // for a current value, came before `state_complete`, and a resume from the floor delivered
    // it again.
    if (phase.left > 0 && msg.offset >= phase.floor) yield phase.complete();
    // A change delivered before a resume on another owner is not delivered twice.
    if (phase.left < 0 && st.next !== undefined && msg.offset < st.next) continue;
    if (phase.left < 0) st.next = Math.max(st.next ?? 0, msg.offset + 1);
    else {
      phase.delivered++;
      if (st.retainedPhase) st.retainedYielded++;
    }
    yield changeOf(msg);
    if (phase.left > 0 && --phase.left === 0) yield phase.complete();
  }
}

/** A watch's position across re-watches, and the streams of the one running now. */
export interface WatchState {
  next: number | undefined;
  retainedPhase: boolean;
  /** Current values yielded by a retained phase not yet complete. */
  retainedYielded: number;
  resumed: boolean;
  /** Watches answered whose event stream never came, since one whose stream did. */
  eventStreamsMissing: number;
  /** Watches the broker never answered, since one whose stream came. */
  watchesUnanswered: number;
  /** `not_leader` answers the watch could not follow, since one whose stream came. */
  notLeaderAnswers: number;
  current: { ctl?: FrameStream; events?: FrameStream; ended?: { refusal: Error | null } };
  /** The history `next` belongs to (a replicated cache's, from the last watch started). */
  history?: { generation: number; start: number };
}

/** Whether a watch frame is an event; an `error` (the broker ended the watch: `unauthenticated`
 *  once the connection's token expired) throws its typed error. */
function isCacheEvent(msg: Message): msg is Answer<'cache_event'> {
  if (msg.type === 'error') throw refusalOf(msg);
  if (msg.type === 'not_leader') throw notLeaderOf(msg);
  return msg.type === 'cache_event';
}

/** The history a watch's offsets belong to, as its start named it (a replicated cache's). */
export function historyOf(
  answer: Answer<'cache_watch_started'>,
): { generation: number; start: number } | undefined {
  const { generation, generation_start: start } = answer;
  return generation !== undefined && start !== undefined ? { generation, start } : undefined;
}

/** A `cache_event` as the watcher's put or delete. */
function changeOf(msg: Answer<'cache_event'>): CacheWatchEvent {
  return msg.value !== undefined
    ? {
        type: 'put',
        key: msg.key,
        value: msg.value,
        offset: msg.offset,
        expiresAtMillis: msg.expires_at_millis,
      }
    : { type: 'delete', key: msg.key, offset: msg.offset };
}
