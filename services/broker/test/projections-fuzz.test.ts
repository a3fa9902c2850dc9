// Goal: no cache, counter, watch or group request a client can send, however absurd its
// fields, crashes the broker or corrupts what it serves. Method: fast-check generates
// well-framed requests of every projection type with hostile values (empty and huge keys,
// offsets up to 2^53-1, zero and huge counts, unknown names, wrong tenants, extreme deltas);
// each goes to a real broker on a fresh stream, must be answered with exactly one frame of an
// expected type (or end the stream), and afterwards known values still read back correctly.
import { connect } from '@felix/client';
import { dial } from '@felix/transport';
import {
  FEATURE_EXTENDED,
  FEATURE_HI_GROUP_NACK_BATCH,
  FrameDecoder,
  type Message,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { durableBrokerForSuite } from '@felix/testing-e2e';

const YAML = `
streams:
  - { tenant: t1, name: jobs, durable: true, fsync: none }
  - { tenant: t1, name: mem }
caches:
  - { tenant: t1, name: users, shards: 3 }
`;

const ANSWERS = new Set([
  'error',
  'ok',
  'cache_ok',
  'cache_value',
  'counter_value',
  'cache_watch_started',
  'subscribe_cursor_error',
  'group_records',
  'group_extended',
  'group_nacked',
  'group_dead_letter_list',
  'group_position',
  'group_info',
  'group_deleted',
]);

const name = fc.oneof(
  fc.constantFrom('users', 'jobs', 'mem', 'nope', ''),
  fc.string({ maxLength: 20 }),
);
const key = fc.oneof(
  fc.constantFrom('', 'k', 'u1'),
  fc.string({ maxLength: 40 }),
  fc.string({ minLength: 1100, maxLength: 1200 }),
);
const offset = fc.oneof(fc.constantFrom(0, 1, 2 ** 53 - 1), fc.nat({ max: 100 }));
const tenant = fc.constantFrom('t1', 't1', 't1', 'other');
const small = fc.oneof(fc.constantFrom(0, 1, 2 ** 32 - 1), fc.nat({ max: 2000 }));

const request: fc.Arbitrary<Message> = fc.oneof(
  fc
    .record({
      tenant,
      cache: name,
      key,
      value: fc.uint8Array({ maxLength: 64 }),
      ttl: fc.option(small, { nil: undefined }),
    })
    .map(
      (r): Message => ({
        type: 'cache_put',
        tenant_id: r.tenant,
        namespace: 'default',
        cache: r.cache,
        key: r.key,
        value: r.value,
        request_id: 1,
        ...(r.ttl !== undefined ? { ttl_ms: r.ttl } : {}),
      }),
    ),
  fc.record({ tenant, cache: name, key, del: fc.boolean() }).map(
    (r): Message => ({
      type: r.del ? 'cache_delete' : 'cache_get',
      tenant_id: r.tenant,
      namespace: 'default',
      cache: r.cache,
      key: r.key,
      request_id: 2,
    }),
  ),
  fc
    .record({
      tenant,
      cache: name,
      key,
      delta: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      get: fc.boolean(),
    })
    .map(
      (r): Message =>
        r.get
          ? {
              type: 'counter_get',
              tenant_id: r.tenant,
              namespace: 'default',
              cache: r.cache,
              key: r.key,
              request_id: 3,
            }
          : {
              type: 'counter_add',
              tenant_id: r.tenant,
              namespace: 'default',
              cache: r.cache,
              key: r.key,
              delta: r.delta,
              request_id: 3,
            },
    ),
  fc
    .record({
      tenant,
      cache: name,
      key: fc.option(key, { nil: undefined }),
      prefix: fc.option(fc.string({ maxLength: 5 }), { nil: undefined }),
      shard: fc.option(small, { nil: undefined }),
      from: fc.option(offset, { nil: undefined }),
      retained: fc.boolean(),
    })
    .map(
      (r): Message => ({
        type: 'cache_watch',
        tenant_id: r.tenant,
        namespace: 'default',
        cache: r.cache,
        ...(r.key !== undefined ? { key: r.key } : {}),
        ...(r.prefix !== undefined ? { prefix: r.prefix } : {}),
        ...(r.shard !== undefined ? { shard: r.shard } : {}),
        ...(r.from !== undefined ? { from_offset: r.from } : {}),
        retained: r.retained,
      }),
    ),
  fc
    .record({
      tenant,
      stream: name,
      shard: fc.oneof(fc.constant(0), small),
      group: fc.oneof(fc.constantFrom('g', '', 'a\u001Fb'), fc.string({ maxLength: 300 })),
      kind: fc.constantFrom(
        'group_poll',
        'group_ack',
        'group_nack',
        'group_nack_batch',
        'group_extend',
        'group_dead_letter',
        'group_dead_letters',
        'group_discard',
        'group_redrive',
        'group_seek',
        'group_describe',
        'group_delete',
      ),
      offset,
      n: small,
      offsets: fc.oneof(
        fc.array(offset, { maxLength: 4 }),
        fc.constant(Array.from({ length: 1001 }, (_, i) => i)),
      ),
      start: fc.oneof(
        fc.constantFrom('earliest' as const, 'latest' as const),
        offset.map((o) => ({ offset: o })),
      ),
    })
    .map((r): Message => {
      const scope = {
        tenant_id: r.tenant,
        namespace: 'default',
        stream: r.stream,
        shard: r.shard,
        group: r.group,
        request_id: 4,
      };
      switch (r.kind) {
        case 'group_poll':
          return {
            type: 'group_poll',
            ...scope,
            max_records: r.n,
            wait_ms: 0,
            reclaim: false,
            ...(r.n % 2 ? { visibility_ms: r.n } : {}),
          };
        case 'group_nack':
          return {
            type: 'group_nack',
            ...scope,
            offset: r.offset,
            ...(r.n % 2 ? { delay_ms: r.n, attempts: r.n } : {}),
          };
        case 'group_nack_batch':
          return {
            type: 'group_nack_batch',
            ...scope,
            offsets: r.offsets,
            ...(r.n % 2
              ? { delay_ms: r.n, attempts: r.offsets.slice(r.n % 3).map(() => r.n) }
              : {}),
          };
        case 'group_extend':
          return {
            type: 'group_extend',
            ...scope,
            offset: r.offset,
            attempts: r.n,
            extend_ms: r.n,
          };
        case 'group_seek':
          return { type: 'group_seek', ...scope, start: r.start, if_new: r.n % 2 === 0 };
        case 'group_dead_letters':
        case 'group_describe':
        case 'group_delete':
          return { type: r.kind, ...scope };
        default:
          return { type: r.kind, ...scope, offset: r.offset } as Message;
      }
    }),
);

describe('projection requests under fuzzing', () => {
  const suite = durableBrokerForSuite(YAML);

  it('hostile_projection_requests_get_answers_and_never_crash_the_broker', async () => {
    const felix = await connect({
      servers: [suite.broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: suite.broker.fingerprint },
    });
    await felix.cache('users').put('anchor', 'kept');
    await felix.counter('users').add('anchor', 7n);
    for (let i = 0; i < 5; i++) await felix.publish('jobs', `j${i}`);
    const conn = await dial(suite.broker.url('tls'), { fingerprint: suite.broker.fingerprint });
    const auth = encodeMessage({
      type: 'auth',
      tenant_id: 't1',
      token: '',
      client_flags: 0x1fff,
      client_features: (0x0fff_ffff | FEATURE_EXTENDED) >>> 0,
      client_features_hi: FEATURE_HI_GROUP_NACK_BATCH,
    });
    await fc.assert(
      fc.asyncProperty(request, async (msg) => {
        const stream = await conn.openBidi();
        await stream.write(auth);
        await stream.write(encodeMessage(msg));
        await stream.end();
        const decoder = new FrameDecoder();
        const answers: string[] = [];
        for await (const chunk of stream) {
          for (const f of decoder.push(chunk)) answers.push(decodeMessage(f.payload).type);
        }
        expect(answers[0]).toBe('auth_ok');
        // Exactly one answer to the request (a watch's events go on another stream).
        expect(answers.length).toBe(2);
        expect(ANSWERS.has(answers[1]!), answers[1]).toBe(true);
      }),
      { numRuns: 150 },
    );
    await conn.close();
    // Still serving, and nothing it held was disturbed by what it refused.
    expect(new TextDecoder().decode(await felix.cache('users').get('anchor'))).toBe('kept');
    expect(await felix.counter('users').get('anchor')).toBe(7n);
    expect((await felix.publish('jobs', 'after')).offset).toBeGreaterThanOrEqual(5);
    expect((await fetch(`http://127.0.0.1:${suite.broker.httpPort}/live`)).status).toBe(200);
    await felix.close();
  });
});
