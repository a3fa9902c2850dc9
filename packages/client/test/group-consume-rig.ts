// The fake broker connection and consume-loop rig the group consume tests drive (see
// group-consume.test.ts for the method), and the turn and timer helpers of its timed tests.
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_GROUP_CONSUMER,
  FrameDecoder,
  type Message,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import type { vi } from 'vitest';
import { REQUEST_TIMEOUT_MS_DEFAULT } from '../src/limits.js';
import { Group, type GroupOptions } from '../src/projections/group.js';
import { RequestLane } from '../src/protocol/request-lane.js';
import { RequestTable } from '../src/protocol/request-table.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';
import type { StatusEvent } from '../src/status.js';
import { CheckTicks, type DueWatched } from '../src/util/check-ticks.js';

/** A transport stream stand-in: records writes, hands out chunks the test pushes. */
export class FakeStream {
  readonly writes: Uint8Array[] = [];
  private readonly chunks: Uint8Array[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  async write(b: Uint8Array): Promise<void> {
    this.writes.push(b);
  }
  push(m: Message): void {
    this.chunks.push(encodeMessage(m));
    this.wake?.();
  }
  async end(): Promise<void> {
    this.ended = true;
    this.wake?.();
  }
  reset(): void {
    this.ended = true;
    this.wake?.();
  }
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: async () => {
        while (this.chunks.length === 0 && !this.ended)
          await new Promise<void>((r) => {
            this.wake = r;
          });
        const c = this.chunks.shift();
        return c === undefined ? { done: true, value: undefined } : { done: false, value: c };
      },
      return: async () => ({ done: true, value: undefined }),
    };
  }
}

export function decodeAll(writes: Uint8Array[]): Message[] {
  const d = new FrameDecoder();
  return writes.flatMap((w) => d.push(w).map((f) => decodeMessage(f.payload)));
}

/** What a Group takes of the client here; `emit` keeps every status event in order. */
export interface FakeProjectionHost {
  closed: boolean;
  closing: AbortSignal;
  connection(): Promise<never>;
  emit(e: StatusEvent): void;
}

/** A broker connection stand-in: every opened stream is kept for the test to drive. */
export function fakeHost(featuresHi = 0) {
  const streams: FakeStream[] = [];
  const openStream = async () => {
    const stream = new FakeStream();
    streams.push(stream);
    const { FrameStream } = await import('../src/protocol/frame-stream.js');
    return { stream: stream as never, frames: new FrameStream(stream as never) };
  };
  const turn = new TurnBatcher();
  const table = new RequestTable();
  const ticks = new CheckTicks();
  // What the connection's check would bound: each poll stream's answer due.
  const watched = new Set<DueWatched>();
  const bc = {
    server: 'fake',
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: {
      flags: 0,
      features: FEATURE_CONSUMER_GROUP | FEATURE_GROUP_CONSUMER,
      featuresHi,
      window: 1,
    },
    lost: new Promise<Error>(() => undefined),
    turn,
    table,
    openStream,
    // The connection's request stream, over a fake stream of its own opened on first use.
    requests: new RequestLane({
      server: 'fake',
      table,
      turn,
      ticks,
      timeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
      open: openStream,
    }),
    // The connection's check, which runs only where a test calls it (`overdue`).
    ticks,
    requestTimeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
    watchDue: (w: DueWatched) => watched.add(w),
    unwatchDue: (w: DueWatched) => watched.delete(w),
  };
  const closer = new AbortController();
  /** Every status event the group emitted, in order. */
  const events: StatusEvent[] = [];
  const host: FakeProjectionHost = {
    closed: false,
    closing: closer.signal,
    connection: async () => bc as never,
    emit: (e: StatusEvent) => {
      events.push(e);
    },
  };
  /** The client closes (its `closed` and its signal, as FelixClient.close sets them). */
  const close = () => {
    host.closed = true;
    closer.abort();
  };
  /** The connection's check once the answer of the poll on `stream` is overdue (its wait and
   *  the request timeout passed): it fails, and its stream is reset. */
  const overdue = (stream: FakeStream) => {
    for (const w of watched)
      if ((w as unknown as { stream: FakeStream }).stream === stream)
        w.checkDue(Number.MAX_SAFE_INTEGER);
  };
  return { host, streams, overdue, close, events };
}

/** Every group_poll written so far, with the stream it went on and its request id. */
export function pollsOn(streams: ReturnType<typeof fakeHost>['streams']) {
  return streams.flatMap((stream) =>
    decodeAll(stream.writes)
      .filter((m) => m.type === 'group_poll')
      .map((m) => ({ stream, id: (m as { request_id: number }).request_id })),
  );
}

export const records = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    offset: from + i,
    payload: new Uint8Array([i]),
    attempts: 1,
    skipped_before: 0,
  }));

/** A consume loop taking 2 records per poll over a fake broker: what it sent, how to answer its
 *  polls, and the offsets it handed back. */
export function consumeRig(signal?: AbortSignal, groupOpts: GroupOptions = {}) {
  const { host, streams, overdue, close, events } = fakeHost();
  const g = new Group(host, 'jobs', 'billing', groupOpts);
  const sent = () =>
    streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
  const polls = () => sent().filter((x) => x.m.type === 'group_poll');
  const it = g
    .consume({ max: 2, waitMs: 1_000, ...(signal ? { signal } : {}) })
    [Symbol.asyncIterator]();
  const answerPoll = (i: number, from: number) => {
    const p = polls()[i]!;
    const id = (p.m as { request_id: number }).request_id;
    p.stream.push({ type: 'group_records', request_id: id, records: records(from, 2) });
  };
  /** Poll `i` is refused with `code`, of the retry class `retry`. */
  const refusePoll = (i: number, code: string, retry: string) =>
    polls()[i]!.stream.push({ type: 'error', code, message: code, retry } as Message);
  /** The broker never answers poll `i`: the connection's check fails it. */
  const leaveUnanswered = (i: number) => overdue(polls()[i]!.stream);
  const nacked = () =>
    sent()
      .filter((x) => x.m.type === 'group_nack')
      .map((x) => (x.m as { offset: number }).offset)
      .sort((a, b) => a - b);
  return { it, polls, answerPoll, refusePoll, leaveUnanswered, nacked, close, events, g, host };
}

/** Lets promises, stream reads and immediates run for a few turns (no timer fires). */
export async function settle(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Runs turns (no timer fires) until `condition` holds; fails past a deadline on the real
 *  monotonic clock (not faked: the first test of a run also waits for a module's first load). */
export async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    if (condition()) return;
    await new Promise<void>((r) => setImmediate(r));
  }
  throw new Error(`${what} did not happen`);
}

/** Only the timers a backoff uses (and the clock) are faked: turns still run. */
export const BACKOFF_TIMERS: Parameters<typeof vi.useFakeTimers>[0] = {
  toFake: ['setTimeout', 'clearTimeout', 'Date'],
};
