// Goal: felixctl creates, lists and deletes catalog resources against a live server, prints
// tables by default and JSON with --json, and reports API errors with their code; `login`
// stores its token in a file only its owner can read, and every command sends the token.
// Method: the app listening on a loopback port; felixctl run in-process with captured output;
// a recording fetch for the requests' headers.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { releasedTcpPort, tempDir } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, runFelixctl } from '../src/cli/felixctl.js';
import { startFakeIdp } from './fake-idp.js';
import { tokenEnv } from './token-fixture.js';
import { type OpenedStore, openTestStore, testApp } from './helpers.js';

let opened: OpenedStore;
let built: Awaited<ReturnType<typeof testApp>>;
let url: string;
let home: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  home = await tempDir('felixctl');
  opened = await openTestStore('sqlite');
  built = await testApp(opened.store);
  url = await built.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await built.app.close();
  await opened.cleanup();
  await home.cleanup();
});

/** fetch with the token the test helpers pick for the path (no token is stored for these runs). */
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
    env: { FELIX_CONFIG: join(home.path, 'catalog.json') },
  });
  return { code, out, err };
}

/** Runs felixctl against a fetch that records each request and answers `answer(path)`. */
async function recorded(
  env: CliIo['env'],
  argv: string[],
  answer: (path: string) => unknown = () => ({}),
) {
  const requests: { method: string; path: string; auth: string | null; body: unknown }[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const fakeFetch = (async (input: URL | string, init?: RequestInit) => {
    const u = new URL(String(input));
    const headers = new Headers(init?.headers);
    requests.push({
      method: init?.method ?? 'GET',
      path: u.pathname + u.search,
      auth: headers.get('authorization'),
      body: init?.body ? JSON.parse(String(init.body)) : undefined,
    });
    const a = answer(u.pathname);
    return a instanceof Response ? a : new Response(JSON.stringify(a), { status: 200 });
  }) as typeof fetch;
  const code = await runFelixctl(argv, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    fetch: fakeFetch,
    env,
  });
  return { code, out, err, requests };
}

