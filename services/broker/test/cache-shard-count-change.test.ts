// Goal: a standalone broker whose YAML changes a durable cache's `shards` (2 -> 4) never answers
// a key it holds as absent. Keys go to `shardForKey(key, shards)` (docs/caches-and-watches.md,
// "Where a cache lives"), so with the new count most keys route to a shard that never held them.
// The docs promise reads fail loudly: "any failure to read ... is an error answer ..., never a
// null. A miss would let a client conclude the key does not exist when it does" ("Reads fail
// loudly"), and the control plane refuses a shard-count change ("shards ... are fixed at
// creation", docs/control-plane.md), but the YAML path checks nothing: today the broker starts,
// and 8 of these 20 keys (and their counters) read as never written, with no error or log line.
// Expected: the start is refused naming the cache, or each key is answered with its value or an
// error, never as absent.
// Method: real broker processes (started by @felix/testing-e2e) over one data directory; the
// second start's YAML differs only in the cache's shard count.
import { connect } from '@felix/client';
import { BrokerStartError, startBroker } from '@felix/testing-e2e';
import { tempDir } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';

const yaml = (shards: number) => `caches:\n  - { tenant: t1, name: users, shards: ${shards} }\n`;
const KEYS = Array.from({ length: 20 }, (_, i) => `user:${i}`);

describe('a cache whose shard count changed', () => {
  it('a_cache_whose_shard_count_changed_in_the_yaml_never_answers_a_held_key_as_absent', async () => {
    const dir = await tempDir();
    try {
      const first = await startBroker({ yaml: yaml(2), dir: dir.path, durable: true });
      const a = await connect({
        servers: [first.url('tls')],
        tenant: 't1',
        tls: { fingerprint: first.fingerprint },
      });
      for (const k of KEYS) {
        await a.cache('users').put(k, `value of ${k}`);
        await a.counter('users').add(k, 5n);
      }
      await a.close();
      await first.stop();

      let second: Awaited<ReturnType<typeof startBroker>>;
      try {
        second = await startBroker({ yaml: yaml(4), dir: dir.path, durable: true });
      } catch (err) {
        // Refusing the changed catalog at start is a fix too.
        expect(err).toBeInstanceOf(BrokerStartError);
        return;
      }
      const b = await connect({
        servers: [second.url('tls')],
        tenant: 't1',
        tls: { fingerprint: second.fingerprint },
      });
      try {
        const silentlyAbsent: string[] = [];
        for (const k of KEYS) {
          // An error is a loud answer; a resolved undefined says the key was never written.
          const value = await b
            .cache('users')
            .get(k)
            .catch(() => 'refused');
          const sum = await b
            .counter('users')
            .get(k)
            .catch(() => 'refused');
          if (value === undefined) silentlyAbsent.push(`cache ${k}`);
          if (sum === undefined) silentlyAbsent.push(`counter ${k}`);
        }
        expect(silentlyAbsent).toEqual([]);
      } finally {
        await b.close();
        await second.stop();
      }
    } finally {
      await dir.cleanup();
    }
  });
});
