// cache: a durable cache served by a felix-broker, used through @felix/client only. Shows put
// and get, a TTL lapsing, delete answering the value it removed, a retained watch (current
// values, then a "state complete" marker, then live changes) and a counter beside the cache.
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { connect } from '@felix/client';
import { check, finish, runBroker } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const text = (b) => (b === undefined ? '(absent)' : new TextDecoder().decode(b));
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

const broker = await runBroker(
  'cache',
  'caches:\n  - { tenant: t1, name: users, shards: 4 }\n  - { tenant: t1, name: sessions, default_ttl_ms: 600000 }\n',
);
const felix = await connect({
  servers: [broker.url(transport)],
  tenant: 't1',
  token: await broker.tokenFor('t1'),
  tls: { fingerprint: broker.fingerprint },
});
console.log(`broker up at ${broker.url(transport)}`);

const users = felix.cache('users');
await users.put('user:1', JSON.stringify({ name: 'Ada' }));
await users.put('user:2', JSON.stringify({ name: 'Grace' }));
const ada = text(await users.get('user:1'));
console.log('get user:1 ->', ada);
check(ada === '{"name":"Ada"}', 'a put value is read back', ada);
const nobody = text(await users.get('user:9'));
console.log('get user:9 ->', nobody);
check(nobody === '(absent)', 'a key never written reads as absent', nobody);

// A TTL is checked at read: after it passes the key reads as absent.
const sessions = felix.cache('sessions');
await sessions.put('s-42', 'token', { ttlMs: 200 });
const fresh = text(await sessions.get('s-42'));
console.log('session right away ->', fresh);
await wait(300); // the TTL (200 ms) must pass: time itself is what is shown here
const lapsed = text(await sessions.get('s-42'));
console.log('session after its TTL ->', lapsed);
check(fresh === 'token' && lapsed === '(absent)', 'a key reads as absent once its TTL passed');

// Delete answers the value it removed, so one round trip says whether the key was there.
const removed = text(await users.delete('user:2'));
console.log('delete user:2 removed ->', removed);
const again = text(await users.delete('user:2'));
console.log('delete user:2 again removed ->', again);
check(
  removed === '{"name":"Grace"}' && again === '(absent)',
  'delete answers the value it removed, and nothing the second time',
);

// A retained watch: what the key holds now, then "state complete", then each change as it lands.
const ac = new AbortController();
const seen = [];
const watching = (async () => {
  for await (const ev of users.watch({ key: 'user:1' }, { retained: true, signal: ac.signal })) {
    if (ev.type === 'state_complete') {
      console.log(`  watch: state complete (${ev.retainedCount} retained); live from here`);
      seen.push(`state_complete ${ev.retainedCount}`);
      // Now that the watcher holds the state, change it twice.
      void users
        .put('user:1', JSON.stringify({ name: 'Ada Lovelace' }))
        .then(() => users.delete('user:1'));
    } else if (ev.type === 'put') {
      console.log(`  watch: put ${ev.key} = ${text(ev.value)} @${ev.offset}`);
      seen.push(`put ${text(ev.value)}`);
    } else if (ev.type === 'delete') {
      console.log(`  watch: delete ${ev.key} @${ev.offset}`);
      seen.push('delete');
      ac.abort();
    }
  }
})();
await watching;
check(
  seen.join(' | ') ===
    'put {"name":"Ada"} | state_complete 1 | put {"name":"Ada Lovelace"} | delete',
  'a retained watch gives the current value, then state complete, then each change',
  seen.join(' | '),
);

// Counters live beside the cache: same name and keys, separate values, exact 64-bit sums.
const visits = felix.counter('users');
await visits.add('user:1', 1n);
const sum = await visits.add('user:1', 2n);
console.log('visits user:1 ->', sum);
const never = await visits.get('user:7');
console.log('visits user:7 (never written) ->', never);
check(
  sum === 3n && never === undefined,
  'a counter answers exact sums, and nothing for a key never written',
);

await felix.close();
await broker.stop();
finish();