/** A control-plane token as felixctl reads it at login (unsigned: login reads, never verifies). */
function cpToken(tenant = 't1', claims: Record<string, unknown> = {}): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const payload = {
    aud: 'felix-controlplane',
    tid: tenant,
    exp: Math.floor(Date.now() / 1000) + 3_600,
    ...claims,
  };
  return `${part({ alg: 'EdDSA', kid: 'k1' })}.${part(payload)}.c2ln`;
}
const TOK1 = cpToken();
const STORED = cpToken();

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
    expect(created.out[1]).toMatch(
      /^acme\s+prod\s+orders\s+3\s+1\s+Quorum\s+false\s+modulo\s+-\s+-$/,
    );
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

  it('felixctl_streams_tables_show_the_retention_a_stream_was_created_with', async () => {
    // Before, the table left retention out: a stream created with --max-age-seconds printed
    // nothing that said the bound was kept, and `streams list` could not show it without --json.
    expect((await ctl('tenants', 'create', 'keep')).code).toBe(0);
    expect((await ctl('namespaces', 'create', 'keep', 'ns')).code).toBe(0);
    const created = await ctl(
      ...['streams', 'create', 'keep', 'ns', 'logs', '--durable', '--max-age-seconds', '600'],
    );
    expect(created.code).toBe(0);
    expect(created.out[0]).toMatch(/\sRETENTION\.MAX_AGE_SECONDS\s+RETENTION\.MAX_SIZE_BYTES$/);
    expect(created.out[1]).toMatch(/\strue\s+modulo\s+600\s+-$/);
    const listed = await ctl('streams', 'list', 'keep', 'ns');
    expect(listed.out[1]).toMatch(/^keep\s+ns\s+logs\s.*\s600\s+-$/);
  });

  it('felixctl_nodes_and_assignments_take_list_as_every_other_group_does', async () => {
    // `felixctl nodes list` failed with "too many arguments" (a new-user trial) where
    // `streams list` works; both forms list now, the options after either.
    for (const args of [['nodes'], ['nodes', 'list']]) {
      const r = await ctl(...args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.out[0], args.join(' ')).toMatch(/^NODE\.NODE_ID/);
    }
    for (const args of [
      ['assignments'],
      ['assignments', '--leader', 'n1'],
      ['assignments', 'list', '--leader', 'n1'],
    ]) {
      const r = await ctl('--json', ...args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(JSON.parse(r.out.join('\n')), args.join(' ')).toEqual([]);
    }
    // The filter reaches the request whichever form named it.
    for (const args of [
      ['assignments', '--leader', 'n1'],
      ['assignments', 'list', '--leader', 'n1'],
    ]) {
      const r = await recorded({}, ['--url', 'http://cp', ...args], () => ({ items: [] }));
      expect(
        r.requests.map((q) => q.path),
        args.join(' '),
      ).toContain('/v1/shard-assignments?leader=n1');
    }
  });

  it('felixctl_reports_an_api_error_with_its_code', async () => {
    // An operator may delete any tenant, so a missing one is a 404 (a route inside a missing
    // tenant would be a 401: no token can name it).
    const r = await ctl('tenants', 'delete', 'missing');
    expect(r.code).toBe(1);
    expect(r.err.join('\n')).toContain('404 FELIX_CONTROLPLANE_TENANT_NOT_FOUND');
  });

  it('felixctl_accept_loss_needs_yes_and_names_the_shards_it_moved', async () => {
    const env = { FELIX_CONFIG: join(home.path, 'loss.json') };
    const unconfirmed = await recorded(env, ['accept-loss', 'b0']);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.requests).toEqual([]);
    expect(unconfirmed.err.join('\n')).toContain('--yes');
    const moved = { kind: 'cache', tenant_id: 't1', namespace: 'ns', stream: 'users', shard: 0 };
    const ok = await recorded(env, ['accept-loss', 'b0', '--yes'], () => ({
      moved: [{ ...moved, leader: 'b1', replicas: ['b1'], generation: 2, state: 'active' }],
      still_led: 0,
    }));
    expect(ok.code, ok.err.join()).toBe(0);
    expect(ok.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/nodes/b0/accept-loss',
    ]);
    expect(ok.out.join('\n')).toContain('1 shard(s) moved off b0; it still leads 0');
  });

  it('felixctl_json_accept_loss_prints_one_json_document_with_what_it_moved_and_still_leads', async () => {
    // A new user's trial: `felixctl --json accept-loss` printed `[]` and then the human line
    // "0 shard(s) moved off ...; it still leads 0" on stdout, which `| jq` refuses, and the
    // JSON left out `still_led`.
    const env = { FELIX_CONFIG: join(home.path, 'loss-json.json') };
    const r = await recorded(env, ['--json', 'accept-loss', 'b0', '--yes'], () => ({
      moved: [],
      still_led: 1,
    }));
    expect(r.code, r.err.join()).toBe(0);
    const doc = JSON.parse(r.out.join('\n')) as unknown;
    expect(JSON.stringify(doc)).toContain('still_led');
  });

  it('felixctl_replicas_shows_each_followers_offset_and_halt_from_the_latest_reports', async () => {
    // A new user's trial: no felixctl view of followers, in-sync sets or halts; the operator had
    // to curl GET /v1/replica-reports.
    const env = { FELIX_CONFIG: join(home.path, 'replicas.json') };
    const report = (stream: string, halted: { node_id: string; reason: string }[]) => ({
      tenant_id: 't1',
      namespace: 'ns',
      kind: 'stream',
      stream,
      shard: 0,
      generation: 4,
      leader: 'b1',
      leader_offset: 120,
      commit_offset: 118,
      replica_offsets: [
        { node_id: 'b2', durable_offset: 120 },
        { node_id: 'b3', durable_offset: 97 },
      ],
      halted,
      drained: false,
      caught_up: [],
      in_sync: ['b2'],
      reported_at_ms: 1,
    });
    const items = [report('orders', []), report('audit', [{ node_id: 'b3', reason: 'diverged' }])];
    const all = await recorded(env, ['replicas'], () => ({ items }));
    expect(all.code, all.err.join()).toBe(0);
    expect(all.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/replica-reports']);
    expect(all.out[0]).toMatch(
      /^KIND\s+TENANT_ID\s+NAMESPACE\s+NAME\s+SHARD\s+GENERATION\s+LEADER/,
    );
    expect(all.out[1]).toMatch(/orders\s+0\s+4\s+b1\s+120\s+118\s+b2=120,b3=97\s+b2\s+-$/);
    const halted = await recorded(env, ['replicas', '--halted'], () => ({ items }));
    expect(halted.out).toHaveLength(2);
    expect(halted.out[1]).toMatch(/audit .*b3:diverged$/);
    const json = await recorded(env, ['--json', 'replicas', '--name', 'orders'], () => ({ items }));
    expect(JSON.parse(json.out.join('\n'))).toEqual([items[0]]);
  });

  it('felixctl_nodes_delete_forgets_a_retired_node', async () => {
    // Retiring a broker ended with a curl DELETE (an operator trial): felixctl names it now.
    const env = { FELIX_CONFIG: join(home.path, 'nodes-delete.json') };
    const ok = await recorded(
      env,
      ['nodes', 'delete', 'b3'],
      () => new Response(null, { status: 204 }),
    );
    expect(ok.code, ok.err.join()).toBe(0);
    expect(ok.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['DELETE /v1/nodes/b3']);
    expect(ok.out.join('\n')).toContain('deleted node b3');
  });

  it('felixctl_assignments_names_each_shards_resource_beside_its_kind', async () => {
    // The table said STREAM over a cache's name (the API calls either resource `stream`).
    const env = { FELIX_CONFIG: join(home.path, 'assignments.json') };
    const row = { tenant_id: 't1', namespace: 'ns', shard: 0, leader: 'b1', replicas: ['b1'] };
    const r = await recorded(env, ['assignments'], () => ({
      items: [
        { ...row, kind: 'cache', stream: 'users', generation: 1 },
        { ...row, kind: 'stream', stream: 'orders', generation: 2 },
      ],
    }));
    expect(r.code, r.err.join()).toBe(0);
    expect(r.out[0]).toMatch(/^KIND\s+TENANT_ID\s+NAMESPACE\s+NAME\s+SHARD/);
    expect(r.out[1]).toMatch(/^cache\s+t1\s+ns\s+users\s+0/);
    expect(r.out[2]).toMatch(/^stream\s+t1\s+ns\s+orders\s+0/);
  });

  it('felixctl_refuses_a_shard_count_that_is_not_a_whole_number', async () => {
    const env = { FELIX_CONFIG: join(home.path, 'numbers.json') };
    const create = ['streams', 'create', 't1', 'ns', 's'];
    for (const argv of [
      [...create, '--shards', 'abc'],
      [...create, '--shards', '2.5'],
      [...create, '--shards', ''],
      [...create, '--replication-factor', 'three'],
      [...create, '--max-age-seconds', '1e3x'],
      [...create, '--max-size-bytes', '-5'],
      ['caches', 'create', 't1', 'ns', 'c', '--shards', 'many'],
      ['token', 'mint', '--ttl', '60s'],
    ]) {
      const r = await recorded(env, argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.requests, argv.join(' ')).toEqual([]);
      expect(r.err.join('\n'), argv.join(' ')).toContain('is not a whole number');
    }
    const ok = await recorded(env, [...create, '--shards', '4', '--max-age-seconds', '60']);
    expect(ok.code, ok.err.join()).toBe(0);
    expect(ok.requests[0]?.body).toEqual({
      stream: 's',
      shards: 4,
      retention: { max_age_seconds: 60, max_size_bytes: null },
    });
  });

  it('felixctl_creates_a_cache_with_a_default_ttl_and_lists_it', async () => {
    expect((await ctl('tenants', 'create', 'ttl')).code).toBe(0);
    expect((await ctl('namespaces', 'create', 'ttl', 'ns')).code).toBe(0);
    const made = await ctl(
      'caches',
      'create',
      'ttl',
      'ns',
      'sessions',
      '--default-ttl-ms',
      '60000',
    );
    expect(made.code, made.err.join()).toBe(0);
    const listed = await ctl('caches', 'list', 'ttl', 'ns');
    expect(listed.out[0]).toMatch(/DEFAULT_TTL_MS$/);
    expect(listed.out[1]).toMatch(/^ttl\s+ns\s+sessions\s+1\s+1\s+Leader\s+60000$/);
    const bad = await ctl('caches', 'create', 'ttl', 'ns', 'other', '--default-ttl-ms', '1m');
    expect(bad.code).toBe(2);
    expect(bad.err.join('\n')).toContain('is not a whole number');
  });

  it('felixctl_updates_a_streams_settings_and_a_caches_default_ttl_keeping_what_it_does_not_name', async () => {
    const env = { FELIX_CONFIG: join(home.path, 'updates.json') };
    const current = { retention: { max_age_seconds: 600, max_size_bytes: 5_000_000 } };
    const streams = '/v1/tenants/t1/namespaces/ns/streams/s';
    const caches = '/v1/tenants/t1/namespaces/ns/caches/c';
    const r = await recorded(
      env,
      ['streams', 'update', 't1', 'ns', 's', '--max-age-seconds', '60'],
      () => current,
    );
    expect(r.code, r.err.join()).toBe(0);
    // The bound it does not name is kept: a PATCH sets retention whole.
    expect(r.requests.map((q) => [q.method, q.path, q.body])).toEqual([
      ['GET', streams, undefined],
      ['PATCH', streams, { retention: { max_age_seconds: 60, max_size_bytes: 5_000_000 } }],
    ]);
    const off = await recorded(
      env,
      [
        ...['streams', 'update', 't1', 'ns', 's', '--max-size-bytes', 'none'],
        ...['--consistency', 'Quorum'],
      ],
      () => current,
    );
    expect(off.requests.at(-1)?.body).toEqual({
      consistency: 'Quorum',
      retention: { max_age_seconds: 600, max_size_bytes: null },
    });
    const ttl = await recorded(env, [
      'caches',
      'update',
      't1',
      'ns',
      'c',
      '--default-ttl-ms',
      'none',
    ]);
    expect(ttl.requests).toEqual([
      expect.objectContaining({ method: 'PATCH', path: caches, body: { default_ttl_ms: null } }),
    ]);
    for (const argv of [
      ['streams', 'update', 't1', 'ns', 's'],
      // Durability is fixed at creation (a switched stream served its offsets again).
      ['streams', 'update', 't1', 'ns', 's', '--no-durable'],
      ['caches', 'update', 't1', 'ns', 'c'],
      ['caches', 'update', 't1', 'ns', 'c', '--default-ttl-ms', 'soon'],
    ]) {
      const bad = await recorded(env, argv);
      expect(bad.code, argv.join(' ')).toBe(2);
      expect(bad.requests, argv.join(' ')).toEqual([]);
    }
  });

  it('felixctl_names_the_field_and_allowed_values_of_a_bad_enum', async () => {
    expect((await ctl('tenants', 'create', 'enums')).code).toBe(0);
    expect((await ctl('namespaces', 'create', 'enums', 'ns')).code).toBe(0);
    const r = await ctl('streams', 'create', 'enums', 'ns', 's', '--consistency', 'quorum');
    expect(r.code).toBe(1);
    expect(r.err.join('\n')).toContain(
      "FELIX_CONTROLPLANE_INVALID_REQUEST: body/consistency must be one of 'Leader', 'Quorum'",
    );
  });

  it('felixctl_login_stores_the_token_in_a_file_only_its_owner_can_read', async () => {
    const path = join(home.path, 'nested', 'credentials.json');
    const env = { FELIX_CONFIG: path };
    const r = await recorded(env, [
      '--url',
      'http://127.0.0.1:1',
      '--token',
      TOK1,
      'login',
      '--tenant',
      't1',
    ]);
    expect(r.code).toBe(0);
    expect(r.requests).toEqual([]);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      url: 'http://127.0.0.1:1',
      tenant: 't1',
      token: TOK1,
    });
    // A login by OIDC exchange stores the Felix token and the refresh token it got.
    const ex = await recorded(env, ['login', '--tenant', 't1', '--oidc-token', 'upstream'], () => ({
      felix_token: 'tok-2',
      refresh_token: 'rid.secret',
    }));
    expect(ex.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/tenants/t1/token/exchange',
      auth: 'Bearer upstream',
    });
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({
      token: 'tok-2',
      refresh_token: 'rid.secret',
    });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('felixctl_login_refuses_a_token_every_later_command_would_be_refused_with', async () => {
    const env = { FELIX_CONFIG: join(home.path, 'refused.json') };
    const cases: Array<[string, RegExp]> = [
      ['tok-1', /not a Felix token/],
      [cpToken('t1', { aud: 'felix-broker' }), /audience felix-broker, not felix-controlplane/],
      [cpToken('t2'), /for tenant t2, not t1/],
      [cpToken('t1', { exp: 1_000 }), /expired at 1970-01-01T00:16:40\.000Z/],
    ];
    for (const [token, said] of cases) {
      const r = await recorded(env, ['--token', token, 'login', '--tenant', 't1']);
      expect(r.code, token).toBe(2);
      expect(r.err.join('\n'), token).toMatch(said);
      expect(r.requests).toEqual([]);
    }
    await expect(stat(env.FELIX_CONFIG)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('felixctl_says_how_to_log_in_when_the_control_plane_wants_a_token', async () => {
    const r = await recorded(
      { FELIX_CONFIG: join(home.path, 'none.json') },
      ['--url', 'http://127.0.0.1:1', 'tenants', 'list'],
      () =>
        new Response(
          JSON.stringify({
            code: 'FELIX_CONTROLPLANE_UNAUTHENTICATED',
            message: 'this route needs Authorization: Bearer <felix-controlplane token>',
          }),
          { status: 401 },
        ),
    );
    expect(r.code).toBe(1);
    expect(r.err.join('\n')).toMatch(/401 FELIX_CONTROLPLANE_UNAUTHENTICATED: .*hint: log in/);
  });

  it('felixctl_refused_while_felix_token_is_set_says_it_replaces_the_login', async () => {
    const r = await recorded(
      { FELIX_CONFIG: join(home.path, 'none.json'), FELIX_TOKEN: 'a.broker.token' },
      ['--url', 'http://127.0.0.1:1', 'streams', 'list', 't1', 'default'],
      () =>
        new Response(
          JSON.stringify({
            code: 'FELIX_CONTROLPLANE_UNAUTHENTICATED',
            message: 'token refused: the token is not for audience felix-controlplane',
          }),
          { status: 401 },
        ),
    );
    expect(r.code).toBe(1);
    expect(r.err.join('\n')).toMatch(/hint: FELIX_TOKEN is set and replaces the stored login/);
  });

  it('every_felixctl_command_sends_the_stored_token', async () => {
    const path = join(home.path, 'every.json');
    const env = { FELIX_CONFIG: path };
    await recorded(env, [
      '--url',
      'http://127.0.0.1:1',
      '--token',
      STORED,
      'login',
      '--tenant',
      't1',
    ]);
    const answer = (p: string) =>
      p.endsWith('/token/refresh') || p.endsWith('/token/delegate')
        ? { felix_token: 'minted', refresh_token: 'r2.s2' }
        : p.endsWith('/revoke')
          ? { revoked: 0 }
          : { items: [], next_cursor: null };
    const commands = [
      ['tenants', 'list'],
      ['namespaces', 'create', 't1', 'ns'],
      ['streams', 'list', 't1', 'ns'],
      ['nodes'],
      ['rbac', 'policies', 'list', 't1'],
      ['rbac', 'policies', 'add', 't1', 'app', 'stream.publish:stream:t1/ns/*'],
      ['rbac', 'policies', 'remove', 't1', 'app', 'stream.publish:stream:t1/ns/*'],
      ['rbac', 'bindings', 'add', 't1', 'group:https://idp#ops', 'app'],
      ['rbac', 'bindings', 'remove', 't1', 'p1', 'app'],
      ['idp-issuers', 'list', 't1'],
      ['token', 'mint', '--permission', 'stream.publish:stream:t1/ns/*'],
      ['token', 'revoke', 'p1'],
    ];
    for (const argv of commands) {
      const r = await recorded(env, argv, answer);
      expect(r.code, argv.join(' ')).toBe(0);
      expect(r.requests.length, argv.join(' ')).toBeGreaterThan(0);
      for (const q of r.requests)
        expect(q.auth, `${argv.join(' ')}: ${q.path}`).toBe(`Bearer ${STORED}`);
    }
    const minted = await recorded(env, ['token', 'mint', '--subject', 'p2', '--ttl', '60'], answer);
    expect(minted.out).toEqual(['minted']);
    expect(minted.requests[0]?.body).toEqual({ subject: 'p2', ttl_seconds: 60 });
    // --token and FELIX_TOKEN take precedence over the stored token.
    const flag = await recorded(env, ['--token', 'flag-tok', 'tenants', 'list'], answer);
    expect(flag.requests[0]?.auth).toBe('Bearer flag-tok');
    const envTok = await recorded({ ...env, FELIX_TOKEN: 'env-tok' }, ['tenants', 'list'], answer);
    expect(envTok.requests[0]?.auth).toBe('Bearer env-tok');
  });

  it('felixctl_token_refresh_sends_no_bearer_and_keeps_the_successor_refresh_token', async () => {
    const path = join(home.path, 'refresh.json');
    const env = { FELIX_CONFIG: path };
    await recorded(env, [
      '--url',
      'http://127.0.0.1:1',
      '--token',
      cpToken(),
      'login',
      '--tenant',
      't1',
    ]);
    const none = await recorded(env, ['token', 'refresh']);
    expect(none.code).toBe(2);
    expect(none.err.join('\n')).toContain('no refresh token');
    const { writeCredentials, readCredentials } = await import('../src/cli/credentials.js');
    await writeCredentials(path, { ...(await readCredentials(path)), refresh_token: 'r1.s1' });
    const r = await recorded(env, ['token', 'refresh'], () => ({
      felix_token: 'new',
      refresh_token: 'r2.s2',
    }));
    expect(r.code).toBe(0);
    expect(r.requests[0]).toMatchObject({
      path: '/v1/tenants/t1/token/refresh',
      auth: null,
      body: { refresh_token: 'r1.s1' },
    });
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({
      token: 'new',
      refresh_token: 'r2.s2',
    });
  });

  it('login_with_a_token_forgets_the_refresh_token_of_an_earlier_login', async () => {
    const path = join(home.path, 'relogin.json');
    const env = { FELIX_CONFIG: path };
    const first = ['--url', 'http://127.0.0.1:1', 'login', '--tenant', 't1', '--oidc-token', 'up'];
    const byOidc = await recorded(env, first, () => ({
      felix_token: 'alice-tok',
      refresh_token: 'alice.refresh',
    }));
    expect(byOidc.code, byOidc.err.join()).toBe(0);
    expect(JSON.parse(await readFile(path, 'utf8')).refresh_token).toBe('alice.refresh');
    // A given token of another principal replaces the login: the earlier refresh token, which
    // would trade back to the first principal's identity, goes with it.
    const given = cpToken('t1', { sub: 'ops-bot' });
    const byToken = await recorded(env, ['--token', given, 'login', '--tenant', 't1']);
    expect(byToken.code, byToken.err.join()).toBe(0);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      url: 'http://127.0.0.1:1',
      tenant: 't1',
      token: given,
    });
    const refresh = await recorded(env, ['token', 'refresh']);
    expect(refresh.code).toBe(2);
    expect(refresh.err.join('\n')).toContain('no refresh token');
    expect(refresh.requests).toEqual([]);
  });
});

