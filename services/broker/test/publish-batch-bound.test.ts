// Goal: one publish frame cannot make the broker build millions of records. A frame within
// `broker.max_frame_bytes` (16 MiB) could carry 4 million empty records (binary: 4 bytes each)
// or 5 million (JSON: `""` each); the broker materialised every one of them (over 1 GiB of RSS
// and 20 s of a blocked event loop for one frame, measured on a 2-core machine), so the bound on
// records per batch (PUBLISH_BATCH_RECORDS_MAX) must hold on both encodings.
// Method: a real broker per transport, raw streams writing batches one record over the bound
// (and exactly at it), reading the answers.
import { rawAuthed, startBroker, type BrokerProcess } from '@felix/testing-e2e';
import { tempDir, withDeadline } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import {
  FEATURE_ERROR_CODES,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  PUBLISH_BATCH_RECORDS_MAX,
  encodeFrame,
  encodePublishBatch,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const YAML = `
streams:
  - { tenant: t1, name: log, durable: true, fsync: periodic }
`;

/** A binary batch of `n` empty records, acked per batch. */
function binaryBatch(n: number, requestId: number): Uint8Array {
  return encodePublishBatch({
    tenantId: 't1',
    namespace: 'default',
    stream: 'log',
    payloads: new Array<Uint8Array>(n).fill(new Uint8Array(0)),
    requestId,
    ackMode: 'per_batch',
  });
}

/** A JSON publish_batch of `n` empty records. */
function jsonBatch(n: number, requestId: number): Uint8Array {
  const payloads = `${'"",'.repeat(n - 1)}""`;
  const text = `{"type":"publish_batch","tenant_id":"t1","namespace":"default","stream":"log","payloads":[${payloads}],"request_id":${requestId},"ack":"per_batch"}`;
  return encodeFrame(0, new TextEncoder().encode(text));
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`publish batch bound over ${transport}`, () => {
    let broker: BrokerProcess;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    });
    afterAll(async () => {
      await broker?.stop();
      await cleanup?.();
    });

    it('a_publish_batch_of_more_records_than_the_bound_is_refused_on_both_encodings', async () => {
      const conn = await dial(broker.url(transport), { fingerprint: broker.fingerprint });
      // Acks carry the error code, not the offset (a failed ack has none).
      const flags = 0x1fff & ~FLAG_BINARY_PUBLISH_ACK_OFFSET;
      const raw = await rawAuthed(conn, FEATURE_ERROR_CODES, undefined, flags);
      // Binary: one over the bound is answered as a failed publish; the stream serves on.
      await raw.stream.write(binaryBatch(PUBLISH_BATCH_RECORDS_MAX + 1, 1));
      const over = await withDeadline(raw.next(), 20_000, 'the answer to the oversized batch');
      expect(over).toMatchObject({ type: 'binary_publish_ack', status: 'error', requestId: 1 });
      expect((over as { code: number }).code).toBe(11); // limit_exceeded
      await raw.stream.write(binaryBatch(PUBLISH_BATCH_RECORDS_MAX, 2));
      expect(await withDeadline(raw.next(), 20_000, 'the answer at the bound')).toMatchObject({
        type: 'binary_publish_ack',
        status: 'ok',
        requestId: 2,
      });
      // JSON: one over the bound is refused before its records are decoded.
      await raw.stream.write(jsonBatch(PUBLISH_BATCH_RECORDS_MAX + 1, 3));
      expect(await withDeadline(raw.next(), 20_000, 'the JSON refusal')).toMatchObject({
        type: 'error',
        code: 'invalid_request',
      });
      raw.stream.reset(0);
      // The connection and the broker carry on.
      const again = await rawAuthed(conn, FEATURE_ERROR_CODES);
      await again.stream.write(jsonBatch(2, 4));
      expect(await withDeadline(again.next(), 20_000, 'a small JSON batch')).toMatchObject({
        type: 'publish_ok',
        request_id: 4,
      });
      again.stream.reset(0);
      await conn.close();
    });
  });
}
