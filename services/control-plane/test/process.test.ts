// Goal: the built felix-controlplane binary serves on its SQLite file under the data directory,
// stops cleanly on SIGTERM, and finds its catalog again after a restart; a SIGKILL loses
// nothing acknowledged either. Method: real child processes from dist/ (built by `pnpm test`).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, spawnNode, tempDir } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';

const MAIN = resolve(import.meta.dirname, '../dist/main.js');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(dataDir: string) {
  const port = await freePort();
  const child = spawnNode([MAIN], {
    env: {
      FELIX_CONTROLPLANE_BIND: `127.0.0.1:${port}`,
      FELIX_CONTROLPLANE_DATA_DIR: dataDir,
      FELIX_CONTROLPLANE_POSTGRES_URL: '',
      FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
    },
  });
  cleanups.push(() => child.kill());
  await child.waitForOutput('"event":"listening"', 'the control plane to listen', 20_000);
  return { child, url: `http://127.0.0.1:${port}` };
}

describe('felix-controlplane process', () => {
  it('the_control_plane_process_keeps_its_catalog_across_restarts', async () => {
    expect(existsSync(MAIN), 'build the package first (pnpm test builds)').toBe(true);
    const dir = await tempDir('felix-cp-proc');
    cleanups.push(dir.cleanup);
    const first = await start(dir.path);
    expect((await fetch(`${first.url}/v1/system/ready`)).status).toBe(200);
    const created = await fetch(`${first.url}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: 'kept' }),
    });
    expect(created.status).toBe(201);
    expect(existsSync(join(dir.path, 'controlplane.sqlite'))).toBe(true);
    expect((await first.child.stop()).code).toBe(0);

    const second = await start(dir.path);
    const killed = await fetch(`${second.url}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: 'acked-before-kill' }),
    });
    expect(killed.status).toBe(201);
    await second.child.kill();

    const third = await start(dir.path);
    const list = (await (await fetch(`${third.url}/v1/tenants`)).json()) as {
      items: { tenant_id: string }[];
    };
    expect(list.items.map((t) => t.tenant_id)).toEqual(['acked-before-kill', 'kept']);
    expect((await third.child.stop()).code).toBe(0);
  });
});