describe('felixctl against the token and RBAC routes', () => {
  it('felixctl_logs_in_by_oidc_and_manages_rbac_against_a_live_server', async () => {
    const idp = await startFakeIdp();
    const env = await tokenEnv('sqlite', idp);
    try {
      const live = await env.built.app.listen({ host: '127.0.0.1', port: 0 });
      const config = { FELIX_CONFIG: join(home.path, 'live.json') };
      const run = async (...argv: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await runFelixctl(argv, {
          out: (l) => out.push(l),
          err: (l) => err.push(l),
          fetch,
          env: config,
        });
        return { code, out, err };
      };
      const upstream = await idp.token({ sub: 'alice' });
      const login = await run('--url', live, 'login', '--tenant', 't1', '--oidc-token', upstream);
      expect(login.code, login.err.join()).toBe(0);
      // From here on the URL, tenant and token come from the credentials file.
      const add = await run(
        'rbac',
        'policies',
        'add',
        't1',
        'pub',
        'stream.publish:stream:t1/orders/*',
      );
      expect(add.code, add.err.join()).toBe(0);
      const listed = await run('--json', 'rbac', 'policies', 'list', 't1', '--role', 'pub');
      expect(JSON.parse(listed.out.join('\n'))).toEqual([
        { role: 'pub', permission: 'stream.publish:stream:t1/orders/*' },
      ]);
      expect((await run('rbac', 'bindings', 'add', 't1', 'some-app', 'pub')).code).toBe(0);
      const minted = await run(
        'token',
        'mint',
        '--subject',
        'some-app',
        '--permission',
        'stream.publish:stream:t1/orders/eu',
      );
      expect(minted.code, minted.err.join()).toBe(0);
      expect(minted.out[0]).toMatch(/^ey/);
      const refreshed = await run('--json', 'token', 'refresh');
      expect(refreshed.code, refreshed.err.join()).toBe(0);
      // The stored refresh token was spent and replaced: a second refresh works too.
      expect((await run('token', 'refresh')).code).toBe(0);
      const denied = await run('rbac', 'policies', 'add', 't1', 'pub', 'cache.write:cache:t1/x/y');
      expect(denied.code).toBe(1);
      expect(denied.err.join()).toContain('403 FELIX_CONTROLPLANE_DELEGATION_REFUSED');
    } finally {
      await env.close();
      await idp.close();
    }
  });
});

