/**
 * The multiplexer's own JavaScript per 100 B echo, with no socket, no TLS and no kernel: two
 * multiplexed connections (`multiplex()` from @felix/transport, the TLS transport's multiplexer
 * over any Duplex) joined by fake sockets that copy each write and emit it as `'data'` on the
 * next setImmediate, against the same fake pair echoing the bytes raw. Both run hot in one
 * process. So the difference is what the multiplexer costs when nothing sleeps between round
 * trips. Compare it with rtt-cpu.ts, where each round trip wakes both processes (docs/perf.md,
 * session 7).
 *
 *   node --import tsx scripts/bench/transport/mux-js.ts
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { multiplex } from '@felix/transport';
import { assertFreshBuild } from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/transport'));

class FakeSocket extends EventEmitter {
  peer!: FakeSocket;
  destroyed = false;
  writableLength = 0;
  private corked = 0;
  private pending: Uint8Array[] = [];
  write(b: Uint8Array): boolean {
    if (this.corked > 0) {
      this.pending.push(b);
      return true;
    }
    const copy = new Uint8Array(b); // the kernel copies
    setImmediate(() => this.peer.emit('data', copy));
    return true;
  }
  cork() {
    this.corked++;
  }
  uncork() {
    if (--this.corked === 0) {
      const p = this.pending;
      this.pending = [];
      const n = p.reduce((a, c) => a + c.length, 0);
      const out = new Uint8Array(n);
      let at = 0;
      for (const c of p) {
        out.set(c, at);
        at += c.length;
      }
      this.write(out);
    }
  }
  end() {}
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}
function pair(): [FakeSocket, FakeSocket] {
  const a = new FakeSocket();
  const b = new FakeSocket();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
/** The fake socket as the Duplex `multiplex()` takes: it uses only write, cork, end, destroy,
 *  writableLength and the socket events, which the fake provides. */
const duplex = (s: FakeSocket) => s as unknown as Duplex;
/** Sixteen streams each way, as before; the default window (1 MiB) and timeouts. */
const limits = { maxStreams: 16, streamWindowBytes: 1 << 20 };

async function muxEcho(): Promise<() => Promise<void>> {
  const [a, b] = pair();
  const [client, server] = await Promise.all([
    multiplex(duplex(a), { role: 'client', remote: 'a', ...limits }),
    multiplex(duplex(b), { role: 'server', remote: 'b', ...limits }),
  ]);
  void (async () => {
    for await (const s of server.incoming())
      void (async () => {
        for await (const c of s) await s.write(c);
      })();
  })();
  const s = await client.openBidi();
  const it = s[Symbol.asyncIterator]();
  const msg = new Uint8Array(100).fill(1);
  return async () => {
    await s.write(msg);
    let got = 0;
    while (got < 100) {
      const r = await it.next();
      got += r.value!.length;
    }
  };
}
async function rawEcho(): Promise<() => Promise<void>> {
  const [a, b] = pair();
  b.on('data', (c: Uint8Array) => b.write(c));
  let done: (() => void) | null = null;
  a.on('data', () => done?.());
  const msg = new Uint8Array(100).fill(1);
  return () =>
    new Promise<void>((r) => {
      done = r;
      a.write(msg);
    });
}
const N = 100_000;
const runs = { mux: await muxEcho(), raw: await rawEcho() };
for (let round = 0; round < 5; round++) {
  for (const [name, ping] of Object.entries(runs)) {
    for (let i = 0; i < 5000; i++) await ping();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await ping();
    const c = process.cpuUsage(c0);
    console.log(
      `round ${round + 1} ${name}: ${(((performance.now() - t0) * 1000) / N).toFixed(2)} µs per echo, CPU ${((c.user + c.system) / N).toFixed(2)} µs`,
    );
  }
}
process.exit(0);
