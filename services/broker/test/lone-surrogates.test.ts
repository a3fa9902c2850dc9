// Goal: a JSON request whose string carries a lone UTF-16 surrogate escape ("k\ud800") is
// refused with `invalid_request` before any handler sees it, and the stream goes on: JSON.parse
// turns the escape into a string with no UTF-8 bytes, which stored as UTF-8 would be U+FFFD and
// so the same key as "k\udbff" and "k\ufffd". Method: a real durable broker; a raw request stream
// writes each request as a JSON client would (JSON.stringify escapes a lone surrogate; the wire's
// own encoder refuses one, so the escape is written into its text by hand), reads each answer,
// then reads back the well-formed key the bad put would have hit.
import { tempDir } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import { LoneSurrogateError, type Message, encodeFrame, encodeMessage } from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, rawAuthed, startBroker } from '@felix/testing-e2e';

const YAML = `
caches:
  - { tenant: t1, name: users }
streams:
  - { tenant: t1, name: log, durable: true }
`;

const cacheScope = { tenant_id: 't1', namespace: 'default', cache: 'users' };
const groupScope = { tenant_id: 't1', namespace: 'default', stream: 'log', shard: 0 };
const poll = { max_records: 1, wait_ms: 0, reclaim: false };
const value = Uint8Array.of(0x41);

/** The frame a JSON client writes for `msg`, each lone surrogate in a top-level string as the
 *  escape `JSON.stringify` writes (`\ud800`): encoded with a marker in its place, which is then
 *  replaced in the JSON text. */
function escapedFrame(msg: Message): Uint8Array {
  const marked = Object.fromEntries(
    Object.entries(msg).map(([k, v]) => [
      k,
      typeof v === 'string' ? v.replace(/\p{Cs}/gu, (c) => `~lone${c.charCodeAt(0)}~`) : v,
    ]),
  ) as unknown as Message;
  const json = new TextDecoder()
    .decode(encodeMessage(marked).subarray(12))
    .replace(/~lone(\d+)~/g, (_, code: string) => `\\u${Number(code).toString(16)}`);
  return encodeFrame(0, new TextEncoder().encode(json));
}

describe('lone surrogates in JSON requests', () => {
  let broker: BrokerProcess;
  let conn: Connection;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    conn = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
  });
  afterAll(async () => {
    await conn?.close();
    await broker?.stop();
    await cleanup?.();
  });

  it('a_json_frame_key_with_a_lone_surrogate_escape_is_refused_by_the_broker', async () => {
    const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
    const ask = async (msg: Message) => {
      await stream.write(escapedFrame(msg));
      return next();
    };
    // The escape a JSON client would send; the wire's own encoder refuses to write it.
    const bad: Message = { type: 'cache_put', ...cacheScope, key: 'k\ud800', value, request_id: 1 };
    expect(() => encodeMessage(bad)).toThrow(LoneSurrogateError);
    const put = escapedFrame(bad);
    expect(new TextDecoder().decode(put.subarray(12))).toContain('"key":"k\\ud800"');
    expect(JSON.parse(new TextDecoder().decode(put.subarray(12))).key).toBe('k\ud800');

    const refusals: Array<[Message, string]> = [
      [{ type: 'cache_put', ...cacheScope, key: 'k\ud800', value, request_id: 1 }, 'key'],
      [{ type: 'cache_put', ...cacheScope, key: 'k\udbff', value, request_id: 2 }, 'key'],
      [{ type: 'cache_get', ...cacheScope, key: '\udc00', request_id: 3 }, 'key'],
      [{ type: 'cache_delete', ...cacheScope, key: 'k\ud800', request_id: 4 }, 'key'],
      [{ type: 'cache_watch', ...cacheScope, prefix: 'k\ud800', retained: false }, 'prefix'],
      [{ type: 'counter_add', ...cacheScope, key: 'c\ud800', delta: 1n, request_id: 5 }, 'key'],
      [{ type: 'group_poll', ...groupScope, group: 'g\ud800', ...poll, request_id: 6 }, 'group'],
      [
        {
          type: 'group_poll',
          ...groupScope,
          group: 'g',
          ...poll,
          request_id: 7,
          consumer: 'c\udfff',
        },
        'consumer',
      ],
    ];
    for (const [msg, field] of refusals) {
      expect(await ask(msg), `${msg.type} ${field}`).toStrictEqual({
        type: 'error',
        message: `${msg.type} field ${field} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which no UTF-8 bytes carry`,
        code: 'invalid_request',
        retry: 'fatal',
      });
    }

    // Nothing was stored under U+FFFD's bytes, and the stream still serves requests.
    const miss = await ask({ type: 'cache_get', ...cacheScope, key: 'k\ufffd', request_id: 8 });
    expect(miss).toMatchObject({ type: 'cache_value', request_id: 8 });
    expect((miss as { value?: Uint8Array }).value).toBeUndefined();
    const ok = await ask({
      type: 'cache_put',
      ...cacheScope,
      key: 'k\ufffd',
      value,
      request_id: 9,
    });
    expect(ok).toMatchObject({ type: 'cache_ok', request_id: 9 });
    const hit = await ask({ type: 'cache_get', ...cacheScope, key: 'k\ufffd', request_id: 10 });
    expect((hit as { value?: Uint8Array }).value).toEqual(value);
    expect(await Promise.all([next(), stream.end()])).toEqual([null, undefined]);
  });
});
