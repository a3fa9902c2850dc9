/**
 * Goal: a stream's answer pipe writes answers in request order and lets go of each answer's
 * bytes once written, so a long-lived stream (a consumer's poll stream answers thousands of
 * polls of up to megabytes each) holds no more than the answers not yet written. Method: a
 * stand-in stream that records writes; WeakRefs to written answers, checked after a full GC.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { waitFor } from '@felix/testing-harness';
import type { TransportStream } from '@felix/transport';
import { describe, expect, it } from 'vitest';
import { AnswerPipe } from '../src/session/answer-pipe.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const ANSWER_BYTES = 64 * 1024;

/** Records which answers were written (each is ANSWER_BYTES of its index), keeping no chunk. */
function recordingStream() {
  const seen: number[] = [];
  const stream = {
    write: async (chunk: Uint8Array) => {
      // Answers ready together go out as one write.
      for (let at = 0; at < chunk.length; at += ANSWER_BYTES) seen.push(chunk[at]!);
    },
  } as unknown as TransportStream;
  return { stream, seen };
}

/** Settles the answers out of order, keeping only WeakRefs (in a frame of its own: a suspended
 *  async test would keep the last answer alive in its saved registers). */
function settleOutOfOrder(settle: Array<(b: Uint8Array) => void>, refs: WeakRef<Uint8Array>[]) {
  for (const i of [3, 1, 0, 2, 9, 4, 5, 8, 6, 7]) {
    const bytes = new Uint8Array(ANSWER_BYTES).fill(i);
    refs.push(new WeakRef(bytes));
    settle[i]!(bytes);
  }
}

describe('answer pipe', () => {
  it('answers_a_stream_accepts_at_once_are_written_in_the_turn_they_are_made_and_keep_order_behind_one_it_holds', async () => {
    const seen: number[] = [];
    let hold: (() => void) | null = null;
    const record = (chunk: Uint8Array) => {
      for (const b of chunk) seen.push(b);
    };
    const stream = {
      write: async (chunk: Uint8Array) => record(chunk),
      // Accepted at once (null) unless the test holds the write.
      writeNow: (chunk: Uint8Array) => {
        record(chunk);
        if (hold === null) return null;
        return new Promise<void>((r) => {
          hold = r;
        });
      },
    } as unknown as TransportStream;
    const pipe = new AnswerPipe(stream, 64);
    pipe.pushReady(Uint8Array.of(1));
    pipe.pushReady(Uint8Array.of(2));
    expect(seen).toEqual([1, 2]); // no turn between them: nothing waited on a write's promise
    hold = () => undefined;
    pipe.pushReady(Uint8Array.of(3)); // its write is held
    pipe.pushReady(Uint8Array.of(4));
    pipe.pushReady(Uint8Array.of(5));
    expect(seen).toEqual([1, 2, 3]);
    const release = hold as () => void;
    hold = null;
    release();
    await waitFor(() => seen.length === 5, 'the answers behind the held write', 5_000);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    await pipe.drain();
  });

  it('an_answer_pipe_keeps_no_written_answer_alive', async () => {
    const { stream, seen } = recordingStream();
    const pipe = new AnswerPipe(stream, 64);
    const refs: WeakRef<Uint8Array>[] = [];
    // Answers settle out of order (below); they are still written in request order.
    const settle: Array<(b: Uint8Array) => void> = [];
    for (let i = 0; i < 10; i++) {
      pipe.push(new Promise<Uint8Array>((r) => settle.push(r)));
    }
    settleOutOfOrder(settle, refs);
    await waitFor(() => seen.length === 10, 'every answer is written', 5_000);
    await pipe.drain();
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The resolvers hold their settled promises (and so the bytes): drop them. WeakRef targets
    // stay alive for the job that created them: let it end before collecting.
    settle.length = 0;
    await new Promise<void>((r) => setImmediate(r));
    gc();
    expect(refs.map((r, i) => (r.deref() === undefined ? -1 : i)).filter((i) => i >= 0)).toEqual(
      [],
    );
  });

  it('a_ready_answer_waits_behind_earlier_ones_and_alone_is_written_in_the_same_turn', async () => {
    // Each write records the first byte of each one-byte answer in it.
    const seen: number[] = [];
    const stream = {
      write: async (chunk: Uint8Array) => {
        seen.push(...chunk);
      },
    } as unknown as TransportStream;
    const pipe = new AnswerPipe(stream, 4);
    let settle!: (b: Uint8Array) => void;
    pipe.push(new Promise<Uint8Array>((r) => (settle = r)));
    pipe.pushReady(Uint8Array.of(2));
    pipe.pushReady(Uint8Array.of(3));
    expect(pipe.hasRoom).toBe(true);
    pipe.pushReady(Uint8Array.of(4));
    // A window of 4 is full with the unsettled answer and three ready ones behind it.
    expect(pipe.hasRoom).toBe(false);
    await new Promise<void>((r) => setImmediate(r));
    expect(seen).toEqual([]);
    settle(Uint8Array.of(1));
    await pipe.drain();
    expect(seen).toEqual([1, 2, 3, 4]);
    // Nothing queued and no write in progress: written before pushReady returns.
    pipe.pushReady(Uint8Array.of(5));
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    await pipe.drain();
  });
});

describe('an answer that cannot be made', () => {
  it('an_answer_that_cannot_be_made_resets_its_stream_so_no_later_end_reads_as_a_notice', async () => {
    // A handler's answer that rejects leaves its request unanswered and every later answer
    // dropped: were the stream later ended (a stop's notice, FEATURE_HI_STREAM_END_NOTICE), the
    // client would read applied writes as not applied. The stream is reset instead.
    const written: number[] = [];
    const resets: number[] = [];
    const stream = {
      write: async (chunk: Uint8Array) => {
        for (const b of chunk) written.push(b);
      },
      reset: (code: number) => resets.push(code),
    } as unknown as TransportStream;
    const pipe = new AnswerPipe(stream, 64);
    pipe.push(Promise.resolve(Uint8Array.of(1)));
    pipe.push(Promise.reject(new Error('the answer could not be encoded')));
    pipe.push(Promise.resolve(Uint8Array.of(3)));
    await pipe.drain();
    expect(resets).toEqual([0]);
    expect(pipe.broken).toBeInstanceOf(Error);
    expect(written).toEqual([1]); // nothing after the unanswered one is written
  });
});
