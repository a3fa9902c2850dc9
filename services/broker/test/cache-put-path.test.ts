// Goal: the session's quick read of a `cache_put` in the client's exact form stores and answers
// exactly what the general path does, shares a stream with the quick get (each request read by
// its own reader, whatever came before), and leaves every malformed put to the general
// decoder's typed errors. Method: a real broker, in memory and durable; raw request streams write each put in the
// client's form (the quick encoder's bytes) and in a form only the general decoder takes (a
// space after the opening brace), read the value back with gets in both forms, and write
// malformed puts; answers are decoded and compared.
import { tempDir } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import {
  type Message,
  decodeMessage,
  encodeFrame,
  encodeMessage,
  encodePutRequest,
  putRequestPrefix,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, rawAuthed, startBroker } from '@felix/testing-e2e';

const YAML = `
caches:
  - { tenant: t1, name: users }
  - { tenant: t1, name: sharded, shards: 3 }
`;

const UTF8 = new TextEncoder();
const scope = { tenant_id: 't1', namespace: 'default' };
type Put = Extract<Message, { type: 'cache_put' }>;

/** A request's frame in the general decoder's form only: a space after `{`. */
function generalForm(msg: Message): Uint8Array {
  const text = new TextDecoder().decode(encodeMessage(msg).subarray(12));
  return encodeFrame(0, UTF8.encode(`{ ${text.slice(1)}`));
}

function clientForm(m: Put): Uint8Array {
  const prefix = putRequestPrefix(m.tenant_id, m.namespace, m.cache);
  return encodePutRequest(prefix, m, m.key, m.value, m.request_id!, m.ttl_ms);
}

describe.each([false, true])('cache put path (durable: %s)', (durable) => {
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

  it('a_put_in_the_clients_form_stores_and_answers_what_the_general_path_does', async () => {
    const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
    const value = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 0xff);
    const puts: Put[] = [
      { type: 'cache_put', ...scope, cache: 'users', key: 'k', value: value(1024) },
      { type: 'cache_put', ...scope, cache: 'users', key: 'ключ 😀', value: value(2) },
      { type: 'cache_put', ...scope, cache: 'users', key: 'q"uote', value: value(0) },
      { type: 'cache_put', ...scope, cache: 'sharded', key: 'a', value: value(1), ttl_ms: 60_000 },
      { type: 'cache_put', ...scope, cache: 'users', key: 'gone', value: value(3), ttl_ms: 0 },
      { type: 'cache_put', ...scope, cache: 'ghost', key: 'k', value: value(3) },
      { type: 'cache_put', ...scope, cache: 'users', key: '', value: value(3) },
      { type: 'cache_put', ...scope, cache: 'users', key: 'x'.repeat(1025), value: value(3) },
      {
        type: 'cache_put',
        tenant_id: 't2',
        namespace: 'default',
        cache: 'users',
        key: 'k',
        value: value(3),
      },
    ];
    let rid = 1;
    for (const put of puts) {
      const answers: unknown[] = [];
      const values: unknown[] = [];
      for (const form of ['client', 'general', 'client'] as const) {
        const m: Put = { ...put, request_id: rid };
        await stream.write(form === 'client' ? clientForm(m) : generalForm(m));
        const answer = (await next()) as Message;
        answers.push(answer.type === 'cache_ok' ? { ...answer, request_id: 0 } : answer);
        // The value as a get in the client's form reads it (the quick get reader after a put).
        const get = {
          type: 'cache_get',
          ...scope,
          cache: put.cache,
          key: put.key,
          request_id: rid + 1,
        };
        await stream.write(encodeMessage(get as Message));
        values.push(await next());
        rid += 2;
      }
      const what = JSON.stringify({ ...put, value: put.value.length });
      for (const a of answers.slice(1)) expect(a, what).toStrictEqual(answers[0]);
      for (const v of values.slice(1)) {
        expect({ ...(v as object), request_id: 0 }, what).toStrictEqual({
          ...(values[0] as object),
          request_id: 0,
        });
      }
    }
    expect(await Promise.all([next(), stream.end()])).toEqual([null, undefined]);
  });

  it('a_malformed_cache_put_gets_the_general_decoders_typed_error', async () => {
    const open =
      '{"type":"cache_put","tenant_id":"t1","namespace":"default","cache":"users","key":"k"';
    for (const text of [
      `${open},"value":"AQJ=","request_id":1,"ttl_ms":null}`,
      `${open},"value":"AQI","request_id":1,"ttl_ms":null}`,
      `${open},"value":"AQ-_","request_id":1,"ttl_ms":null}`,
      `${open},"value":null,"request_id":1,"ttl_ms":null}`,
      `${open},"value":"AQI=","request_id":1,"ttl_ms":-1}`,
      `${open},"value":"AQI=","request_id":1.5,"ttl_ms":null}`,
      `${open},"value":"AQI=","request_id":1,"ttl_ms":null`,
    ]) {
      const payload = UTF8.encode(text);
      let message = '';
      try {
        decodeMessage(payload);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, text).not.toBe('');
      const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
      await stream.write(encodeFrame(0, payload));
      expect(await next(), text).toStrictEqual({
        type: 'error',
        message,
        code: 'invalid_request',
        retry: 'fatal',
      });
      // A frame the broker cannot decode ends its stream.
      expect(await next(), text).toBeNull();
    }
  });
});
