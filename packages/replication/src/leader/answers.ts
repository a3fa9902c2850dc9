/** A follower's answer frame as the cursor takes it (null when it is no replication answer). */
import { InternalFrameDecoder, decodeInternalMessage } from '@felix/wire';
import type { FollowerAnswer } from './follower-cursor.js';

export function answerOf(
  bytes: Uint8Array,
): { correlationId: number; answer: FollowerAnswer } | null {
  let frames: ReturnType<InternalFrameDecoder['push']>;
  try {
    frames = new InternalFrameDecoder().push(bytes);
    if (frames.length !== 1) return null;
    const m = decodeInternalMessage(frames[0]!);
    if (m.kind === 'ReplicateOk')
      return {
        correlationId: m.correlationId,
        answer: { kind: 'ok', durableOffset: m.durableOffset },
      };
    if (m.kind === 'ReplicateError')
      return {
        correlationId: m.correlationId,
        answer: { kind: 'error', code: m.code, expectedOffset: m.expectedOffset },
      };
    return null;
  } catch {
    // A damaged answer counts as none: the batch is sent again.
    return null;
  }
}
