/**
 * Test support: a raw request stream that has authenticated, for bad-input tests that must
 * write frames the client would never send. Answers are decoded as they arrive.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  FLAG_BINARY_GROUP_RECORDS,
  FrameDecoder,
  decodeGroupRecords,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import { expect } from 'vitest';

export async function rawAuthed(
  conn: Connection,
  clientFeatures: number,
  clientFeaturesHi?: number,
  clientFlags = 0x1fff,
): Promise<{ stream: TransportStream; next(): Promise<unknown | null> }> {
  const stream = await conn.openBidi();
  const decoder = new FrameDecoder();
  const it = stream[Symbol.asyncIterator]();
  const queue: unknown[] = [];
  const next = async () => {
    while (queue.length === 0) {
      const r = await it.next();
      if (r.done) return null;
      for (const f of decoder.push(r.value)) {
        // A binary group_records answer is marked so a test can tell it from the JSON one.
        queue.push(
          f.flags === FLAG_BINARY_GROUP_RECORDS
            ? { ...decodeGroupRecords(f.flags, f.payload), binary: true }
            : decodeMessage(f.payload),
        );
      }
    }
    return queue.shift();
  };
  await stream.write(
    encodeMessage({
      type: 'auth',
      tenant_id: 't1',
      token: '',
      client_flags: clientFlags,
      client_features: clientFeatures,
      ...(clientFeaturesHi !== undefined ? { client_features_hi: clientFeaturesHi } : {}),
    }),
  );
  expect(await next()).toMatchObject({ type: 'auth_ok' });
  return { stream, next };
}
