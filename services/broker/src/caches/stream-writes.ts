/**
 * The cache writes a request stream has sent and not yet had answered, by key, so a get of such
 * a key on the same stream reads after them (read-your-writes, as a Redis pipeline gives): a
 * log-backed write is applied only once durable, and a get that read at once answered the value
 * from before it. Other streams' gets are not held back. No I/O; bounded by the stream's
 * unanswered requests (the answer pipe's window).
 */
import type { AnswerPipe } from '../session/answer-pipe.js';

const settle = (): void => undefined;

export class StreamWrites {
  private readonly byStream = new WeakMap<AnswerPipe, Map<string, Promise<void>>>();

  /** Marks a write of `key` on the stream of `pipe`; call `done` once it is answered. */
  begin(pipe: AnswerPipe, key: string): () => void {
    let byKey = this.byStream.get(pipe);
    if (byKey === undefined) {
      byKey = new Map();
      this.byStream.set(pipe, byKey);
    }
    let done = settle;
    const settled = new Promise<void>((resolve) => {
      done = resolve;
    });
    byKey.set(key, settled);
    const map = byKey;
    return () => {
      done();
      if (map.get(key) === settled) map.delete(key);
    };
  }

  /** Settles once the stream's writes of the key made so far are answered; undefined if none
   *  (checked without building the key while the stream has no write outstanding). */
  before(pipe: AnswerPipe, msg: WriteKeyParts): Promise<void> | undefined {
    const byKey = this.byStream.get(pipe);
    if (byKey === undefined || byKey.size === 0) return undefined;
    return byKey.get(writeKey(msg));
  }
}

interface WriteKeyParts {
  namespace: string;
  cache: string;
  key: string;
}

/** The key a write and a get of one cache entry share on a stream. */
export function writeKey(msg: WriteKeyParts): string {
  return `${msg.namespace}\u0000${msg.cache}\u0000${msg.key}`;
}
