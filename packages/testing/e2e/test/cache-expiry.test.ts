// Goal: the broker deletes expired cache keys on its own (the leader's TTL expiry pass), so a
// watcher sees a key expire as a delete even when nobody reads the key; keys without a TTL stay.
// Method: a real durable felix-broker with a short expiry interval, driven through
// @felix/client: a key watch is started (waiting for the broker's opened-watches counter), a
// key is put with a short TTL and another without one, and nothing reads either; the watch's
// events are awaited under a deadline.
import { type CacheWatchEvent, connect } from '@felix/client';
import { tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';

const YAML = `
caches:
  - { tenant: t1, name: sessions }
`;

const TTL_MS = 300;

async function watchesOpened(broker: BrokerProcess): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const m = /felix_broker_cache_watches_opened_total (\d+)/.exec(body);
  return m ? Number(m[1]) : 0;
}

describe('cache expiry', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({
      yaml: YAML,
      dir: dir.path,
      durable: true,
      env: { FELIX_BROKER_CACHE_EXPIRY_INTERVAL_MS: '50' },
    });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('a_watcher_sees_a_key_expire_without_any_read', async () => {
    const felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
    });
    try {
      const sessions = felix.cache('sessions');
      const ac = new AbortController();
      const events = sessions
        .watch({ prefix: 's-' }, { signal: ac.signal })
        [Symbol.asyncIterator]();
      const seen: CacheWatchEvent[] = [];
      const before = await watchesOpened(broker);
      const reading = (async () => {
        for (;;) {
          const next = await events.next();
          if (next.done) return;
          seen.push(next.value);
          if (next.value.type === 'delete') return;
        }
      })();
      await waitFor(async () => (await watchesOpened(broker)) > before, 'the watch to start');
      await sessions.put('s-kept', 'stays');
      const putAt = Date.now();
      await sessions.put('s-short', 'goes', { ttlMs: TTL_MS });
      await withDeadline(reading, 10_000, 'the expiry to reach the watcher');
      const deleted = seen.at(-1);
      expect(deleted).toMatchObject({ type: 'delete', key: 's-short' });
      expect(Date.now() - putAt).toBeGreaterThanOrEqual(TTL_MS);
      const deletes = seen.filter(
        (e): e is Extract<CacheWatchEvent, { type: 'delete' }> => e.type === 'delete',
      );
      expect(deletes.map((e) => e.key)).toEqual(['s-short']);
      ac.abort();
      // The key without a TTL is still there; the expired one reads as absent.
      expect(new TextDecoder().decode(await sessions.get('s-kept'))).toBe('stays');
      expect(await sessions.get('s-short')).toBeUndefined();
    } finally {
      await felix.close();
    }
  });
});
