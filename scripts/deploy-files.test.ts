// The deploy files against the contract they share (deploy/README.md, "Shared facts") and the
// settings the services read, checked from the text alone so the main suite needs no Docker.
// The containers themselves are tested by `pnpm test:deploy` (deploy/docker/test/).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const brokerFile = read('deploy/docker/broker.Dockerfile');
const cpFile = read('deploy/docker/control-plane.Dockerfile');
const composeFiles = ['deploy/compose/compose.yaml', 'deploy/compose/compose.postgres.yaml'];

/** Every FELIX_* name the broker's config registry declares. */
function brokerVars(): Set<string> {
  const text = read('services/broker/src/config/registry.ts');
  return new Set([...text.matchAll(/env: '(FELIX_[A-Z0-9_]+)'/g)].map((m) => m[1] as string));
}

/** Every FELIX_* name the control plane's sources read (it has no single registry file). */
function controlPlaneVars(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
        for (const m of read(path).matchAll(/\b(FELIX_[A-Z0-9_]+)\b/g)) names.add(m[1] as string);
      }
    }
  };
  walk('services/control-plane/src');
  return names;
}

/** A compose file cut into its top-level blocks (`x-…`) and services, by name. */
function blocks(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let top = '';
  let name = '';
  for (const line of text.split('\n')) {
    const topKey = /^([\w-]+):/.exec(line)?.[1];
    if (topKey !== undefined) {
      top = topKey;
      name = top.startsWith('x-') ? top : '';
    }
    const service = top === 'services' ? /^ {2}([\w-]+):/.exec(line)?.[1] : undefined;
    if (service !== undefined) name = service;
    if (name) out.set(name, `${out.get(name) ?? ''}${line}\n`);
  }
  return out;
}

const ownerOf = (block: string) =>
  block.startsWith('x-broker') || block.startsWith('broker-')
    ? 'broker'
    : block === 'control-plane'
      ? 'control-plane'
      : 'other';

describe('the deploy files', () => {
  it('compose_sets_only_environment_variables_the_service_config_registries_know', () => {
    const known = { broker: brokerVars(), 'control-plane': controlPlaneVars() };
    expect(known.broker.size).toBeGreaterThan(40);
    for (const file of composeFiles) {
      for (const [name, block] of blocks(read(file))) {
        const set = [...block.matchAll(/^\s+(FELIX_[A-Z0-9_]+):/gm)].map((m) => m[1] as string);
        const owner = ownerOf(name);
        if (owner === 'other') expect(set, `${file} ${name}`).toEqual([]);
        else for (const v of set) expect(known[owner].has(v), `${file} ${name}: ${v}`).toBe(true);
      }
    }
  });

  it('the_images_and_the_compose_file_expose_the_ports_of_the_shared_facts', () => {
    expect(brokerFile).toMatch(/^EXPOSE 5000\/udp 5000\/tcp 7000\/tcp 8080\/tcp$/m);
    expect(cpFile).toMatch(/^EXPOSE 8443\/tcp$/m);
    const compose = blocks(read('deploy/compose/compose.yaml'));
    for (const n of [1, 2, 3]) {
      const b = compose.get(`broker-${n}`) ?? '';
      for (const port of ['5000/udp', '5000/tcp', '8080/tcp']) expect(b).toContain(`:${port}"`);
      expect(b).toContain(`FELIX_CLIENT_ADVERTISE_ADDR: 127.0.0.1:500${n}`);
      expect(b).toContain(`"500${n}:5000/udp"`);
    }
    expect(compose.get('control-plane')).toContain('"8443:8443"');
  });

  it('the_broker_image_runs_node_with_the_flags_of_node_flags_json', () => {
    const { flags } = JSON.parse(read('services/broker/node-flags.json')) as { flags: string[] };
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(brokerFile)?.[1] ?? '[]';
    expect(JSON.parse(entry)).toEqual(['node', ...flags, 'dist/main.js']);
    expect(JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(cpFile)?.[1] ?? '[]')).toEqual([
      'node',
      'dist/main.js',
    ]);
  });

  it('both_images_run_as_uid_10001_in_app_on_node_image_with_a_node_healthcheck', () => {
    for (const [file, probe] of [
      [brokerFile, '/live'],
      [cpFile, ':8443/v1/system/live'],
    ] as const) {
      expect(file).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
      expect(file).toMatch(/^FROM \$\{NODE_IMAGE\}$/m);
      expect(file).toMatch(/^USER 10001:10001$/m);
      expect(file).toMatch(/^WORKDIR \/app$/m);
      expect(file).toMatch(/^VOLUME \["\/var\/lib\/felix"\]$/m);
      expect(file).toMatch(new RegExp(`CMD \\["node", "-e", ".*${probe}`));
    }
  });

  it('compose_gives_every_broker_a_stop_grace_of_at_least_20_seconds', () => {
    const grace = /stop_grace_period: (\d+)s/.exec(read('deploy/compose/compose.yaml'))?.[1];
    expect(Number(grace)).toBeGreaterThanOrEqual(20);
    // Each broker takes the grace from the shared x-broker block.
    const compose = blocks(read('deploy/compose/compose.yaml'));
    for (const n of [1, 2, 3]) expect(compose.get(`broker-${n}`)).toContain('<<: *broker\n');
  });
});
