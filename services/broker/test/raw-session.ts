/**
 * Test support: a raw request stream that has authenticated, for bad-input tests that must
 * write frames the client would never send. Answers are decoded as they arrive.
 */
import type { Connection, TransportStream } from '@felix/transport';
import { FrameDecoder, decodeMessage, encodeMessage } from '@felix/wire';
import { expect } from 'vitest';

export async function rawAuthed(
  conn: Connection,
  clientFeatures: number,
  clientFeaturesHi?: number,
): Promise<{ stream: TransportStream; next(): Promise<unknown | null> }> {
  const stream = await conn.openBidi();
  const decoder = new FrameDecoder();
  const it = stream[Symbol.asyncIterator]();
  const queue: unknown[] = [];
  const next = async () => {
    while (queue.length === 0) {
      const r = await it.next();
      if (r.done) return null;
      for (const f of decoder.push(r.value)) queue.push(decodeMessage(f.payload));
    }
    return queue.shift();
  };
  await stream.write(
    encodeMessage({
      type: 'auth',
      tenant_id: 't1',
      token: '',
      client_flags: 0x1fff,
      client_features: clientFeatures,
      ...(clientFeaturesHi !== undefined ? { client_features_hi: clientFeaturesHi } : {}),
    }),
  );
  expect(await next()).toMatchObject({ type: 'auth_ok' });
  return { stream, next };
}
