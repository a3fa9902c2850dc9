// Goal: the binary cache exchange (flag word 0x8001, FEATURE_HI_CACHE_BINARY) is used only when
// negotiated: a client that offered the bit gets binary answers to its gets and puts, whichever
// form they came in, with the same values the JSON path answers; a client that did not gets JSON
// and a binary request from it ends its stream with a typed refusal. Method: a real broker, in
// memory and durable; raw request streams that offer the bit or not write both forms.
import { tempDir } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import {
  FEATURE_HI_CACHE_BINARY,
  type Message,
  cacheScopeBytes,
  encodeCacheGet,
  encodeCachePut,
  encodeMessage,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, rawAuthed, startBroker } from '@felix/testing-e2e';

const YAML = `
caches:
  - { tenant: t1, name: users }
`;

const UTF8 = new TextEncoder();
const scope = { tenant_id: 't1', namespace: 'default', cache: 'users' };
const bin = cacheScopeBytes('t1', 'default', 'users');
const FEATURES = 0x8fff_ffff; // every low bit this broker may offer, and the `_hi` marker

describe.each([false, true])('binary cache exchange (durable: %s)', (durable) => {
  let broker: BrokerProcess;
  let conn: Connection;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path, durable });
    conn = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
  });
  afterAll(async () => {
    await conn?.close();
    await broker?.stop();
    await cleanup?.();
  });

  it('a_client_that_negotiated_binary_cache_gets_binary_answers_to_either_form', async () => {
    const { stream, next } = await rawAuthed(conn, FEATURES, FEATURE_HI_CACHE_BINARY);
    const value = Uint8Array.from({ length: 1024 }, (_, i) => (i * 31) & 0xff);
    await stream.write(encodeCachePut(bin, 'k', value, 1));
    expect(await next()).toStrictEqual({ type: 'cache_ok', request_id: 1, binary: true });
    // Read twice: the first get may come from the shard, the second from the hot values.
    for (const rid of [2, 3]) {
      await stream.write(encodeCacheGet(bin, 'k', rid));
      expect(await next()).toStrictEqual({
        type: 'cache_value',
        key: '',
        value,
        request_id: rid,
        binary: true,
      });
    }
    // A JSON get on the same stream is answered in binary too: the answer follows negotiation.
    await stream.write(encodeMessage({ type: 'cache_get', ...scope, key: 'k', request_id: 4 }));
    expect(await next()).toMatchObject({ type: 'cache_value', value, request_id: 4, binary: true });
    await stream.write(encodeCacheGet(bin, 'absent', 5));
    expect(await next()).toStrictEqual({
      type: 'cache_value',
      key: '',
      request_id: 5,
      binary: true,
    });
    // A refusal stays a JSON error, and a request without an id gets the JSON answer.
    await stream.write(encodeCacheGet(cacheScopeBytes('t1', 'default', 'ghost'), 'k', 6));
    expect(await next()).toMatchObject({ type: 'error', code: 'not_found' });
    await stream.write(encodeMessage({ type: 'cache_get', ...scope, key: 'k' }));
    expect(await next()).toMatchObject({ type: 'cache_value', key: 'k', value });
    expect(await Promise.all([next(), stream.end()])).toEqual([null, undefined]);
  });

  it('a_client_that_did_not_negotiate_binary_cache_gets_json_and_its_binary_request_is_refused', async () => {
    const { stream, next } = await rawAuthed(conn, FEATURES);
    const value = UTF8.encode('v');
    await stream.write(
      encodeMessage({ type: 'cache_put', ...scope, key: 'j', value, request_id: 1 }),
    );
    expect(await next()).toStrictEqual({ type: 'cache_ok', request_id: 1 });
    const get: Message = { type: 'cache_get', ...scope, key: 'j', request_id: 2 };
    for (let i = 0; i < 2; i++) {
      await stream.write(encodeMessage(get));
      expect(await next()).toStrictEqual({
        ...scope,
        type: 'cache_value',
        key: 'j',
        value,
        request_id: 2,
      });
    }
    await stream.write(encodeCacheGet(bin, 'j', 3));
    expect(await next()).toMatchObject({
      type: 'error',
      message: 'binary cache frames were not negotiated',
      code: 'invalid_request',
    });
    expect(await next()).toBeNull();
  });
});
