// Goal: scripts/dev-token.mjs, the README's way to mint tokens on a laptop, says what to do when
// it cannot: a wrong bootstrap secret, a tenant the control plane never initialized, a listener
// that does not run; and prints a token when it can.
// Method: a real control plane (the built dist) with its bootstrap listener and dev tokens on,
// tenant t1 initialized through the listener; the script run as a child process against it.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SECRET = 'dev-token-test-secret-0123456789abcdef';
/** How long the control plane may take to listen on a loaded machine. */
const START_DEADLINE_MS = 60_000;

/** A TCP port on 127.0.0.1 free at the time of the call. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function devToken(url: string, secret: string, args: string[], ttl?: string) {
  return spawnSync(process.execPath, [join(ROOT, 'scripts', 'dev-token.mjs'), ...args], {
    env: {
      PATH: process.env.PATH,
      FELIX_BOOTSTRAP_URL: url,
      FELIX_BOOTSTRAP_TOKEN: secret,
      ...(ttl === undefined ? {} : { FELIX_DEV_TOKEN_TTL: ttl }),
    },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('scripts/dev-token.mjs', () => {
  let cp: ChildProcess | undefined;
  let dir = '';
  let boot = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'felix-dev-token-'));
    const [apiPort, bootPort] = [await freePort(), await freePort()];
    boot = `http://127.0.0.1:${bootPort}`;
    cp = spawn(process.execPath, [join(ROOT, 'services', 'control-plane', 'dist', 'main.js')], {
      env: {
        PATH: process.env.PATH,
        FELIX_CONTROLPLANE_BIND: `127.0.0.1:${apiPort}`,
        FELIX_CONTROLPLANE_DATA_DIR: dir,
        FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
        FELIX_BOOTSTRAP_ENABLED: 'true',
        FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
        FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${bootPort}`,
        FELIX_BOOTSTRAP_TOKEN: SECRET,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the control plane did not listen: ${out}`)),
        START_DEADLINE_MS,
      );
      const seen = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('"event":"listening"')) {
          clearTimeout(timer);
          resolve();
        }
      };
      cp?.stdout?.on('data', seen);
      cp?.stderr?.on('data', seen);
      cp?.once('exit', () => reject(new Error(`the control plane exited: ${out}`)));
    });
    const init = await fetch(`${boot}/internal/bootstrap/tenants/t1/initialize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': SECRET },
      body: JSON.stringify({ initial_admin_principals: ['admin'] }),
    });
    expect(init.status).toBe(200);
  }, START_DEADLINE_MS + 10_000);

  afterAll(() => {
    cp?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('dev_token_prints_a_token_of_an_initialized_tenant', () => {
    const run = devToken(boot, SECRET, [
      't1',
      'me',
      'broker',
      'stream.publish:stream:t1/default/*',
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim().split('.')).toHaveLength(3);
  });

  it('dev_token_says_what_to_fix_when_it_cannot_mint', async () => {
    const wrong = devToken(boot, `${SECRET}-not`, ['t1', 'me', 'broker', 'x']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(
      /401 FELIX_CONTROLPLANE_UNAUTHENTICATED .*FELIX_BOOTSTRAP_TOKEN must be the value the control plane was started with/,
    );
    const never = devToken(boot, SECRET, ['t9', 'me', 'broker', 'stream.publish:stream:t9/d/*']);
    expect(never.status).toBe(1);
    expect(never.stderr).toMatch(
      /tenant t9 is not initialized on this control plane: run the quickstart/,
    );
    const unset = devToken(boot, '', ['t1', 'me', 'broker', 'x']);
    expect(unset.status).toBe(2);
    expect(unset.stderr).toMatch(/FELIX_BOOTSTRAP_TOKEN is not set/);
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const down = devToken(nobody, SECRET, ['t1', 'me', 'broker', 'x']);
    expect(down.status).toBe(1);
    // fetch's own words were "fetch failed"; the refusal is what says the listener is not there.
    expect(down.stderr).toMatch(/did not answer \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)/);
  });

  it('dev_token_ttl_sets_how_long_the_token_lasts', () => {
    const args = ['t1', 'me', 'broker', 'stream.publish:stream:t1/default/*'];
    const lifetimeOf = (token: string) => {
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
      return claims.exp - claims.iat;
    };
    const plain = devToken(boot, SECRET, args);
    expect(plain.status, plain.stderr).toBe(0);
    expect(lifetimeOf(plain.stdout.trim())).toBe(900);
    const day = devToken(boot, SECRET, args, '86400');
    expect(day.status, day.stderr).toBe(0);
    expect(lifetimeOf(day.stdout.trim())).toBe(86_400);
    const bad = devToken(boot, SECRET, args, '1h');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/FELIX_DEV_TOKEN_TTL must be whole seconds/);
  });
});
