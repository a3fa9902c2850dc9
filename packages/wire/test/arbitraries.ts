// fast-check arbitraries for wire values. JSON messages are generated from the codec's own
// field table, so a new message type is covered by the round-trip property automatically.
import fc from 'fast-check';
import type {
  EventBatch,
  GroupRecordsMessage,
  InternalMessage,
  Message,
  PublishAck,
  PublishBatch,
} from '../src/index.js';
import { type FieldSpec, type Kind, MESSAGE_SPECS } from '../src/json/message-specs.js';

const text = fc.string({ unit: 'grapheme', maxLength: 12 });
/** Strings that may hold a lone surrogate (a high or low one alone: a pair's half), for the
 *  encoders' refusal. */
export function withLoneSurrogates(str: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const lone = fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff');
  return fc.oneof(
    str,
    fc.tuple(str, lone, str).map(([a, s, b]) => `${a}${s}${b}`),
  );
}
const safe = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const bytes = fc.uint8Array({ maxLength: 24 });
const rawJsonOf = (str: fc.Arbitrary<string>): fc.Arbitrary<unknown> =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      str,
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 5 }), tie('value'), { maxKeys: 3 }),
    ),
  })).value;

function kindArb(kind: Kind, str: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  if (typeof kind === 'object') {
    if ('enum' in kind) return fc.constantFrom(...kind.enum);
    if ('obj' in kind) return fieldsArb(kind.obj, str);
    return fc.array(fieldsArb(kind.list, str), { maxLength: 3 });
  }
  switch (kind) {
    case 'str':
      return str;
    case 'u16':
      return fc.integer({ min: 0, max: 0xffff });
    case 'u32':
      return fc.integer({ min: 0, max: 0xffff_ffff });
    case 'u64':
      return safe;
    case 'u64_big':
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case 'i64':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case 'bool':
      return fc.boolean();
    case 'bytes':
      return bytes;
    case 'bytes_list':
      return fc.array(bytes, { maxLength: 4 });
    case 'u64_list':
      return fc.array(safe, { maxLength: 4 });
    case 'u16_list':
      return fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 4 });
    case 'u32_list':
      return fc.array(fc.integer({ min: 0, max: 0xffff_ffff }), { maxLength: 4 });
    case 'start':
      return fc.oneof(
        fc.constantFrom('latest', 'earliest'),
        safe.map((offset) => ({ offset })),
      );
    case 'refusal':
      return fc.oneof(
        fc.constantFrom('unknown_producer', 'sequence_expired', 'sequence_reused'),
        safe.map((expected) => ({ sequence_gap: { expected } })),
        safe.map((tail) => ({ offset_mismatch: { tail } })),
        fieldsArb(
          [
            ['node_id', 'str', 'req'],
            ['addr', 'str', 'opt'],
            ['generation', 'u64', 'opt'],
          ],
          str,
        ).map((not_leader) => ({ not_leader })),
      );
    case 'raw':
      return rawJsonOf(str).filter((v) => v !== null);
  }
}

function fieldsArb(
  spec: FieldSpec[],
  str: fc.Arbitrary<string>,
): fc.Arbitrary<Record<string, unknown>> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, kind, presence] of spec) {
    const value = kindArb(kind, str);
    const optional = presence === 'opt' || presence === 'null';
    model[name] = optional ? fc.option(value, { nil: undefined }) : value;
  }
  return fc.record(model).map((r) => {
    for (const key of Object.keys(r)) if (r[key] === undefined) delete r[key];
    return r;
  });
}

/** Every message type, its string fields drawn from `str`. */
export const messageArbOf = (str: fc.Arbitrary<string>): fc.Arbitrary<Message> =>
  fc.oneof(
    ...Object.entries(MESSAGE_SPECS).map(([type, spec]) =>
      fieldsArb(spec, str).map((fields) => ({ type, ...fields }) as unknown as Message),
    ),
  );
export const messageArb = messageArbOf(text);

export const publishBatchArbOf = (str: fc.Arbitrary<string>): fc.Arbitrary<PublishBatch> =>
  fc
    .record({
      tenantId: str,
      namespace: str,
      stream: str,
      payloads: fc.array(bytes, { maxLength: 5 }),
      key: fc.option(bytes, { nil: undefined }),
      acked: fc.option(
        fc.record({ requestId: safe, ackMode: fc.constantFrom('per_message', 'per_batch') }),
        { nil: undefined },
      ),
      idempotent: fc.option(
        fc.record({ producerId: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), sequence: safe }),
        { nil: undefined },
      ),
    })
    .map(({ acked, idempotent, key, ...rest }) => {
      const batch: PublishBatch = { ...rest };
      if (key !== undefined) batch.key = key;
      if (idempotent)
        Object.assign(batch, idempotent, {
          requestId: acked?.requestId ?? 1,
          ackMode: 'per_batch',
        });
      else if (acked) Object.assign(batch, acked);
      return batch;
    });

export const publishBatchArb = publishBatchArbOf(text);

