// latency: publish-to-subscribe latency over QUIC and TLS. One record in flight at a time: the
// publisher stamps a record, the subscriber receives it, the difference is one sample. Prints
// p50/p99/p999 per transport and writes an SVG chart of the latency distribution.
// Environment: FELIX_LATENCY_SAMPLES (default 5000), FELIX_LATENCY_SVG (default
// ./.felix/latency.svg). The demo starts its own broker (in-memory stream `ticks`).
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { connect } from '@felix/client';
import { check, finish, freePort, startBroker } from '@felix/demo-support';

const SAMPLES = Number(process.env.FELIX_LATENCY_SAMPLES ?? 5000);
const WARMUP = 500;
const svgPath = resolve(
  process.env.FELIX_LATENCY_SVG ?? join(process.cwd(), '.felix', 'latency.svg'),
);

const dir = mkdtempSync(join(tmpdir(), 'felix-latency-'));
const port = await freePort();
const httpPort = await freePort();
const broker = await startBroker({
  dir,
  yaml: 'streams:\n  - { tenant: t1, name: ticks }\n',
  port,
  httpPort,
});

async function measure(transport) {
  const felix = await connect({
    servers: [`${transport}://127.0.0.1:${port}`],
    tenant: 't1',
    token: await broker.tokenFor('t1'),
    tls: { fingerprint: broker.fingerprint },
  });
  const first = await felix.publish('ticks', 'start');
  const iterator = felix
    .subscribe('ticks', { from: first.offset + 1, shard: 0 })
    [Symbol.asyncIterator]();
  const samples = [];
  const payload = new Uint8Array(64);
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const started = process.hrtime.bigint();
    const received = iterator.next();
    await felix.publish('ticks', payload, { ack: false });
    await received;
    const micros = Number(process.hrtime.bigint() - started) / 1000;
    if (i >= WARMUP) samples.push(micros);
  }
  await iterator.return?.();
  await felix.close();
  samples.sort((a, b) => a - b);
  return samples;
}

const pct = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const results = {};
for (const transport of ['quic', 'tls']) {
  const s = await measure(transport);
  results[transport] = s;
  console.log(
    `${transport.padEnd(4)}  samples ${s.length}  p50 ${pct(s, 50).toFixed(0)} µs  p99 ${pct(s, 99).toFixed(0)} µs  ` +
      `p999 ${pct(s, 99.9).toFixed(0)} µs  max ${s[s.length - 1].toFixed(0)} µs`,
  );
  check(
    s.length === SAMPLES && s[0] > 0,
    `every ${transport} sample was a record published and received`,
    `${s.length} samples`,
  );
}
await broker.stop();
rmSync(dir, { recursive: true, force: true });

// The chart: latency (log scale) against percentile, one line per transport.
const W = 720;
const H = 420;
const M = { l: 70, r: 20, t: 40, b: 50 };
const all = Object.values(results).flat();
const lo = Math.max(1, Math.min(...all));
const hi = Math.max(...all);
const yOf = (us) =>
  M.t +
  (H - M.t - M.b) *
    (1 - (Math.log10(us) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo) || 1));
// x: percentile on a "nines" scale so the tail is visible: 0 → 0%, 1 → 90%, 2 → 99%, 3 → 99.9%.
const ninesMax = 3.5;
const xOf = (p) =>
  M.l + ((W - M.l - M.r) * Math.min(ninesMax, -Math.log10(1 - p + 1e-9))) / ninesMax;
const colors = { quic: '#1f77b4', tls: '#d62728' };
let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12"><title>Felix publish-to-subscribe latency</title>`;
svg += `<rect width="${W}" height="${H}" fill="white"/>`;
svg += `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">Felix publish→subscribe latency (one record in flight)</text>`;
for (const [p, label] of [
  [0, '0%'],
  [0.5, '50%'],
  [0.9, '90%'],
  [0.99, '99%'],
  [0.999, '99.9%'],
]) {
  const x = xOf(p);
  svg += `<line x1="${x}" y1="${M.t}" x2="${x}" y2="${H - M.b}" stroke="#ddd"/><text x="${x}" y="${H - M.b + 16}" text-anchor="middle">${label}</text>`;
}
for (let d = Math.floor(Math.log10(lo)); d <= Math.ceil(Math.log10(hi)); d++) {
  for (const m of [1, 2, 5]) {
    const us = m * 10 ** d;
    if (us < lo || us > hi) continue;
    const y = yOf(us);
    svg += `<line x1="${M.l}" y1="${y}" x2="${W - M.r}" y2="${y}" stroke="#eee"/><text x="${M.l - 6}" y="${y + 4}" text-anchor="end">${us >= 1000 ? `${us / 1000} ms` : `${us} µs`}</text>`;
  }
}
svg += `<text x="${W / 2}" y="${H - 10}" text-anchor="middle">percentile</text>`;
let legendY = M.t + 10;
for (const [transport, s] of Object.entries(results)) {
  const points = s.map((v, i) => `${xOf(i / s.length).toFixed(1)},${yOf(v).toFixed(1)}`).join(' ');
  svg += `<polyline fill="none" stroke="${colors[transport]}" stroke-width="1.5" points="${points}"/>`;
  svg += `<text x="${M.l + 10}" y="${legendY}" fill="${colors[transport]}">${transport}: p50 ${pct(s, 50).toFixed(0)} µs, p99 ${pct(s, 99).toFixed(0)} µs, p999 ${pct(s, 99.9).toFixed(0)} µs</text>`;
  legendY += 16;
}
svg += '</svg>\n';
mkdirSync(dirname(svgPath), { recursive: true });
writeFileSync(svgPath, svg);
console.log(`chart written to ${svgPath}`);
check(existsSync(svgPath), 'the chart was written', svgPath);
finish();
