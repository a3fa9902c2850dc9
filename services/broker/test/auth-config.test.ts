// Goal: the broker is secure by default (issue 21): `auth.mode` is `tokens` unless a config says
// `dev`, dev with a control plane needs its own explicit setting, a `tokens` broker without a key
// source refuses to start naming the settings, and the JWKS fetcher keeps the reference's guards
// (shared in-flight fetches, remembered failures, bounded concurrency, the node credential sent),
// and one address cannot hold more connections than its bound.
// Method: loadConfig on env maps; a real broker process started without keys; the JWKS resolver
// with an injected fetch and clock, counting and holding requests; a broker with a per-IP bound
// of one, dialled twice over TLS.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportPublicJwk, generateSigningKey } from '@felix/authz';
import { REPO_ROOT, brokerArgs, brokerMetric, rawAuthed, startBroker } from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import { describe, expect, it } from 'vitest';
import { ipOf } from '../src/broker.js';
import { NodeToken } from '../src/cluster/node-token.js';
import { NodeTokenFileError } from '../src/errors.js';
import { JwksKeyResolver } from '../src/session/jwks.js';
import { loadConfig } from '../src/config/load.js';
import {
  JWKS_FAILURE_MEMORY_MS,
  JWKS_FETCHES_IN_FLIGHT_MAX,
  JWKS_UNKNOWN_KID_REFETCH_MS,
  NODE_TOKEN_FILE_BYTES_MAX,
  NODE_TOKEN_REREAD_MS,
} from '../src/limits.js';

