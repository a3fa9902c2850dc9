/**
 * How the session reads a client stream: through the iterator until the stream authenticates,
 * then (on a transport with `readChunks` and pausing, the TLS multiplexer) chunk by chunk in the
 * turn each arrives, paused while a chunk waits so the stream's window keeps backing the peer
 * off. Either way a chunk is served only after the one before it is done with, so requests keep
 * their order; `for await`'s early-exit rule (the stream drops what still comes) is kept.
 */
import type { TransportStream } from '@felix/transport';

/** Serves one chunk of a stream: true to read on, false when the stream is done with. */
export type ChunkServer = (chunk: Uint8Array) => boolean | Promise<boolean>;

/** How the iterator's part of a stream's reading ended. */
export type IteratedEnd = 'done_with' | 'half_closed' | 'handed_over';

/**
 * Reads the stream through its iterator, until it authenticates when the stream can hand its
 * reading over to `readChunks` (with pausing), else to the end: 'handed_over' then, else
 * 'half_closed' at the peer's half-close or 'done_with' when the stream is refused or shed.
 */
export async function readIterated(
  stream: TransportStream,
  authed: () => boolean,
  serve: ChunkServer,
): Promise<IteratedEnd> {
  const chunked = stream.readChunks !== undefined && stream.pauseChunks !== undefined;
  const it = stream[Symbol.asyncIterator]();
  for (;;) {
    const next = await it.next(); // a read error ends the reading as `for await` does
    if (next.done === true) return 'half_closed';
    let served: boolean;
    try {
      const s = serve(next.value);
      served = s === true || (s !== false && (await s));
    } catch (err) {
      await it.return?.(); // as `for await` does when its body throws
      throw err;
    }
    if (!served) {
      // As `for await` does when its body leaves early: the stream drops what it still gets.
      await it.return?.();
      return 'done_with';
    }
    if (chunked && authed()) return 'handed_over'; // no iterator read is waiting
  }
}

/**
 * Reads an authenticated stream through `readChunks`: each chunk is served in the turn it
 * arrives, and the stream is paused (its window then backs the peer off) while a chunk waits.
 * True at the peer's half-close; false when the stream is done with; rejects with the stream's
 * error.
 */
export function readChunked(stream: TransportStream, serve: ChunkServer): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    let working = false;
    let done = false;
    let endedWith: { err: Error | null } | null = null;
    const settle = (result: boolean | Error) => {
      if (done) return;
      done = true;
      if (result instanceof Error) reject(result);
      else resolve(result);
      // Whatever still comes is taken and dropped (credited) until the peer's half-close.
      stream.resumeChunks!();
    };
    const ended = (err: Error | null) => {
      if (working) endedWith = { err };
      else settle(err ?? true);
    };
    const afterWait = (served: boolean) => {
      working = false;
      if (!served) settle(false);
      else if (endedWith !== null) settle(endedWith.err ?? true);
      else stream.resumeChunks!();
    };
    const failed = (err: unknown) => {
      working = false;
      settle(err instanceof Error ? err : new Error(String(err)));
    };
    const sink = (chunk: Uint8Array) => {
      if (done) return;
      let served: boolean | Promise<boolean>;
      try {
        served = serve(chunk);
      } catch (err) {
        failed(err);
        return;
      }
      if (served === true) return;
      if (served === false) {
        settle(false);
        return;
      }
      working = true;
      stream.pauseChunks!();
      served.then(afterWait, failed);
    };
    stream.readChunks!(sink, ended);
  });
}
