// Runs a felix-broker child process for this demo: writes its YAML, picks free ports, waits for
// the `listening` log line and hands back the URL and certificate fingerprint the client needs.
// The demo itself talks to the broker only through @felix/client. FELIX_BROKER_MAIN overrides
// the path of the built broker (default services/broker/dist/main.js).
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

const MAIN =
  process.env.FELIX_BROKER_MAIN ??
  resolve(import.meta.dirname, '..', '..', 'services', 'broker', 'dist', 'main.js');

/** A port free on both TCP (TLS) and UDP (QUIC). */
function portFreeOnBoth() {
  return new Promise((resolvePort, reject) => {
    const tcp = createServer();
    tcp.once('error', reject);
    tcp.listen(0, '127.0.0.1', () => {
      const { port } = tcp.address();
      tcp.close(() => {
        const udp = createSocket('udp4');
        udp.once('error', () => portFreeOnBoth().then(resolvePort, reject));
        udp.bind(port, '127.0.0.1', () => udp.close(() => resolvePort(port)));
      });
    });
  });
}

/**
 * Starts a broker with `yaml` as its catalog under `.felix/<name>/` (wiped first); `env` adds
 * FELIX_* settings. Resolves with { url(transport), fingerprint, stop() }.
 */
export async function runBroker(name, yaml, env = {}) {
  const dir = resolve(process.cwd(), '.felix', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'broker.yaml'), yaml);
  const port = await portFreeOnBoth();
  const httpPort = await portFreeOnBoth();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      FELIX_BROKER_CONFIG: join(dir, 'broker.yaml'),
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
      FELIX_BROKER_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A demo that crashes must not leave its broker behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const listening = await new Promise((ok, fail) => {
    let buffered = '';
    const timer = setTimeout(() => fail(new Error(`no broker after 30 s: ${stderr}`)), 30_000);
    child.once('exit', (code) => fail(new Error(`broker exited with ${code}: ${stderr}`)));
    const onData = (chunk) => {
      buffered += chunk;
      const line = buffered.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (line === undefined) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stdout.resume();
      ok(JSON.parse(line));
    };
    child.stdout.on('data', onData);
  });
  const exited = new Promise((ok) => child.once('exit', ok));
  return {
    url: (transport = 'quic') => `${transport}://127.0.0.1:${port}`,
    fingerprint: listening.cert_fingerprint,
    stop: () => {
      process.off('exit', killOnExit);
      child.kill('SIGTERM');
      return exited;
    },
  };
}
