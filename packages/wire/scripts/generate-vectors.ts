// Writes the package's generated vectors (one per JSON message type, binary layout and
// modifier, and some internal kinds) from test/samples.ts. The reference's named vectors
// are hand-derived and never touched here. Run: pnpm exec tsx packages/wire/scripts/generate-vectors.ts
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  batchChecksum,
  decodeFrame,
  encodeEventBatch,
  encodeGroupRecordsFrame,
  encodeInternalMessage,
  encodeMessage,
  encodePublishAck,
  encodePublishBatch,
  messageJson,
} from '../src/index.js';
import {
  cacheFrameFromFields,
  groupFrameFromFields,
  eventBatchToFields,
  groupRecordsToFields,
  internalToJson,
  publishAckToFields,
  publishBatchToFields,
} from '../src/vectors/fields.js';
import { toHex } from '../src/vectors/hex.js';
import {
  CACHE_FRAME_SAMPLES,
  GROUP_FRAME_SAMPLES,
  EVENT_BATCH_SAMPLES,
  GROUP_RECORDS_SAMPLES,
  INTERNAL_MESSAGE_SAMPLES,
  MESSAGE_SAMPLES,
  PUBLISH_ACK_SAMPLES,
  PUBLISH_BATCH_SAMPLES,
} from '../test/samples.js';

const dir = join(import.meta.dirname, '..', 'vectors');

function write(vector: Record<string, unknown>, frame: Uint8Array): void {
  const name = String(vector.name);
  const { flags, payload } = decodeFrame(frame);
  const full = { ...vector, flags, payload_hex: toHex(payload), frame_hex: toHex(frame) };
  if (flags === 0) delete (full as Record<string, unknown>).flags;
  writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(full, null, 2)}\n`);
  writeFileSync(join(dir, `${name}.hex`), toHex(frame));
}

for (const message of MESSAGE_SAMPLES) {
  write(
    { name: `msg_${message.type}`, payload_json: messageJson(message) },
    encodeMessage(message),
  );
}
for (const [name, batch] of Object.entries(PUBLISH_BATCH_SAMPLES)) {
  const kind =
    batch.producerId !== undefined
      ? 'binary_idempotent_publish_batch'
      : batch.requestId !== undefined
        ? 'binary_acked_publish_batch'
        : 'binary_publish_batch';
  write({ name, kind, ...publishBatchToFields(batch) }, encodePublishBatch(batch));
}
for (const [name, ack] of Object.entries(PUBLISH_ACK_SAMPLES)) {
  write({ name, kind: 'binary_publish_ack', ...publishAckToFields(ack) }, encodePublishAck(ack));
}
for (const [name, batch] of Object.entries(EVENT_BATCH_SAMPLES)) {
  write(
    { name, kind: 'binary_event_batch', ...eventBatchToFields(batch) },
    encodeEventBatch(batch),
  );
}
for (const [name, message] of Object.entries(GROUP_RECORDS_SAMPLES)) {
  write(
    { name, kind: 'binary_group_records', ...groupRecordsToFields(message) },
    encodeGroupRecordsFrame(message),
  );
}
for (const [name, fields] of Object.entries(CACHE_FRAME_SAMPLES)) {
  write({ name, kind: 'binary_cache', ...fields }, cacheFrameFromFields(fields));
}
for (const [name, fields] of Object.entries(GROUP_FRAME_SAMPLES)) {
  write({ name, kind: 'binary_group', ...fields }, groupFrameFromFields(fields));
}
for (const [name, sample] of Object.entries(INTERNAL_MESSAGE_SAMPLES)) {
  const message =
    sample.kind === 'ReplicateRecords'
      ? { ...sample, checksum: batchChecksum(sample.payloads) }
      : sample;
  const frame = encodeInternalMessage(message);
  const vector = { name, kind: 'internal_message', message: internalToJson(message) };
  const body = frame.subarray(12);
  writeFileSync(
    join(dir, `${name}.json`),
    `${JSON.stringify({ ...vector, payload_hex: toHex(body), frame_hex: toHex(frame) }, null, 2)}\n`,
  );
  writeFileSync(join(dir, `${name}.hex`), toHex(frame));
}
console.log('vectors written to', dir);
