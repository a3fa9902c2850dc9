// simple-pubsub: publish ten acknowledged records, then read them back by offset, over QUIC or TLS.
// Environment: FELIX_SERVERS (default quic://127.0.0.1:5000), FELIX_FINGERPRINT (the broker's
// certificate fingerprint, printed in its `listening` log line) or FELIX_INSECURE=1,
// FELIX_TENANT (t1), FELIX_STREAM (demo).
import { connect } from '@felix/client';
import { check, finish } from '@felix/demo-support';

const servers = (process.env.FELIX_SERVERS ?? 'quic://127.0.0.1:5000').split(',');
const tenant = process.env.FELIX_TENANT ?? 't1';
const stream = process.env.FELIX_STREAM ?? 'demo';
const tls = process.env.FELIX_FINGERPRINT
  ? { fingerprint: process.env.FELIX_FINGERPRINT }
  : { insecure: process.env.FELIX_INSECURE === '1' };
const COUNT = 10;

// A Felix token (the quickstart mints one); without it the broker must be in dev auth mode.
const token = process.env.FELIX_TOKEN;
const felix = await connect({ servers, tenant, tls, ...(token ? { token } : {}) }).catch((err) => {
  // The two first mistakes, in this demo's own terms (the client names its options instead).
  if (err.cause?.certificate ?? /certificate/.test(err.message))
    console.error(
      'hint: set FELIX_FINGERPRINT to the broker certificate pin: $(cat .felix/data/tls/dev-cert.sha256)',
    );
  if (/not for audience felix-broker/.test(err.message))
    console.error(
      "hint: FELIX_TOKEN must be a broker token: node scripts/dev-token.mjs t1 my-app broker 'stream.publish:stream:t1/default/*' 'stream.subscribe:stream:t1/default/*'",
    );
  throw err;
});
console.log(`connected to ${servers.join(', ')} as tenant ${tenant}`);

const sent = [];
const bodies = [];
for (let i = 1; i <= COUNT; i++) {
  const body = `hello #${i} at ${new Date().toISOString()}`;
  const { offset, shard } = await felix.publish(stream, body);
  sent.push(offset);
  bodies.push(body);
  console.log(`published  shard ${shard} offset ${offset}: ${body}`);
}

// Read them back from the first acknowledged offset (unkeyed records live on shard 0). The
// same subscription would go on to deliver anything published later, live.
const ac = new AbortController();
const subscription = felix.subscribe(stream, { from: sent[0], shard: 0, signal: ac.signal });
const iterator = subscription[Symbol.asyncIterator]();
const first = iterator.next();

let received = 0;
let inOrder = true;
let next = await first;
while (!next.done) {
  const ev = next.value;
  const body = new TextDecoder().decode(ev.data);
  inOrder &&= ev.offset === sent[received] && body === bodies[received];
  received++;
  console.log(`received   shard ${ev.shard} offset ${ev.offset}: ${body}`);
  if (received === COUNT) break;
  next = await iterator.next();
}
ac.abort();
await felix.close();

check(
  received === COUNT && inOrder,
  `all ${COUNT} acknowledged records were received, in order, at their offsets, with their bytes`,
  `offsets ${sent[0]}..${sent[sent.length - 1]}, received ${received}`,
);
finish();