describe('broker auth config', () => {
  it('dev_mode_is_never_the_default', () => {
    expect(loadConfig({}).auth.mode).toBe('tokens');
    const cp = { FELIX_CONTROLPLANE_URL: 'http://127.0.0.1:1' };
    expect(loadConfig(cp).auth.mode).toBe('tokens');
    expect(() => loadConfig({ ...cp, FELIX_AUTH_MODE: 'dev' })).toThrow(
      /auth\.dev_with_controlplane/,
    );
    const explicit = loadConfig({
      ...cp,
      FELIX_AUTH_MODE: 'dev',
      FELIX_AUTH_DEV_WITH_CONTROLPLANE: 'true',
    });
    expect(explicit.auth.mode).toBe('dev');
    expect(loadConfig({ FELIX_AUTH_MODE: 'dev' }).auth.mode).toBe('dev');
  });

  it('an_empty_node_credential_is_refused_at_start', () => {
    // `FELIX_NODE_TOKEN=$(dev-token ...)` whose command printed nothing: refused now, not
    // sent as an empty bearer on every control-plane call for as long as the broker runs.
    for (const env of [{ FELIX_NODE_TOKEN: '' }, { FELIX_NODE_TOKEN: '  ' }]) {
      expect(() => loadConfig(env)).toThrow(
        /invalid value for cluster\.node_token \(from environment FELIX_NODE_TOKEN\): is empty/,
      );
    }
    expect(() => loadConfig({ FELIX_NODE_TOKEN_FILE: '' })).toThrow(/cluster\.node_token_file/);
    expect(loadConfig({ FELIX_NODE_TOKEN: 'eyJ.x.y' }).cluster.node_token).toBe('eyJ.x.y');
  });

  it('a_node_token_file_that_is_missing_or_empty_is_refused_at_start', async () => {
    const tmp = await tempDir('felix-node-token-');
    const dir = tmp.path;
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n');
    const run = spawnSync(process.execPath, brokerArgs(), {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH,
        FELIX_AUTH_MODE: 'dev',
        FELIX_BROKER_PORT: '0',
        FELIX_BROKER_HTTP_PORT: '0',
        FELIX_NODE_TOKEN_FILE: empty,
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/FELIX_BROKER_NODE_TOKEN_FILE/);
    expect(run.stderr).toContain(`cluster.node_token_file ${empty}: is empty`);
    await expect(new NodeToken(join(dir, 'absent'), null).verify()).rejects.toThrow(
      /node_token_file .*absent: ENOENT/,
    );
    const big = join(dir, 'big');
    writeFileSync(big, 'x'.repeat(NODE_TOKEN_FILE_BYTES_MAX + 1));
    await expect(new NodeToken(big, null).verify()).rejects.toBeInstanceOf(NodeTokenFileError);
    await tmp.cleanup();
  });

  it('a_node_token_file_emptied_while_running_keeps_the_last_credential', async () => {
    const tmp = await tempDir('felix-node-token-');
    const file = join(tmp.path, 'token');
    writeFileSync(file, 'first\n');
    let nowMs = 0;
    const token = new NodeToken(file, null, () => nowMs);
    await token.verify();
    expect(await token.get()).toBe('first');
    writeFileSync(file, '');
    nowMs += NODE_TOKEN_REREAD_MS;
    expect(await token.get()).toBe('first');
    writeFileSync(file, 'second');
    nowMs += NODE_TOKEN_REREAD_MS;
    expect(await token.get()).toBe('second');
    await tmp.cleanup();
  });

  it('a_token_broker_without_a_key_source_refuses_to_start', () => {
    const run = spawnSync(process.execPath, brokerArgs(), {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, FELIX_BROKER_PORT: '0', FELIX_BROKER_HTTP_PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/no key source/);
    expect(run.stderr).toMatch(/FELIX_AUTH_KEYS_FILE/);
  });
});

describe('jwks resolver', () => {
  async function jwksBody(): Promise<{ kid: string; body: string }> {
    const k = await generateSigningKey();
    return {
      kid: k.kid,
      body: JSON.stringify({ keys: [await exportPublicJwk(k.publicKey, k.kid)] }),
    };
  }

  it('concurrent_misses_share_one_jwks_fetch_and_send_the_node_credential', async () => {
    const { kid, body } = await jwksBody();
    const seen: Array<{ url: string; auth: string | undefined }> = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const fetchFn = (async (url: string, init: RequestInit) => {
      seen.push({ url, auth: (init.headers as Record<string, string>).authorization });
      await gate;
      return new Response(body, { status: 200 });
    }) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp/',
      bearer: async () => 'node-cred',
      fetch: fetchFn,
    });
    const all = Promise.all([r.resolve('t1', kid), r.resolve('t1', kid), r.resolve('t1', 'nope')]);
    release();
    const [a, b, none] = await all;
    expect(a).not.toBeNull();
    expect(b).toBe(a);
    expect(none).toBeNull(); // an unknown kid refetches nothing within the refetch interval
    expect(await r.resolve('t1', 'other')).toBeNull();
    expect(seen).toEqual([
      { url: 'http://cp/v1/tenants/t1/.well-known/jwks.json', auth: 'Bearer node-cred' },
    ]);
  });

  it('an_unknown_kid_refetches_the_key_set_at_most_once_per_interval_and_the_new_set_replaces_the_old', async () => {
    // Found by an operator trial: a tenant deleted and initialized again signs with a new key,
    // which the broker refused for the hour it kept the old set, while the old key verified.
    const before = await jwksBody();
    const after = await jwksBody();
    let body = before.body;
    let now = 1_000_000;
    let calls = 0;
    const fetchFn = (async () => {
      calls++;
      return new Response(body, { status: 200 });
    }) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp',
      bearer: async () => null,
      fetch: fetchFn,
      now: () => now,
    });
    expect(await r.resolve('t1', before.kid)).not.toBeNull();
    body = after.body; // the tenant now signs with another key
    expect(await r.resolve('t1', after.kid)).toBeNull(); // within the interval: no fetch
    expect(calls).toBe(1);
    now += JWKS_UNKNOWN_KID_REFETCH_MS;
    expect(await r.resolve('t1', after.kid)).not.toBeNull();
    expect(calls).toBe(2);
    expect(await r.resolve('t1', before.kid)).toBeNull(); // left the set: refused at once
    // Forged kids cost one fetch per interval, not one each.
    for (let i = 0; i < 5; i++) expect(await r.resolve('t1', `forged-${i}`)).toBeNull();
    expect(calls).toBe(2);
    now += JWKS_UNKNOWN_KID_REFETCH_MS;
    for (let i = 0; i < 5; i++) expect(await r.resolve('t1', `forged-${i}`)).toBeNull();
    expect(calls).toBe(3);
  });

  it('a_failed_jwks_fetch_is_remembered_for_five_seconds', async () => {
    let now = 1_000_000;
    let calls = 0;
    const fetchFn = (async () => {
      calls++;
      return new Response('nope', { status: 503 });
    }) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp',
      bearer: async () => null,
      fetch: fetchFn,
      now: () => now,
    });
    await expect(r.resolve('t1', 'k')).rejects.toThrow(/HTTP 503/);
    await expect(r.resolve('t1', 'k')).rejects.toThrow(/HTTP 503/);
    expect(calls).toBe(1);
    now += JWKS_FAILURE_MEMORY_MS + 1;
    await expect(r.resolve('t1', 'k')).rejects.toThrow(/HTTP 503/);
    expect(calls).toBe(2);
  });

  it('a_tenant_bootstrapped_after_a_broker_first_asked_for_its_keys_can_authenticate_there', async () => {
    // Anyone may name a tenant in `auth`: an empty answer for one not bootstrapped yet must not
    // lock it out of this broker for the hour a real key set is kept.
    const { kid, body } = await jwksBody();
    let now = 1_000_000;
    let bootstrapped = false;
    let calls = 0;
    const fetchFn = (async () => {
      calls++;
      if (!bootstrapped) return new Response('{"keys":[]}', { status: 200 });
      return new Response(body, { status: 200 });
    }) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp',
      bearer: async () => null,
      fetch: fetchFn,
      now: () => now,
    });
    expect(await r.resolve('t1', kid)).toBeNull();
    expect(await r.resolve('t1', kid)).toBeNull();
    expect(calls).toBe(1); // remembered briefly, as a failure is
    bootstrapped = true;
    now += JWKS_FAILURE_MEMORY_MS + 1;
    expect(await r.resolve('t1', kid)).not.toBeNull();
    expect(calls).toBe(2);
    // A real key set is kept: no fetch per connection.
    now += JWKS_FAILURE_MEMORY_MS + 1;
    expect(await r.resolve('t1', kid)).not.toBeNull();
    expect(calls).toBe(2);
  });

  it('at_most_eight_jwks_fetches_run_at_once', async () => {
    let running = 0;
    let peak = 0;
    const fetchFn = (async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setImmediate(r));
      running--;
      return new Response('{"keys":[]}', { status: 200 });
    }) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp',
      bearer: async () => null,
      fetch: fetchFn,
    });
    const tenants = Array.from({ length: 30 }, (_, i) => `t${i}`);
    await Promise.all(tenants.map((t) => r.resolve(t, 'k')));
    expect(peak).toBe(JWKS_FETCHES_IN_FLIGHT_MAX);
    expect(r.fetches).toBe(30);
  });
});

