// Goal: felixctl creates, lists and deletes catalog resources against a live server, prints
// tables by default and JSON with --json, and reports API errors with their code.
// Method: the app listening on a loopback port; felixctl run in-process with captured output.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFelixctl } from '../src/cli/felixctl.js';
import { type OpenedStore, openTestStore, testApp } from './helpers.js';

let opened: OpenedStore;
let built: Awaited<ReturnType<typeof testApp>>;
let url: string;

beforeAll(async () => {
  opened = await openTestStore('sqlite');
  built = await testApp(opened.store);
  url = await built.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await built.app.close();
  await opened.cleanup();
});

/** fetch with the token the test helpers pick for the path (felixctl sends none of its own yet). */
const authedFetch: typeof fetch = async (input, init) => {
  const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
  const token = await built.tokens.forUrl(path);
  const headers = new Headers(init?.headers);
  if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

async function ctl(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runFelixctl(['--url', url, ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    fetch: authedFetch,
    env: {},
  });
  return { code, out, err };
}

describe('felixctl', () => {
  it('felixctl_manages_the_catalog_with_tables_and_json', async () => {
    expect((await ctl('tenants', 'create', 'acme')).code).toBe(0);
    expect((await ctl('namespaces', 'create', 'acme', 'prod')).code).toBe(0);
    const created = await ctl(
      'streams',
      'create',
      'acme',
      'prod',
      'orders',
      '--shards',
      '3',
      '--consistency',
      'Quorum',
    );
    expect(created.code).toBe(0);
    expect(created.out[0]).toMatch(/^TENANT_ID\s+NAMESPACE\s+STREAM\s+SHARDS/);
    expect(created.out[1]).toMatch(/^acme\s+prod\s+orders\s+3\s+1\s+Quorum\s+false\s+modulo$/);
    expect((await ctl('caches', 'create', 'acme', 'prod', 'sessions')).code).toBe(0);
    const json = await ctl('--json', 'streams', 'list', 'acme', 'prod');
    expect(JSON.parse(json.out.join('\n'))).toMatchObject([{ stream: 'orders', shards: 3 }]);
    const caches = await ctl('--json', 'caches', 'list', 'acme', 'prod');
    expect(JSON.parse(caches.out.join('\n'))).toMatchObject([{ cache: 'sessions' }]);
    expect((await ctl('streams', 'delete', 'acme', 'prod', 'orders')).out).toEqual([
      'deleted stream acme/prod/orders',
    ]);
    expect(
      JSON.parse((await ctl('--json', 'streams', 'list', 'acme', 'prod')).out.join('\n')),
    ).toEqual([]);
    const nodes = await ctl('nodes');
    expect(nodes.out[0]).toMatch(/^NODE\.NODE_ID/);
  });

  it('felixctl_reports_an_api_error_with_its_code', async () => {
    // An operator may delete any tenant, so a missing one is a 404 (a route inside a missing
    // tenant would be a 401: no token can name it).
    const r = await ctl('tenants', 'delete', 'missing');
    expect(r.code).toBe(1);
    expect(r.err.join('\n')).toContain('404 FELIX_CONTROLPLANE_TENANT_NOT_FOUND');
  });
});
