// Goal: the broker's config is defaults, then FELIX_* variables, then the YAML file, and any
// unknown key or invalid combination is refused naming it. Method: loadConfig on temp files,
// plus the real binary for --print-config and an unknown command-line flag.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { CONFIG_VARS, ConfigInvalidValueError, loadConfig } from '../src/index.js';
import { brokerArgs } from '@felix/testing-e2e';

const REPO = resolve(import.meta.dirname, '..', '..', '..');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function yamlFile(body: string): Promise<string> {
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  const path = join(dir.path, 'broker.yaml');
  await writeFile(path, body);
  return path;
}

describe('broker config', () => {
  it('the_file_overrides_the_environment_which_overrides_the_defaults', async () => {
    const path = await yamlFile('broker:\n  publish_window: 7\n');
    const cfg = loadConfig({
      FELIX_BROKER_PUBLISH_WINDOW: '9',
      FELIX_BROKER_AUTH_TIMEOUT_MS: '1234',
      FELIX_BROKER_CONFIG: path,
    });
    expect(cfg.broker.publish_window).toBe(7);
    expect(cfg.broker.auth_timeout_ms).toBe(1234);
    expect(cfg.broker.port).toBe(5000);
    expect(cfg.broker.transports).toEqual(['quic', 'tls']);
  });

  it('an_unknown_yaml_key_is_a_startup_error_naming_it', async () => {
    const path = await yamlFile('broker:\n  publish_windw: 7\n');
    expect(() => loadConfig({ FELIX_BROKER_CONFIG: path })).toThrow(/broker\.publish_windw/);
    const nested = await yamlFile('streams:\n  - { tenant: t1, name: s, shard: 2 }\n');
    expect(() => loadConfig({ FELIX_BROKER_CONFIG: nested })).toThrow(/streams\[0\]\.shard/);
  });

  it('an_unknown_broker_variable_is_a_startup_error_naming_it', () => {
    expect(() => loadConfig({ FELIX_BROKER_PROT: '1' })).toThrow(/FELIX_BROKER_PROT/);
    // Variables outside the broker's prefixes belong to someone else and are left alone.
    expect(() => loadConfig({ FELIX_POWER_LOSS_SEED: '1' })).not.toThrow();
  });

  it('an_unknown_broker_variable_names_the_variable_it_probably_meant', () => {
    // A user guessed `FELIX_BROKER_PUBLISH_QUORUM_TIMEOUT_MS` for `broker.publish_quorum_timeout_ms`
    // (whose variable has no BROKER_) and got no hint.
    expect(() => loadConfig({ FELIX_BROKER_PUBLISH_QUORUM_TIMEOUT_MS: '100' })).toThrow(
      /FELIX_BROKER_PUBLISH_QUORUM_TIMEOUT_MS .*did you mean FELIX_PUBLISH_QUORUM_TIMEOUT_MS\?/,
    );
    expect(() => loadConfig({ FELIX_BROKER_PROT: '1' })).not.toThrow(/did you mean/);
  });

  it('an_out_of_range_value_is_a_startup_error_naming_it', () => {
    expect(() => loadConfig({ FELIX_BROKER_PORT: '70000' })).toThrow(/broker\.port.*70000/);
    expect(() => loadConfig({ FELIX_BROKER_TRANSPORTS: 'quic,udp' })).toThrow(/broker\.transports/);
  });

  it('a_broker_refuses_an_invalid_node_id_or_controlplane_url_at_start', async () => {
    const refused = (env: NodeJS.ProcessEnv, key: string) => {
      let err: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(env)).toBeInstanceOf(ConfigInvalidValueError);
      expect((err as ConfigInvalidValueError).key).toBe(key);
      expect((err as ConfigInvalidValueError).code).toBe('FELIX_BROKER_CONFIG_INVALID_VALUE');
    };
    // The control plane's node-id rule: 1-128 of [A-Za-z0-9_.-], starting alphanumeric.
    for (const id of ['bad id!', '-lead', 'x'.repeat(129), 'ünï'])
      refused({ FELIX_NODE_ID: id }, 'cluster.node_id');
    for (const url of ['127.0.0.1:29064', 'not a url', 'ftp://cp:21', 'localhost'])
      refused({ FELIX_CONTROLPLANE_URL: url }, 'cluster.controlplane_url');
    refused({ FELIX_NODE_ID: '' }, 'cluster.node_id');
    // An empty URL still means "no control plane" (the standalone catalog).
    expect(loadConfig({ FELIX_CONTROLPLANE_URL: '' }).cluster.controlplane_url).toBe('');
    const yaml = await yamlFile('cluster:\n  node_id: "a/b"\n');
    refused({ FELIX_BROKER_CONFIG: yaml }, 'cluster.node_id');
    const ok = loadConfig({
      FELIX_NODE_ID: 'broker-1.eu_west',
      FELIX_CONTROLPLANE_URL: 'https://cp.example:8443/base',
    });
    expect(ok.cluster).toMatchObject({
      node_id: 'broker-1.eu_west',
      controlplane_url: 'https://cp.example:8443/base',
    });
    // The binary refuses it before starting anything, naming the key and the code.
    const run = spawnSync(process.execPath, brokerArgs(['--print-config']), {
      cwd: REPO,
      env: { ...process.env, FELIX_CONTROLPLANE_URL: '127.0.0.1:29064' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('cluster.controlplane_url');
    expect(run.stderr).toContain('FELIX_BROKER_CONFIG_INVALID_VALUE');
  });

  it('a_durable_stream_without_a_data_dir_is_a_startup_error', async () => {
    const path = await yamlFile('streams:\n  - { tenant: t1, name: orders, durable: true }\n');
    expect(() => loadConfig({ FELIX_BROKER_CONFIG: path })).toThrow(
      /streams\[0\]\.durable.*durable\.data_dir/,
    );
    expect(() =>
      loadConfig({ FELIX_BROKER_CONFIG: path, FELIX_DURABLE_STORAGE_DIR: '/tmp/x' }),
    ).not.toThrow();
  });

  it('invalid_combinations_are_startup_errors', async () => {
    expect(() => loadConfig({ FELIX_BROKER_TLS_CERT: '/x.pem' })).toThrow(/tls_cert.*tls_key/);
    const dup = await yamlFile(
      'streams:\n  - { tenant: t1, name: a }\n  - { tenant: t1, name: a }\n',
    );
    expect(() => loadConfig({ FELIX_BROKER_CONFIG: dup })).toThrow(/declared twice/);
    const ret = await yamlFile(
      'streams:\n  - { tenant: t1, name: a, retention: { max_bytes: 100 } }\n',
    );
    expect(() => loadConfig({ FELIX_BROKER_CONFIG: ret })).toThrow(/retention/);
  });

  it('a_stream_declares_shards_durability_retention_and_fsync', async () => {
    const path = await yamlFile(
      [
        'durable: { data_dir: /tmp/felix-x, fsync_mode: onCommit }',
        'streams:',
        '  - { tenant: t1, name: orders, shards: 4, durable: true, retention: { max_bytes: 1048576 } }',
        '  - { tenant: t1, namespace: ops, name: ticks, fsync: none }',
        'caches:',
        '  - { tenant: t1, name: sessions, shards: 2, default_ttl_ms: 60000 }',
      ].join('\n'),
    );
    const cfg = loadConfig({ FELIX_BROKER_CONFIG: path });
    expect(cfg.streams[0]).toMatchObject({
      shards: 4,
      durable: true,
      fsync: 'onCommit',
      retention: { max_bytes: 1048576 },
    });
    expect(cfg.streams[1]).toMatchObject({
      namespace: 'ops',
      durable: false,
      fsync: 'none',
      shards: 1,
    });
    expect(cfg.caches[0]).toMatchObject({ name: 'sessions', shards: 2, default_ttl_ms: 60000 });
  });

  it('an_empty_listen_address_data_dir_or_certificate_path_is_refused_naming_its_key', () => {
    // A variable expanded from nothing (`FELIX_BROKER_HOST=$HOST` with HOST unset): an empty
    // host bound the TLS and HTTP listeners on every interface (`*:port`, not the loopback
    // default) and made the QUIC listener fail with a TypeError; an empty data dir failed the
    // start with `mkdir ''`; an empty certificate path quietly served the self-signed one.
    const keys: Array<[string, string]> = [
      ['FELIX_BROKER_HOST', 'broker.host'],
      ['FELIX_BROKER_HTTP_HOST', 'broker.http_host'],
      ['FELIX_BROKER_TLS_CERT', 'broker.tls_cert'],
      ['FELIX_BROKER_TLS_KEY', 'broker.tls_key'],
      ['FELIX_DURABLE_STORAGE_DIR', 'durable.data_dir'],
      ['FELIX_INTERNAL_BIND', 'cluster.internal_bind'],
    ];
    for (const [env, key] of keys) {
      for (const value of ['', '  ']) {
        expect(() => loadConfig({ [env]: value }), env).toThrow(ConfigInvalidValueError);
        expect(() => loadConfig({ [env]: value }), env).toThrow(
          new RegExp(`invalid value for ${key.replace('.', '\\.')} .*is empty`),
        );
      }
    }
    expect(loadConfig({ FELIX_BROKER_HOST: '0.0.0.0' }).broker.host).toBe('0.0.0.0');
  });

  it('every_config_variable_is_documented', () => {
    const doc = readFileSync(join(REPO, 'docs', 'broker-config.md'), 'utf8');
    for (const v of CONFIG_VARS) {
      expect(doc, v.env).toContain(`\`${v.env}\``);
      expect(doc, v.key).toContain(`\`${v.key}\``);
    }
  });

  it('print_config_prints_the_merged_validated_config', () => {
    const run = spawnSync(process.execPath, brokerArgs(['--print-config']), {
      cwd: REPO,
      env: { ...process.env, FELIX_BROKER_PUBLISH_WINDOW: '33' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    const printed = parse(run.stdout) as { broker: { publish_window: number; port: number } };
    expect(printed.broker.publish_window).toBe(33);
    expect(printed.broker.port).toBe(5000);
  });

  it('print_config_redacts_the_node_token', () => {
    const secret = 'node-credential-that-must-not-be-printed';
    const run = spawnSync(process.execPath, brokerArgs(['--print-config']), {
      cwd: REPO,
      env: {
        ...process.env,
        FELIX_NODE_TOKEN: secret,
        FELIX_CONTROLPLANE_URL: 'https://ops:hunter2@cp.example:8443',
      },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).not.toContain(secret);
    expect(run.stdout).not.toContain('hunter2');
    const printed = parse(run.stdout) as {
      cluster: { node_token: string | null; controlplane_url: string };
    };
    expect(printed.cluster.node_token).toBe('<redacted>');
    expect(printed.cluster.controlplane_url).toBe('https://ops:<redacted>@cp.example:8443/');
    // An unset secret prints as unset: nothing to hide, and the operator sees it is missing.
    const unset = spawnSync(process.execPath, brokerArgs(['--print-config']), {
      cwd: REPO,
      env: process.env,
      encoding: 'utf8',
    });
    expect((parse(unset.stdout) as { cluster: { node_token: null } }).cluster.node_token).toBe(
      null,
    );
  });

  it('an_unknown_command_line_flag_is_refused', () => {
    const run = spawnSync(process.execPath, brokerArgs(['--prnt-config']), {
      cwd: REPO,
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--prnt-config');
    expect(run.stderr).toContain('FELIX_BROKER_UNKNOWN_FLAG');
  });
});