describe('felixctl without a control plane', () => {
  /** Runs `tenants list` against `target` through `fetchFn`; its exit code and error line. */
  async function listAgainst(target: string, fetchFn: typeof fetch = fetch) {
    const err: string[] = [];
    const code = await runFelixctl(['--url', target, 'tenants', 'list'], {
      out: () => undefined,
      err: (l) => err.push(l),
      fetch: fetchFn,
      env: { FELIX_CONFIG: join(home.path, 'unreachable.json') },
    });
    return { code, line: err.join('\n') };
  }

  it('felixctl_names_why_the_control_plane_cannot_be_reached_and_exits_unavailable', async () => {
    // A port nothing listens on: a closed server's, freed a moment ago.
    const port = await releasedTcpPort();
    const refused = await listAgainst(`http://127.0.0.1:${port}`);
    // Exit 3, as for an unreachable broker, and the transport's reason, not "fetch failed".
    expect(refused.code).toBe(3);
    expect(refused.line).toMatch(
      new RegExp(
        `^felixctl: FELIX_CTL_UNREACHABLE: cannot reach the control plane at http://127\\.0\\.0\\.1:${port}: connect ECONNREFUSED`,
      ),
    );
    expect(refused.line).toContain('hint: check --url (FELIX_CONTROLPLANE_URL)');
    const badPort = await listAgainst('http://127.0.0.1:6000');
    expect(badPort.code).toBe(3);
    expect(badPort.line).toContain(': bad port;');
  });

  it('felixctl_says_a_control_plane_that_did_not_answer_in_time_may_have_applied_the_request', async () => {
    // What fetch rejects with when its AbortSignal.timeout fires.
    const late = (async () => {
      throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    }) as typeof fetch;
    const r = await listAgainst('http://127.0.0.1:8443', late);
    expect(r.code).toBe(3);
    expect(r.line).toContain('no answer within 30000 ms (the request may have been applied)');
  });

  it('felixctl_says_an_error_answer_without_a_code_is_not_the_control_planes', async () => {
    // A broker's metrics port answers 404 with a body of its own.
    const other = (async () => new Response('{}', { status: 404 })) as typeof fetch;
    const r = await listAgainst('http://127.0.0.1:8080', other);
    expect(r.code).toBe(1);
    expect(r.line).toBe(
      "felixctl: 404: not a Felix control plane's answer (is --url its API address, port 8443 by default?)",
    );
  });

  it('felixctl_refuses_an_answer_that_is_not_json_naming_what_came', async () => {
    const proxy = (async () =>
      new Response('<html>502 Bad Gateway</html>', { status: 502 })) as typeof fetch;
    const r = await listAgainst('http://127.0.0.1:8443', proxy);
    expect(r.code).toBe(1);
    expect(r.line).toContain(
      '502 not_json: the answer from http://127.0.0.1:8443 is not a JSON object: <html>502',
    );
    // JSON that is no object (here `null`) is no answer of the control plane's either.
    const nothing = (async () => new Response('null', { status: 500 })) as typeof fetch;
    const n = await listAgainst('http://127.0.0.1:8443', nothing);
    expect(n.code).toBe(1);
    expect(n.line).toContain(
      '500 not_json: the answer from http://127.0.0.1:8443 is not a JSON object: null',
    );
  });
});
