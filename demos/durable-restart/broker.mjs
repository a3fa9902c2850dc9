// Starts and stops a felix-broker child process for this demo (the demo talks to it only
// through @felix/client). FELIX_BROKER_MAIN overrides where the built broker lives.
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

const BROKER_MAIN =
  process.env.FELIX_BROKER_MAIN ??
  resolve(import.meta.dirname, '..', '..', 'services', 'broker', 'dist', 'main.js');

export function freePort() {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => {
        const udp = createSocket('udp4');
        udp.once('error', () => freePort().then(done, fail));
        udp.bind(port, '127.0.0.1', () => udp.close(() => done(port)));
      });
    });
  });
}

/** Starts a broker over `dir` (config + data) and resolves once it listens. */
export async function startBroker({ dir, yaml, port, httpPort }) {
  const configPath = join(dir, 'broker.yaml');
  writeFileSync(configPath, yaml);
  const child = spawn(process.execPath, [BROKER_MAIN], {
    env: {
      ...process.env,
      FELIX_BROKER_CONFIG: configPath,
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (c) => {
    err += c;
  });
  const listening = await new Promise((done, fail) => {
    let out = '';
    const timer = setTimeout(
      () => fail(new Error(`broker did not listen within 30 s: ${err}`)),
      30_000,
    );
    child.once('exit', (code) =>
      fail(new Error(`broker exited (${code}) before listening: ${err}`)),
    );
    child.stdout.on('data', (c) => {
      out += c;
      const line = out.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (line) {
        clearTimeout(timer);
        out = '';
        child.stdout.resume(); // later log lines are not read; keep the pipe flowing
        done(JSON.parse(line));
      }
    });
  });
  const exited = new Promise((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  return {
    fingerprint: listening.cert_fingerprint,
    kill: () => {
      child.kill('SIGKILL');
      return exited;
    },
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
