/**
 * A raw request stream that has authenticated, for tests that must write frames the client
 * would never send, or watch every frame the broker answers with. Answers are decoded as they
 * arrive: JSON messages as themselves, a binary group_records answer marked `binary: true`, a
 * binary publish ack as `{ type: 'binary_publish_ack', ...ack }`, a binary cache answer as its
 * message with `key: ''` (the layout names none) marked `binary: true`, a binary `group_acked`
 * marked `binary: true`.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  FLAG_BINARY_CACHE,
  FLAG_BINARY_GROUP,
  FLAG_BINARY_GROUP_RECORDS,
  FrameDecoder,
  decodeCacheAnswer,
  decodeGroupAcked,
  decodeGroupRecords,
  decodeMessage,
  decodePublishAck,
  encodeMessage,
  frameLayout,
} from '@felix/wire';
import { RawAuthRefusedError } from './errors.js';

export interface RawSession {
  stream: TransportStream;
  /** The next decoded answer, or null once the broker ended the stream. */
  next(): Promise<unknown | null>;
}

function decodeAnswer(flags: number, payload: Uint8Array): unknown {
  if (flags === FLAG_BINARY_GROUP_RECORDS)
    return { ...decodeGroupRecords(flags, payload), binary: true };
  if (flags === FLAG_BINARY_CACHE) return { ...decodeCacheAnswer(payload, ''), binary: true };
  if (flags === FLAG_BINARY_GROUP) return { ...decodeGroupAcked(payload), binary: true };
  if (frameLayout(flags) === 'publish_ack')
    return { type: 'binary_publish_ack', ...decodePublishAck(flags, payload) };
  return decodeMessage(payload);
}

/** The tenant and token a raw stream authenticates with (t1 and an empty token by default). */
export interface RawCredentials {
  tenant: string;
  token: string;
}

export async function rawAuthed(
  conn: Connection,
  clientFeatures: number,
  clientFeaturesHi?: number,
  clientFlags = 0x1fff,
  credentials: RawCredentials = { tenant: 't1', token: '' },
): Promise<RawSession> {
  const stream = await conn.openBidi();
  const decoder = new FrameDecoder();
  const it = stream[Symbol.asyncIterator]();
  const queue: unknown[] = [];
  const next = async () => {
    while (queue.length === 0) {
      const r = await it.next();
      if (r.done) return null;
      for (const f of decoder.push(r.value)) queue.push(decodeAnswer(f.flags, f.payload));
    }
    return queue.shift();
  };
  await stream.write(
    encodeMessage({
      type: 'auth',
      tenant_id: credentials.tenant,
      token: credentials.token,
      client_flags: clientFlags,
      client_features: clientFeatures,
      ...(clientFeaturesHi !== undefined ? { client_features_hi: clientFeaturesHi } : {}),
    }),
  );
  const answer = await next();
  if ((answer as { type?: string } | null)?.type !== 'auth_ok')
    throw new RawAuthRefusedError(
      `auth answered with ${(answer as { type?: string } | null)?.type ?? 'an ended stream'}`,
    );
  return { stream, next };
}
