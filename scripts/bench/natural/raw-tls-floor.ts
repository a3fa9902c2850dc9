/**
 * The floor under a cache call over TLS from Node: a raw node:tls request/answer on loopback
 * with the exact byte counts of a Felix `cache_put` or `cache_get` and its answer (the frames
 * @felix/wire encodes), no multiplexer, no codec, no cache. The answering side is a child
 * process of its own (a broker's place), so each side has its own event loop, as with Felix and
 * Redis. What Felix spends above this is its own; this minus Redis is what TLS and a Node
 * server cost before any Felix code runs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevCertificate } from '@felix/transport';
import { encodeMessage } from '@felix/wire';
import { rawTlsClient } from '../cache-broker/raw-tls.js';
import { DATA } from './kit.js';

/** The request and answer sizes of a Felix cache call on key `k123`, value DATA. */
export function callSizes(op: 'get' | 'put'): { request: number; answer: number } {
  const scope = { tenant_id: 't1', namespace: 'default', cache: 'kv', key: 'k123' };
  const put = { type: 'cache_put' as const, ...scope, value: DATA, request_id: 12345 };
  const value = { type: 'cache_value' as const, ...scope, value: DATA, request_id: 12345 };
  const get = { type: 'cache_get' as const, ...scope, request_id: 12345 };
  const ok = { type: 'cache_ok' as const, request_id: 12345 };
  return op === 'put'
    ? { request: encodeMessage(put).length, answer: encodeMessage(ok).length }
    : { request: encodeMessage(get).length, answer: encodeMessage(value).length };
}

// The child answers every request-sized run of bytes with one answer-sized write.
const SERVER = `
const { createServer } = require('node:tls');
process.once('message', ({ cert, key, request, answer }) => {
  const out = Buffer.alloc(answer, 7);
  const server = createServer({ cert, key }, (s) => {
    s.setNoDelay(true);
    let have = 0;
    s.on('data', (c) => {
      have += c.length;
      while (have >= request) { have -= request; s.write(out); }
    });
    s.on('error', () => {});
  });
  server.listen(0, '127.0.0.1', () => process.send(server.address().port));
  process.once('message', () => server.close(() => process.exit(0)));
});
`;

export interface RawFloor {
  /** The answering child's pid. */
  pid: number;
  ping(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRawFloor(op: 'get' | 'put'): Promise<RawFloor> {
  const { request, answer } = callSizes(op);
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-raw-floor-'));
  const material = await loadOrCreateDevCertificate(dir);
  const child: ChildProcess = spawn(process.execPath, ['-e', SERVER], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  child.send({ cert: material.certPem, key: material.keyPem, request, answer });
  const port = await new Promise<number>((ok) => child.once('message', (m) => ok(m as number)));
  const client = await rawTlsClient(port, request, answer);
  return {
    pid: child.pid!,
    ping: client.ping,
    stop: async () => {
      client.socket.destroy();
      const exited = new Promise((ok) => child.once('exit', ok));
      child.send('stop');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
