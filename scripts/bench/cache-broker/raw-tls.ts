/**
 * The floor under a cache get over TLS: a raw node:tls request/answer on loopback with the
 * sizes of a get (about 100 B out, 200 B back), no multiplexer, no framing, no parsing. The
 * answering side runs on a worker thread (its own event loop, so its own core like the broker's
 * process), with the dev certificate from @felix/transport. Felix get minus this is what the
 * multiplexer, the codecs and the cache lookup cost on both sides.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { Worker } from 'node:worker_threads';
import { loadOrCreateDevCertificate } from '@felix/transport';

const REQUEST_BYTES = 100;
const ANSWER_BYTES = 200;

// The worker answers every request-sized run of bytes with one answer-sized write.
const SERVER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createServer } = require('node:tls');
const answer = Buffer.alloc(${ANSWER_BYTES}, 7);
const server = createServer({ cert: workerData.cert, key: workerData.key }, (s) => {
  s.setNoDelay(true);
  let have = 0;
  s.on('data', (c) => {
    have += c.length;
    while (have >= ${REQUEST_BYTES}) {
      have -= ${REQUEST_BYTES};
      s.write(answer);
    }
  });
  s.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', () => server.close(() => process.exit(0)));
`;

export interface RawTls {
  /** One request, resolved when its whole answer has arrived. */
  ping(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRawTls(): Promise<RawTls> {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-raw-tls-'));
  const material = await loadOrCreateDevCertificate(dir);
  const worker = new Worker(SERVER, {
    eval: true,
    workerData: { cert: material.certPem, key: material.keyPem },
  });
  const port = await new Promise<number>((ok) => worker.once('message', ok));
  const client = await rawTlsClient(port, REQUEST_BYTES, ANSWER_BYTES);
  return {
    ping: client.ping,
    stop: async () => {
      client.socket.destroy();
      const exited = new Promise((ok) => worker.once('exit', ok));
      worker.postMessage('stop');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A raw node:tls client on loopback whose `ping()` writes `requestBytes` and resolves once
 * `answerBytes` have come back (one request at a time). Shared by the benches that compare a
 * Felix round trip with a bare TLS one.
 */
export async function rawTlsClient(
  port: number,
  requestBytes: number,
  answerBytes: number,
): Promise<{ ping(): Promise<void>; socket: ReturnType<typeof connect> }> {
  const socket = await new Promise<ReturnType<typeof connect>>((ok, fail) => {
    // Benchmark only: same machine, a certificate made a moment ago.
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => ok(s));
    s.once('error', fail);
  });
  socket.setNoDelay(true);
  const request = Buffer.alloc(requestBytes, 1);
  let need = 0;
  let done: (() => void) | null = null;
  socket.on('data', (c: Buffer) => {
    need -= c.length;
    if (need <= 0) done?.();
  });
  return {
    socket,
    ping: () =>
      new Promise<void>((ok) => {
        need = answerBytes;
        done = ok;
        socket.write(request);
      }),
  };
}
