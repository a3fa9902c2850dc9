// Starts and stops a standalone felix-broker child process for a demo. The demo itself talks to
// the broker only through @felix/client; this file is the one place the demos share.
// FELIX_BROKER_MAIN overrides the path of the built broker (default services/broker/dist/main.js).
import { demoCredentials, tenantsOf } from './tokens.mjs';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

/** The node flags every broker launcher passes (services/broker/node-flags.json says why). */
const BROKER_NODE_FLAGS = JSON.parse(
  readFileSync(
    resolve(import.meta.dirname, '..', '..', 'services', 'broker', 'node-flags.json'),
    'utf8',
  ),
).flags;
const BROKER_MAIN =
  process.env.FELIX_BROKER_MAIN ??
  resolve(import.meta.dirname, '..', '..', 'services', 'broker', 'dist', 'main.js');
const LISTEN_DEADLINE_MS = 30_000;

/** A port free on both TCP (TLS) and UDP (QUIC) at the time of the call. */
export function freePort() {
  return new Promise((done, fail) => {
    const tcp = createServer();
    tcp.once('error', fail);
    tcp.listen(0, '127.0.0.1', () => {
      const { port } = tcp.address();
      tcp.close(() => {
        const udp = createSocket('udp4');
        udp.once('error', () => freePort().then(done, fail));
        udp.bind(port, '127.0.0.1', () => udp.close(() => done(port)));
      });
    });
  });
}

/**
 * Starts a broker over `dir` (its YAML catalog and data live there) and resolves once it
 * listens, with { url(transport), fingerprint, kill(), stop() }. `env` adds FELIX_* settings.
 */
export async function startBroker({ dir, yaml, port, httpPort, env = {} }) {
  mkdirSync(dir, { recursive: true });
  const configPath = join(dir, 'broker.yaml');
  writeFileSync(configPath, yaml);
  // The secure path unless the demo asks otherwise: the broker verifies tokens signed with the
  // tenants' keys kept here, and the demo connects with `tokenFor(tenant)`.
  const creds = await demoCredentials(dir, tenantsOf(yaml));
  const child = spawn(process.execPath, [...BROKER_NODE_FLAGS, BROKER_MAIN], {
    env: {
      ...process.env,
      FELIX_BROKER_CONFIG: configPath,
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
      FELIX_AUTH_MODE: 'tokens',
      FELIX_AUTH_KEYS_FILE: creds.keysFile,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A demo that crashes must not leave its broker behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const listening = await new Promise((done, fail) => {
    let buffered = '';
    const timer = setTimeout(
      () => fail(new Error(`broker did not listen within 30 s: ${stderr}`)),
      LISTEN_DEADLINE_MS,
    );
    child.once('exit', (code) =>
      fail(new Error(`broker exited (${code}) before listening: ${stderr}`)),
    );
    const onData = (chunk) => {
      buffered += chunk;
      const line = buffered.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (line === undefined) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stdout.resume(); // later log lines are not read; keep the pipe flowing
      done(JSON.parse(line));
    };
    child.stdout.on('data', onData);
  });
  const exited = new Promise((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  const end = (signal) => {
    process.off('exit', killOnExit);
    child.kill(signal);
    return exited;
  };
  return {
    url: (transport = 'quic') => `${transport}://127.0.0.1:${port}`,
    fingerprint: listening.cert_fingerprint,
    /** A token of `tenant` for this broker (the data permissions a demo uses). */
    tokenFor: creds.tokenFor,
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
  };
}

/**
 * Starts a fresh broker for demo `name` under `.felix/<name>/` (wiped first) on free ports.
 * Ctrl-C ends the demo and, through the exit hook, its broker.
 */
export async function runBroker(name, yaml, env = {}) {
  const dir = resolve(process.cwd(), '.felix', name);
  rmSync(dir, { recursive: true, force: true });
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));
  return startBroker({ dir, yaml, port: await freePort(), httpPort: await freePort(), env });
}
