// durable-restart: publishers append acknowledged records to a durable `onCommit` stream while a
// subscriber reads it; the broker is SIGKILLed mid-stream and restarted on the same data dir.
// The client reconnects by itself, the subscription resumes from the offset after the last
// record it delivered, and at the end every acknowledged record is checked: present, at its
// offset, with its bytes. Publishes cut off by the kill are reported as outcome-unknown, never
// re-sent behind your back. Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { OutcomeUnknownError, connect } from '@felix/client';
import { check, finish, freePort, startBroker, waitUntil } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const dir = resolve(process.cwd(), '.felix', 'durable-restart');
const YAML = 'streams:\n  - { tenant: t1, name: orders, durable: true, fsync: onCommit }\n';
const WRITERS = 8;
const BEFORE_KILL = 1500;
const TOTAL = 3000;

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const port = await freePort();
const httpPort = await freePort();
let broker = await startBroker({ dir, yaml: YAML, port, httpPort });
console.log(`broker up on ${transport}://127.0.0.1:${port}, data in ${dir}`);

const felix = await connect({
  servers: [`${transport}://127.0.0.1:${port}`],
  tenant: 't1',
  token: await broker.tokenFor('t1'),
  tls: { fingerprint: broker.fingerprint },
  idleTimeoutMs: 2000,
  reconnect: { baseMs: 50, maxDelayMs: 500 },
});
void (async () => {
  for await (const s of felix.status()) {
    if (s.type !== 'reconnecting') console.log(`  status: ${JSON.stringify(s)}`);
  }
})();

// The subscriber: everything from the start of the stream, remembered by offset.
const seen = new Map();
let duplicates = 0;
const ac = new AbortController();
const reading = (async () => {
  for await (const ev of felix.subscribe('orders', { from: 'earliest', signal: ac.signal })) {
    if (seen.has(ev.offset)) duplicates++;
    seen.set(ev.offset, new TextDecoder().decode(ev.data));
  }
})().catch((err) => {
  if (!ac.signal.aborted) throw err;
});

// The publishers: each publish is a new record; an unknown outcome is counted, not retried.
const acked = new Map();
let unknown = 0;
let sequence = 0;
let stop = false;
const writers = Array.from({ length: WRITERS }, async () => {
  while (!stop) {
    const body = `order-${sequence++}`;
    try {
      const { offset } = await felix.publish('orders', body);
      acked.set(offset, body);
    } catch (err) {
      if (err instanceof OutcomeUnknownError) unknown++;
      else throw err;
    }
  }
});

await waitUntil(`${BEFORE_KILL} acknowledged records`, () => acked.size >= BEFORE_KILL);
const killedAt = acked.size;
const killed = await broker.kill();
console.log(`SIGKILLed the broker (${killed.signal}) after ${killedAt} acknowledged records`);
broker = await startBroker({ dir, yaml: YAML, port, httpPort });
console.log('restarted the broker on the same data dir; the client reconnects by itself');
await waitUntil(`${TOTAL} acknowledged records`, () => acked.size >= TOTAL);
stop = true;
await Promise.all(writers);
const maxAcked = Math.max(...acked.keys());
await waitUntil('the subscriber to reach the last acknowledged record', () => seen.has(maxAcked));
ac.abort();
await reading;

let missing = 0;
let wrong = 0;
for (const [offset, body] of acked) {
  if (!seen.has(offset)) missing++;
  else if (seen.get(offset) !== body) wrong++;
}
await felix.close();
await broker.stop();
console.log(
  `acknowledged ${acked.size}, outcome-unknown ${unknown}, subscriber received ${seen.size} ` +
    `(duplicates ${duplicates}); acknowledged but missing: ${missing}, with other bytes: ${wrong}`,
);
check(acked.size >= TOTAL, 'publishing went on after the restart', `${acked.size} acknowledged`);
check(
  missing === 0 && wrong === 0,
  'every acknowledged record is in the log at its offset with its bytes',
);
check(duplicates === 0, 'the resumed subscription delivered no record twice');
finish();
