// Goal: a put on an in-memory cache is stored and answered in the turn its request is handled
// (no promise chain), as a hot get is, while answers and changes keep request order behind a
// request still unanswered on the stream, and a log-backed put is still answered only after its
// append. Method: the cache handlers on a HandlerTable, called directly with a request context
// whose AnswerPipe writes to a stand-in stream that records each write; what was written is
// checked before anything is awaited.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection, TransportStream } from '@felix/transport';
import { type Message, decodeMessage } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { ProjectionAnswers } from '../src/caches/answers.js';
import { CacheService } from '../src/caches/cache-service.js';
import { registerCacheHandlers } from '../src/caches/handlers.js';
import { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import type { BrokerConfig, CacheConfig } from '../src/config/types.js';
import { BrokerMetrics } from '../src/metrics.js';
import { AnswerPipe } from '../src/session/answer-pipe.js';
import { type Handler, HandlerTable, type RequestContext } from '../src/session/handler.js';
import type { Negotiated } from '../src/session/negotiation.js';

const auth: Negotiated = { tenant: 't', flags: 0, features: 0, featuresHi: 0, negotiating: false };
const scope = { tenant_id: 't', namespace: 'n', cache: 'c' };
const UTF8 = new TextEncoder();
type Put = Extract<Message, { type: 'cache_put' }>;

function setup(dataDir: string | null) {
  const cache = { tenant: 't', namespace: 'n', name: 'c', shards: 1 } as CacheConfig;
  const config = {
    caches: [cache],
    durable: { data_dir: dataDir },
    broker: { cache_hot_bytes: 1 << 20, watch_queue_capacity: 16 },
  } as unknown as BrokerConfig;
  const svc = new CacheService(config);
  const brokerMetrics = new BrokerMetrics();
  const answers = new ProjectionAnswers(
    new ProjectionMetrics(brokerMetrics.registry),
    brokerMetrics,
  );
  const table = new HandlerTable();
  registerCacheHandlers(table, {
    config,
    brokerMetrics,
    caches: svc,
    answers,
    forwarding: { current: null },
  });
  const written: Message[] = [];
  const stream = {
    write: (chunk: Uint8Array) => {
      // One write may carry several answers: split at each frame's length prefix.
      for (let at = 0; at < chunk.length; ) {
        const len = new DataView(chunk.buffer, chunk.byteOffset + at).getUint32(0);
        written.push(decodeMessage(chunk.subarray(at + 12, at + 4 + len)));
        at += 4 + len;
      }
      return Promise.resolve();
    },
  } as unknown as TransportStream;
  const pipe = new AnswerPipe(stream, 64);
  const rc = {
    auth,
    principal: 't',
    conn: {} as Connection,
    stream,
    answers: pipe,
    quiet: false,
    ended: false,
  } as unknown as RequestContext;
  const handle = (m: Message) => (table.handler(m.type) as Handler<Message>).handle(m, rc);
  return { svc, rc, pipe, written, handle };
}

const put = (key: string, value: string, request_id: number): Put => ({
  type: 'cache_put',
  ...scope,
  key,
  value: UTF8.encode(value),
  request_id,
});

let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

describe('cache put turn', () => {
  it('an_in_memory_cache_put_is_stored_and_answered_in_the_turn_it_is_handled', async () => {
    const { svc, written, handle } = setup(null);
    cleanup = () => svc.close();
    expect(handle(put('k', 'v1', 1))).toBeNull();
    // Nothing awaited: the answer is already written and the value already stored.
    expect(written).toStrictEqual([{ type: 'cache_ok', request_id: 1 }]);
    const stored = svc.memoryCache(svc.lookup('t', 'n', 'c'), 0)!;
    expect(new TextDecoder().decode((await stored.get('k'))!)).toBe('v1');
    // A refused put is answered in its turn too, with its typed error.
    handle({ ...put('k', 'v', 2), cache: 'ghost' });
    expect(written.at(-1)).toMatchObject({ type: 'error', message: 'cache n/ghost not found' });
  });

  it('an_in_memory_cache_put_behind_an_unanswered_request_keeps_request_order', async () => {
    const { svc, pipe, written, handle } = setup(null);
    cleanup = () => svc.close();
    // A get of a key that is not hot is answered later, through the pipe: the put behind it
    // must neither be answered first nor change the value the get reads.
    handle(put('k', 'old', 1));
    handle({ type: 'cache_get', ...scope, key: 'k', request_id: 2 });
    const outcome = handle(put('k', 'new', 3));
    if (outcome instanceof Promise) await outcome;
    await pipe.drain();
    expect(written.map((m) => (m as { request_id?: number }).request_id)).toStrictEqual([1, 2, 3]);
    const got = written[1] as Extract<Message, { type: 'cache_value' }>;
    expect(new TextDecoder().decode(got.value!)).toBe('old');
  });

  it('a_log_backed_cache_put_is_answered_only_after_its_append', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-put-turn-'));
    const { svc, pipe, written, handle } = setup(dir);
    cleanup = async () => {
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    };
    const outcome = handle(put('k', 'v1', 1));
    expect(written).toStrictEqual([]); // the append and its fsync are still ahead
    if (outcome instanceof Promise) await outcome;
    await pipe.drain();
    expect(written).toStrictEqual([{ type: 'cache_ok', request_id: 1 }]);
  });
});
