// Goal: the session's quick path for a `cache_get` in the client's exact form (read without the
// general decoder, a hot key answered in the turn its frame arrived) answers exactly what the
// general path answers, keeps answers in request order behind slower requests on the same
// stream, and leaves every malformed request to the general decoder's typed errors. Method: a
// real broker; raw request streams write each get in the client's form and in a form only the
// general decoder takes (a space after the opening brace), several requests in one write, and
// malformed gets; answers are decoded and compared.
import { tempDir } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import { type Message, decodeMessage, encodeFrame, encodeMessage } from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, rawAuthed, startBroker } from '@felix/testing-e2e';

const YAML = `
caches:
  - { tenant: t1, name: users }
  - { tenant: t1, name: sharded, shards: 3 }
`;

const UTF8 = new TextEncoder();
const scope = { tenant_id: 't1', namespace: 'default' };

/** A get's frame: the client's exact form, or the same JSON with a space after `{`. */
function getFrame(msg: Message, form: 'client' | 'general'): Uint8Array {
  const frame = encodeMessage(msg);
  if (form === 'client') return frame;
  const text = new TextDecoder().decode(frame.subarray(12));
  return encodeFrame(0, UTF8.encode(`{ ${text.slice(1)}`));
}

function join(...frames: Uint8Array[]): Uint8Array {
  return Buffer.concat(frames);
}

describe('cache get path', () => {
  let broker: BrokerProcess;
  let conn: Connection;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    conn = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
    const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
    let rid = 1;
    for (const [cache, key] of [
      ['users', 'hot'],
      ['users', 'ключ 😀'],
      ['sharded', 'a'],
      ['sharded', 'b'],
    ] as const) {
      const value = UTF8.encode(`${cache}/${key}`);
      await stream.write(
        encodeMessage({ type: 'cache_put', ...scope, cache, key, value, request_id: rid++ }),
      );
      expect(await next()).toMatchObject({ type: 'cache_ok' });
    }
    await stream.end();
  });
  afterAll(async () => {
    await conn?.close();
    await broker?.stop();
    await cleanup?.();
  });

  it('a_get_in_the_clients_form_answers_what_the_general_path_answers', async () => {
    const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
    const gets: Message[] = [
      { type: 'cache_get', ...scope, cache: 'users', key: 'hot', request_id: 1 },
      { type: 'cache_get', ...scope, cache: 'users', key: 'hot' },
      { type: 'cache_get', ...scope, cache: 'users', key: 'ключ 😀', request_id: 2 ** 40 },
      { type: 'cache_get', ...scope, cache: 'sharded', key: 'a', request_id: 3 },
      { type: 'cache_get', ...scope, cache: 'sharded', key: 'b', request_id: 4 },
      { type: 'cache_get', ...scope, cache: 'users', key: 'absent', request_id: 5 },
      { type: 'cache_get', ...scope, cache: 'ghost', key: 'k', request_id: 6 },
      { type: 'cache_get', ...scope, cache: 'users', key: '', request_id: 7 },
      { type: 'cache_get', ...scope, cache: 'users', key: 'x'.repeat(1025), request_id: 8 },
      { type: 'cache_get', tenant_id: 't2', namespace: 'default', cache: 'users', key: 'hot' },
      { type: 'cache_get', ...scope, namespace: 'other', cache: 'users', key: 'hot' },
    ];
    for (const msg of gets) {
      const answers: unknown[] = [];
      // Twice in the client's form: the first read of a key may come from the log.
      for (const form of ['client', 'client', 'general', 'client'] as const) {
        await stream.write(getFrame(msg, form));
        answers.push(await next());
      }
      for (const a of answers.slice(1)) expect(a, JSON.stringify(msg)).toStrictEqual(answers[0]);
    }
    expect(await Promise.all([next(), stream.end()])).toEqual([null, undefined]);
  });

  it('hot_gets_are_counted_once_each_in_the_requests_metric_across_scrapes', async () => {
    const gets = async (): Promise<number> => {
      const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
      const m = /felix_broker_projection_requests_total\{type="cache_get"\} (\d+)/.exec(body);
      return m === null ? 0 : Number(m[1]);
    };
    const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
    const get: Message = { type: 'cache_get', ...scope, cache: 'users', key: 'hot', request_id: 9 };
    await stream.write(getFrame(get, 'client'));
    await next();
    const before = await gets();
    for (let i = 0; i < 3; i++) {
      await stream.write(getFrame(get, 'client'));
      expect(await next()).toMatchObject({ type: 'cache_value', key: 'hot' });
    }
    expect(await gets()).toBe(before + 3);
    expect(await gets()).toBe(before + 3);
    await stream.end();
  });

  it('a_hot_get_behind_slower_requests_on_one_stream_is_answered_after_them', async () => {
    const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
    const hot = (request_id: number) =>
      getFrame({ type: 'cache_get', ...scope, cache: 'users', key: 'hot', request_id }, 'client');
    // One write: a put (answered after its fsync) and a get of a never-read key (read from the
    // log), each followed by hot gets that are ready at once.
    await stream.write(
      join(
        encodeMessage({
          type: 'cache_put',
          ...scope,
          cache: 'users',
          key: 'other',
          value: UTF8.encode('v'),
          request_id: 10,
        }),
        hot(11),
        hot(12),
        getFrame(
          { type: 'cache_get', ...scope, cache: 'sharded', key: 'never-read', request_id: 13 },
          'client',
        ),
        hot(14),
      ),
    );
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push((await next()) as Message);
    expect(answers.map((a) => [a.type, (a as { request_id?: number }).request_id])).toEqual([
      ['cache_ok', 10],
      ['cache_value', 11],
      ['cache_value', 12],
      ['cache_value', 13],
      ['cache_value', 14],
    ]);
    await stream.end();
  });

  it('a_malformed_cache_get_gets_the_general_decoders_typed_error', async () => {
    const open = '{"type":"cache_get","tenant_id":"t1","namespace":"default","cache":"users"';
    for (const text of [
      `${open},"key":5,"request_id":1}`,
      `${open},"key":"hot","request_id":-1}`,
      `${open},"key":"hot","request_id":1.5}`,
      `${open},"key":"hot","request_id":18446744073709551615}`,
      `${open},"request_id":1}`,
      `${open},"key":"hot","request_id":1`,
      `${open},"key":"h\\qt","request_id":1}`,
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
