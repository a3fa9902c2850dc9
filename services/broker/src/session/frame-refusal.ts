/**
 * The refusal of bytes an authenticated stream's frame reader cannot take (a header over the
 * bound, unknown flags, a bad magic or version): invalid_request, fatal to the stream, with the
 * reason the bad-input metric counts.
 */
import type { FrameReader, InboundFrame } from './codec.js';
import { Refusal } from './refusal.js';

/** An authenticated stream's chunk: its frames, or the refusal of a bad one. */
export function pushChunk(reader: FrameReader, chunk: Uint8Array): InboundFrame[] | Refusal {
  try {
    return reader.push(chunk);
  } catch (err) {
    return frameRefusal(err);
  }
}

/** The decoder's typed error as the refusal that ends the stream. */
export function frameRefusal(err: unknown): Refusal {
  return new Refusal('invalid_request', (err as Error).message, frameReason(err), {
    fatalToStream: true,
  });
}

function frameReason(err: unknown): string {
  const code = (err as { code?: string }).code ?? '';
  if (code.includes('TOO_LARGE')) return 'frame_too_large';
  if (code.includes('UNKNOWN_FLAGS')) return 'unknown_flag';
  if (code.includes('FLAG_COMBINATION')) return 'invalid_flags';
  if (code.includes('MAGIC')) return 'bad_magic';
  if (code.includes('VERSION')) return 'bad_version';
  return 'malformed_frame';
}
