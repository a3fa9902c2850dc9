// Goal: the built felix-controlplane binary serves on its SQLite file under the data directory,
// stops cleanly on SIGTERM, and finds its catalog again after a restart (a SIGKILL loses nothing
// acknowledged either); two processes on one Postgres serve one state and one survives the
// other's SIGKILL. Method: real child processes from dist/ (built by `pnpm test`).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, spawnNode, tempDir, withDeadline } from '@felix/testing-harness';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ConfigInvalidError } from '../src/errors.js';
import { POSTGRES_URL, freshSchema } from './helpers.js';

const MAIN = resolve(import.meta.dirname, '../dist/main.js');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BOOTSTRAP_TOKEN = randomBytes(24).toString('hex');

async function start(dataDir: string, postgresSchema?: string) {
  const port = await freePort();
  const bootPort = await freePort();
  const child = spawnNode([MAIN], {
    env: {
      FELIX_CONTROLPLANE_BIND: `127.0.0.1:${port}`,
      FELIX_CONTROLPLANE_DATA_DIR: dataDir,
      FELIX_CONTROLPLANE_POSTGRES_URL: postgresSchema ? POSTGRES_URL : '',
      FELIX_CONTROLPLANE_POSTGRES_SCHEMA: postgresSchema ?? '',
      FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
      FELIX_BOOTSTRAP_ENABLED: 'true',
      FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${bootPort}`,
      FELIX_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN,
      FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
    },
  });
  cleanups.push(() => child.kill());
  // Generous: the suite runs on a shared, often loaded machine (start waits on the store too).
  await child.waitForOutput('"event":"listening"', 'the control plane to listen', 60_000);
  return { child, url: `http://127.0.0.1:${port}`, boot: `http://127.0.0.1:${bootPort}` };
}

/**
 * Initializes `tenant` through the bootstrap listener (once; a 409 means it already was) and
 * mints a control-plane token of its admin: the operator's when `operator` is set.
 */
async function adminToken(boot: string, tenant: string, operator = false): Promise<string> {
  const post = (path: string, body: unknown) =>
    fetch(`${boot}/internal/bootstrap/tenants/${tenant}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': BOOTSTRAP_TOKEN },
      body: JSON.stringify(body),
    });
  const init = await post('initialize', { initial_admin_principals: ['admin'], operator });
  expect([200, 409]).toContain(init.status);
  const permissions = operator
    ? ['tenant.manage:cluster:*', 'node.view:cluster:*', 'node.manage:cluster:*']
    : [`tenant.manage:tenant:${tenant}`];
  const minted = await post('dev-token', {
    principal: 'admin',
    permissions,
    audience: 'felix-controlplane',
  });
  expect(minted.status).toBe(200);
  return ((await minted.json()) as { token: string }).token;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('felix-controlplane process', () => {
  it('a_control_plane_that_cannot_start_says_why_in_one_line', async () => {
    const dir = await tempDir('felix-cp-bad');
    cleanups.push(dir.cleanup);
    const run = spawnSync(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH,
        FELIX_CONTROLPLANE_BIND: '127.0.0.1:0',
        FELIX_CONTROLPLANE_DATA_DIR: dir.path,
        FELIX_BOOTSTRAP_ENABLED: 'true',
        FELIX_BOOTSTRAP_TOKEN: 'too-short',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    // Before, the line was followed by the error's stack, ten lines of node internals.
    expect(run.stderr).toBe(
      'felix-controlplane: FELIX_BOOTSTRAP_TOKEN must be at least 32 characters ' +
        '[FELIX_CONTROLPLANE_CONFIG_INVALID]\n',
    );
  });

  it('a_control_plane_refuses_an_unknown_log_level_at_start', async () => {
    expect(() => loadConfig({ FELIX_CONTROLPLANE_LOG_LEVEL: 'verbose' })).toThrow(
      ConfigInvalidError,
    );
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
      expect(loadConfig({ FELIX_CONTROLPLANE_LOG_LEVEL: level }).logLevel).toBe(level);
    const dir = await tempDir('felix-cp-level');
    cleanups.push(dir.cleanup);
    const run = spawnSync(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH,
        FELIX_CONTROLPLANE_BIND: '127.0.0.1:0',
        FELIX_CONTROLPLANE_DATA_DIR: dir.path,
        FELIX_CONTROLPLANE_LOG_LEVEL: 'verbose',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    // One line naming the variable and the levels, not pino's stack trace.
    expect(run.stderr).toBe(
      'felix-controlplane: FELIX_CONTROLPLANE_LOG_LEVEL=verbose must be one of trace, debug, ' +
        'info, warn, error, fatal, silent [FELIX_CONTROLPLANE_CONFIG_INVALID]\n',
    );
  });

  it('the_control_plane_process_keeps_its_catalog_across_restarts', async () => {
    expect(existsSync(MAIN), 'build the package first (pnpm test builds)').toBe(true);
    const dir = await tempDir('felix-cp-proc');
    cleanups.push(dir.cleanup);
    const first = await start(dir.path);
    expect((await fetch(`${first.url}/v1/system/ready`)).status).toBe(200);
    const op = await adminToken(first.boot, 'operator', true);
    const created = await fetch(`${first.url}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(op) },
      body: JSON.stringify({ tenant_id: 'kept' }),
    });
    expect(created.status).toBe(201);
    expect(existsSync(join(dir.path, 'controlplane.sqlite'))).toBe(true);
    expect((await first.child.stop()).code).toBe(0);

    const second = await start(dir.path);
    // The token minted by the first process still verifies: the key lives in the store.
    const killed = await fetch(`${second.url}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(op) },
      body: JSON.stringify({ tenant_id: 'acked-before-kill' }),
    });
    expect(killed.status).toBe(201);
    await second.child.kill();

    const third = await start(dir.path);
    const list = (await (
      await fetch(`${third.url}/v1/tenants`, { headers: bearer(op) })
    ).json()) as {
      items: { tenant_id: string }[];
    };
    expect(list.items.map((t) => t.tenant_id)).toEqual(['acked-before-kill', 'kept', 'operator']);
    expect((await third.child.stop()).code).toBe(0);
  });

  it('two_control_plane_processes_on_one_postgres_serve_one_state_and_survive_a_kill', async () => {
    expect(existsSync(MAIN), 'build the package first (pnpm test builds)').toBe(true);
    const schema = freshSchema();
    cleanups.push(async () => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    });
    const dir = await tempDir('felix-cp-ha');
    cleanups.push(dir.cleanup);
    // Both start at once on an empty schema: the migrations run once, under the advisory lock.
    const [a, b] = await Promise.all([start(dir.path, schema), start(dir.path, schema)]);
    const op = await adminToken(a.boot, 'operator', true);
    let token = op;
    const json = (url: string, method = 'GET', body?: unknown) =>
      fetch(url, {
        method,
        headers: {
          ...bearer(url.includes('/v1/tenants/t1/') ? token : op),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await json(`${a.url}/v1/tenants`, 'POST', { tenant_id: 't1' })).status).toBe(201);
    // The tenant made through the API gets its keys and admin through B's bootstrap listener.
    token = await adminToken(b.boot, 't1');
    expect(
      (await json(`${b.url}/v1/tenants/t1/namespaces`, 'POST', { namespace: 'ns' })).status,
    ).toBe(201);
    const reg = await json(`${b.url}/v1/nodes`, 'POST', {
      node_id: 'n1',
      advertise_addr: 'n1:5001',
      incarnation: 1,
    });
    expect(reg.status).toBe(200);

    // A long poll parked on B answers a write made through A.
    const snap = (await (await json(`${b.url}/v1/streams/snapshot`)).json()) as {
      next_seq: number;
    };
    const poll = json(`${b.url}/v1/streams/changes?since=${snap.next_seq}&wait_ms=20000`);
    expect(
      (
        await json(`${a.url}/v1/tenants/t1/namespaces/ns/streams`, 'POST', {
          stream: 's1',
          shards: 2,
        })
      ).status,
    ).toBe(201);
    const woke = (await (await withDeadline(poll, 10_000, 'the poll on B to answer')).json()) as {
      items: { item: { stream: string } }[];
    };
    expect(woke.items.map((c) => c.item.stream)).toEqual(['s1']);
    const assigned = (await (await json(`${b.url}/v1/shard-assignments`)).json()) as {
      items: { leader: string }[];
    };
    expect(assigned.items.map((x) => x.leader)).toEqual(['n1', 'n1']);

    // Kill A outright: B keeps serving the same state.
    await a.child.kill();
    expect((await json(`${b.url}/v1/system/ready`)).status).toBe(200);
    expect(
      (await json(`${b.url}/v1/tenants/t1/namespaces/ns/streams`, 'POST', { stream: 's2' })).status,
    ).toBe(201);
    const list = (await (await json(`${b.url}/v1/tenants/t1/namespaces/ns/streams`)).json()) as {
      items: { stream: string }[];
    };
    expect(list.items.map((x) => x.stream)).toEqual(['s1', 's2']);
    expect((await b.child.stop()).code).toBe(0);
  });
});
