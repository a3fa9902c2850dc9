// Goal: a broker whose client port is taken when it first starts is started again on fresh ports
// (up to BROKER_START_ATTEMPTS_MAX), and a broker that cannot start at all fails with a typed
// error naming its log.
// Method: one real broker process (standalone, dev auth: no control plane is under test here)
// given first a port a TCP listener of the test holds, then free ones.
import { createServer } from 'node:net';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, tempDir } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../src/cluster/broker.js';
import { makeClusterPki } from '../src/cluster/pki.js';
import { ProcessStartError } from '../src/index.js';

const STANDALONE = { FELIX_AUTH_MODE: 'dev', FELIX_CONTROLPLANE_URL: '' };

describe('a broker first start', () => {
  const undo: Array<() => Promise<void>> = [];
  afterEach(async () => {
    while (undo.length > 0) await undo.pop()?.();
  });

  async function broker(env: NodeJS.ProcessEnv): Promise<Broker> {
    const dir = await tempDir('felix-broker-start-');
    undo.push(dir.cleanup);
    const pki = await makeClusterPki(dir.path);
    await mkdir(join(dir.path, 'n0'));
    const b = new Broker({ index: 0, dir: join(dir.path, 'n0'), tls: await pki.issue('n0'), env });
    undo.push(() => b.proc.kill());
    return b;
  }

  it('a_broker_whose_port_is_taken_at_its_first_start_starts_on_fresh_ports', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    undo.push(() => new Promise<void>((r) => taken.close(() => r())));
    const busy = (taken.address() as { port: number }).port;
    const b = await broker(STANDALONE);
    const handed: number[] = [];
    await b.firstStart(async () => {
      const port = handed.length === 0 ? busy : await freePort();
      handed.push(port);
      return port;
    });
    expect(b.state).toBe('running');
    expect(handed.length).toBe(4);
    expect(b.port).not.toBe(busy);
    expect(b.port).toBe(handed[2]);
  });

  it('a_broker_that_cannot_start_fails_with_a_typed_error_naming_its_log', async () => {
    // Tokens mode with no control plane and no keys file: the broker refuses to start.
    const b = await broker({ FELIX_CONTROLPLANE_URL: '' });
    const err = await b.firstStart().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProcessStartError);
    expect((err as Error).message).toContain(b.logPath);
    expect(b.state).toBe('stopped');
  });
});