describe('per-ip connection bound', () => {
  it('connections_past_the_per_ip_bound_are_closed_before_auth', async () => {
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: s }\n',
      dir: dir.path,
      env: { FELIX_BROKER_CONNECTIONS_PER_IP_MAX: '1' },
    });
    const conns: Connection[] = [];
    try {
      const first = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
      conns.push(first);
      await rawAuthed(first, 0x0fff_ffff); // the first is served
      const second = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
      conns.push(second);
      await expect(rawAuthed(second, 0x0fff_ffff)).rejects.toThrow();
      await waitFor(
        async () =>
          (await brokerMetric(
            broker,
            /felix_broker_connections_refused_total\{reason="per_ip"\} (\d+)/,
          )) === 1,
        'the per-ip refusal to be counted',
        10_000,
      );
      // Once the first goes, the address may connect again.
      await first.close();
      await waitFor(
        async () =>
          (await brokerMetric(broker, /felix_broker_connections\{transport="tls"\} (\d+)/)) === 0,
        'the first connection to be gone',
        10_000,
      );
      const third = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
      conns.push(third);
      await rawAuthed(third, 0x0fff_ffff);
    } finally {
      await Promise.allSettled(conns.map((c) => c.close()));
      await broker.stop();
      await dir.cleanup();
    }
  });

  it('the_address_of_a_remote_is_its_host_without_the_port', () => {
    expect(ipOf('127.0.0.1:5000')).toBe('127.0.0.1');
    expect(ipOf('[::1]:5000')).toBe('::1');
    expect(ipOf('::ffff:10.0.0.1:77')).toBe('::ffff:10.0.0.1');
  });
});
