/**
 * The multiplexer's own JavaScript per 100 B echo, with no socket, no TLS and no kernel: two
 * MuxSessions joined by fake sockets that copy each write and deliver it on the next
 * setImmediate, against the same fake pair echoing the bytes raw. Both run hot in one process.
 * So the difference is what the multiplexer costs when nothing sleeps between round trips.
 * Compare it with rtt-cpu.ts, where each round trip wakes both processes (docs/perf.md,
 * session 7).
 *
 *   node --import tsx scripts/bench/transport/mux-js.ts
 */
import { EventEmitter } from 'node:events';
import { MuxSession } from '../../../packages/transport/src/mux/session.js';
import { resolveTimeouts } from '../../../packages/transport/src/options.js';

class FakeSocket extends EventEmitter {
  peer!: FakeSocket;
  sink: ((c: Uint8Array) => void) | null = null;
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
    setImmediate(() => this.peer.sink?.(copy));
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
function pair() {
  const a = new FakeSocket(),
    b = new FakeSocket();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
const settings = { maxStreamsBidi: 16, maxStreamsUni: 16, streamWindowBytes: 1 << 20 };
const timeouts = resolveTimeouts({});
const feed = (s: FakeSocket) => ({
  attach(sink: (c: Uint8Array) => void) {
    s.sink = sink;
  },
});

async function muxEcho(): Promise<() => Promise<void>> {
  const [a, b] = pair();
  const client = new MuxSession(a as never, {
    role: 'client',
    remote: 'a',
    timeouts,
    settings,
    feed: feed(a),
  });
  const server = new MuxSession(b as never, {
    role: 'server',
    remote: 'b',
    timeouts,
    settings,
    feed: feed(b),
  });
  await Promise.all([client.ready, server.ready]);
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
  b.sink = (c) => b.write(c);
  let done: (() => void) | null = null;
  a.sink = () => done?.();
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