export const publishAckArbOf = (str: fc.Arbitrary<string>): fc.Arbitrary<PublishAck> =>
  fc
    .record({
      error: fc.boolean(),
      requestId: safe,
      message: str,
      owner: fc.option(
        fc.record({
          nodeId: str,
          addr: fc.option(
            str.filter((s) => s !== ''),
            { nil: undefined },
          ),
          generation: safe,
        }),
        { nil: undefined },
      ),
      code: fc.option(
        fc.record({
          code: fc.integer({ min: 0, max: 0xffff }),
          retry: fc.integer({ min: 0, max: 255 }),
          detail: fc.option(fc.record({ reason: str, retryAfterMs: safe }), { nil: undefined }),
        }),
        { nil: undefined },
      ),
      offset: fc.option(safe, { nil: undefined }),
    })
    .map(({ error, requestId, message, owner, code, offset }) => {
      const ack: PublishAck = { status: error ? 'error' : 'ok', requestId, message };
      if (owner) {
        ack.owner = { nodeId: owner.nodeId, generation: owner.generation };
        if (owner.addr !== undefined) ack.owner.addr = owner.addr;
      }
      if (error && code) {
        ack.code = code.code;
        ack.retry = code.retry;
        if (code.detail) Object.assign(ack, code.detail);
      }
      if (!error && offset !== undefined) ack.offset = offset;
      return ack;
    });

export const publishAckArb = publishAckArbOf(text);

export const eventBatchArbOf = (publisher: fc.Arbitrary<string>): fc.Arbitrary<EventBatch> =>
  fc
    .record({
      subscriptionId: fc.option(safe, { nil: undefined }),
      baseOffset: fc.option(safe, { nil: undefined }),
      skippedBefore: fc.option(safe, { nil: undefined }),
      publisher: fc.option(publisher, { nil: undefined }),
      timed: fc.boolean(),
      payloads: fc.array(bytes, { maxLength: 5 }),
      stamp: safe,
    })
    .map(({ timed, stamp, ...r }) => {
      const batch: EventBatch = { payloads: r.payloads };
      if (r.subscriptionId !== undefined) batch.subscriptionId = r.subscriptionId;
      if (r.baseOffset !== undefined) {
        batch.baseOffset = r.baseOffset;
        if (r.skippedBefore !== undefined) batch.skippedBefore = r.skippedBefore;
      }
      if (r.publisher !== undefined) batch.publisher = r.publisher;
      if (timed) batch.timestampsMicros = r.payloads.map((_, i) => Math.max(0, stamp - i));
      return batch;
    });

export const eventBatchArb = eventBatchArbOf(fc.string({ maxLength: 40 }));

/** Every internal message, its identifiers drawn from `ident`. */
export function internalMessageArbOf(ident: fc.Arbitrary<string>): fc.Arbitrary<InternalMessage> {
  const shardRef = fc.record({
    tenantId: ident,
    namespace: ident,
    stream: ident,
    shard: fc.integer({ min: 0, max: 0xffff_ffff }),
    generation: safe,
  });
  return fc.oneof(
    fc.record({
      kind: fc.constant('ForwardPublish' as const),
      correlationId: safe,
      shard: shardRef,
      ack: fc.integer({ min: 0, max: 2 }),
      payloads: fc.array(bytes, { maxLength: 4 }),
    }),
    fc.record({
      kind: fc.constant('AuthorizedForwardCacheOp' as const),
      correlationId: safe,
      shard: shardRef,
      op: fc.integer({ min: 1, max: 5 }),
      key: ident,
      ttlMs: safe,
      value: bytes,
      credential: fc.uint8Array({ minLength: 1, maxLength: 16 }),
    }),
    fc.record({
      kind: fc.constantFrom('ReplicateRecords' as const, 'ReplicateCounterRecords' as const),
      correlationId: safe,
      shard: shardRef,
      firstOffset: safe,
      checksum: fc.integer({ min: 0, max: 0xffff_ffff }),
      payloads: fc.array(bytes, { maxLength: 4 }),
    }),
    fc.record({
      kind: fc.constant('ReplicateCommittedRecords' as const),
      correlationId: safe,
      shard: shardRef,
      firstOffset: safe,
      checksum: fc.integer({ min: 0, max: 0xffff_ffff }),
      commitOffset: safe,
      payloads: fc.array(bytes, { maxLength: 4 }),
    }),
    fc.record({
      kind: fc.constant('ReplicateError' as const),
      correlationId: safe,
      code: fc.integer({ min: 0, max: 0xffff }),
      expectedOffset: safe,
      detail: ident,
    }),
    fc.record({
      kind: fc.constant('HelloCapable' as const),
      correlationId: safe,
      nodeId: ident,
      capabilities: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    }),
    fc.record({
      kind: fc.constant('ReplicateFetch' as const),
      correlationId: safe,
      shard: shardRef,
      log: fc.integer({ min: 1, max: 5 }),
      fromOffset: safe,
      maxBytes: fc.integer({ min: 0, max: 0xffff_ffff }),
    }),
    fc.record({
      kind: fc.constant('ReplicateTrim' as const),
      correlationId: safe,
      shard: shardRef,
      log: fc.integer({ min: 1, max: 5 }),
      baseOffset: safe,
    }),
    fc.record({
      kind: fc.constant('FenceOk' as const),
      correlationId: safe,
      logEnd: safe,
      commitOffset: safe,
      lastGeneration: safe,
    }),
  );
}
export const internalMessageArb = internalMessageArbOf(fc.string({ maxLength: 16 }));

/** Binary `group_records` answers: only what the 0x8000 layout carries. */
export const groupRecordsArb: fc.Arbitrary<GroupRecordsMessage> = fc
  .record({
    request_id: safe,
    records: fc.array(
      fc.record({
        offset: safe,
        payload: bytes,
        attempts: fc.integer({ min: 0, max: 0xffff_ffff }),
        skipped_before: fc.constant(0),
      }),
      { maxLength: 6 },
    ),
  })
  .map((m) => ({ type: 'group_records' as const, ...m }));
