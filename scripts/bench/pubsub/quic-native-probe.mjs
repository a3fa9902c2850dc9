/**
 * A preload for a process that runs QUIC through @felix/transport (the broker of a bench, via
 * FELIX_BENCH_BROKER_ARGS, or a client process): per quiche binding method the calls, the bytes
 * and the wall time inside the call; the direct stream writes and how long their rest waited for
 * quiche's send capacity (vendor patch 12's writeDirectRest); and, every 100 ms, each sending
 * connection's congestion window and RTT as quiche reports them. Written as JSON to
 * /tmp/felix-quic-probe-<pid>.json while the process runs and when it exits.
 *
 *   FELIX_BENCH_BROKER_ARGS="--import $PWD/scripts/bench/pubsub/quic-native-probe.mjs" \
 *     node --import tsx scripts/bench/pubsub/client-probe.ts --rounds 3
 *
 * Wall time, not CPU: under load a call's time includes the moments the process waited for a
 * core, so read it beside the CPU per message the bench prints.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// The transport package resolves the vendored library; the library resolves the binding.
const fromTransport = createRequire(join(here, '..', '..', '..', 'packages', 'transport', 'x.js'));
const libDir = dirname(dirname(fromTransport.resolve('@felix-vendor/matrixai-quic/package.json')));
const QUICStream = (await import(join(libDir, 'matrixai-quic', 'dist', 'QUICStream.js'))).default;
const quiche = createRequire(join(libDir, 'matrixai-quic', 'x.js'))('@matrixai/quic-linux-x64');

const calls = {};
const writes = { direct: 0, directBytes: 0, waited: 0, waitedBytes: 0, waitedMs: 0 };
const paths = [];
const senders = new Set();

const TIMED = ['send', 'recv', 'streamSend', 'streamRecv', 'streamReadable', 'isReadable'];
const proto = quiche.Connection.prototype;
for (const name of TIMED) {
  const f = proto[name];
  proto[name] = function (...a) {
    const t = performance.now();
    const r = f.apply(this, a);
    const s = (calls[name] ??= { calls: 0, ms: 0, bytes: 0 });
    s.calls++;
    s.ms += performance.now() - t;
    if (name === 'streamSend') {
      s.bytes += a[1].byteLength;
      senders.add(this);
    } else if (name === 'send' && r) s.bytes += r[0];
    else if (name === 'recv') s.bytes += a[0].byteLength;
    return r;
  };
}

const writeDirect = QUICStream.prototype.writeDirect;
QUICStream.prototype.writeDirect = function (chunk) {
  writes.direct++;
  writes.directBytes += chunk.byteLength;
  return writeDirect.call(this, chunk);
};
const writeDirectRest = QUICStream.prototype.writeDirectRest;
QUICStream.prototype.writeDirectRest = async function (chunk) {
  writes.waited++;
  writes.waitedBytes += chunk.byteLength;
  const t = performance.now();
  try {
    return await writeDirectRest.call(this, chunk);
  } finally {
    writes.waitedMs += performance.now() - t;
  }
};

setInterval(() => {
  for (const c of senders) {
    if (c.isClosed()) {
      senders.delete(c);
      continue;
    }
    const p = c.pathStats()[0];
    if (p !== undefined) paths.push({ cwnd: p.cwnd, rtt: p.rtt, lost: c.stats().lost });
  }
}, 100).unref();

const dump = () =>
  writeFileSync(
    `/tmp/felix-quic-probe-${process.pid}.json`,
    JSON.stringify({ calls, writes, paths }, null, 1),
  );
setInterval(dump, 500).unref();
process.on('exit', dump);
