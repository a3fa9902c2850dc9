// Goal: the Kubernetes manifests (deploy/kubernetes) render and describe a cluster the services
// can run: only settings their config registries know, probes and scrapes on ports the
// containers declare and paths the services serve, the shared facts of deploy/README.md
// (images, ports, uid), resources and restricted security contexts, a PDB and a headless
// Service that match the broker pods, and brokers that replicate: an internal listener on its
// own port, advertised under the pod's name, with a certificate an init container issues per
// pod from the cluster CA into memory, the CA key never mounted into the broker container.
// Method: render the base and each overlay with `kubectl kustomize` (offline), parse the YAML and
// check the objects against the broker's CONFIG_VARS, the names the control plane reads
// (controlPlaneEnvNames), the broker's HTTP paths and the control plane's route table, and the
// EXPOSE lines of deploy/docker/*.Dockerfile when those exist. Without kubectl the suite skips
// with a printed reason, except under CI=true, where it fails.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig as loadBrokerConfig } from '../services/broker/src/config/load.js';
import { CONFIG_FILE_ENV, CONFIG_VARS } from '../services/broker/src/config/registry.js';
import { loadConfig as loadControlPlaneConfig } from '../services/control-plane/src/config.js';
import { ROUTE_AUTH } from '../services/control-plane/src/http/auth/route-table.js';
import { controlPlaneEnvNames } from '../services/control-plane/src/env-names.js';

const ROOT = join(import.meta.dirname, '..');
const KUBE = join(ROOT, 'deploy', 'kubernetes');
const DOCKER = join(ROOT, 'deploy', 'docker');
const TARGETS = ['base', 'overlays/dev', 'overlays/prod'] as const;
const UID = 10001;
const DRAIN_S = 10;
const DEREGISTER_S = 2;
const INTERNAL_PORT = 7000;
const CA_SECRET = 'felix-cluster-ca';
const ISSUER_SCRIPT = 'issue-internal-cert.mjs';
/** What the issuing script writes into its --out-dir (deploy/kubernetes/base/issue-internal-cert.mjs). */
const ISSUED_FILES = { ca: 'ca.crt', cert: 'tls.crt', key: 'tls.key' };

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects are untyped YAML
type Obj = any;

const kubectlFound = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const HAVE_KUBECTL = kubectlFound.status === 0;
const IN_CI = process.env.CI === 'true';
if (!HAVE_KUBECTL) {
  const why = 'kubectl is not on PATH, so the Kubernetes manifests were not rendered';
  console.warn(IN_CI ? `${why}; CI=true: failing` : `skipped: ${why}`);
}

function render(target: string): Obj[] {
  const out = spawnSync('kubectl', ['kustomize', join(KUBE, target)], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (out.status !== 0) {
    throw new Error(`kubectl kustomize ${target} failed: ${out.error ?? out.stderr}`);
  }
  return parseAllDocuments(out.stdout).map((d) => d.toJS());
}

function one(objs: Obj[], kind: string, name: string): Obj {
  const found = objs.filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found, `${kind}/${name}`).toHaveLength(1);
  return found[0];
}

const broker = (objs: Obj[]) => one(objs, 'StatefulSet', 'felix-broker');
const controlPlane = (objs: Obj[]) => one(objs, 'Deployment', 'felix-control-plane');
const workloads = (objs: Obj[]) => [broker(objs), controlPlane(objs)];

/** The env names and values a container gets, envFrom ConfigMaps included. */
function envOf(objs: Obj[], c: Obj): Map<string, string | undefined> {
  const env = new Map<string, string | undefined>();
  for (const from of c.envFrom ?? []) {
    expect(from.configMapRef, 'envFrom only from ConfigMaps').toBeDefined();
    const map = one(objs, 'ConfigMap', from.configMapRef.name);
    for (const [k, v] of Object.entries(map.data ?? {})) env.set(k, String(v));
  }
  for (const e of c.env ?? []) env.set(e.name, e.value);
  return env;
}

/** Names that are not settings but only feed `$(NAME)` in another value of the same container. */
function helperNames(env: Map<string, string | undefined>): Set<string> {
  const used = new Set<string>();
  for (const v of env.values()) for (const m of (v ?? '').matchAll(/\$\((\w+)\)/g)) used.add(m[1]!);
  return new Set([...env.keys()].filter((k) => !k.startsWith('FELIX_') && used.has(k)));
}

function expectKnownEnv(objs: Obj[], c: Obj, known: Set<string>, what: string): void {
  const env = envOf(objs, c);
  const helpers = helperNames(env);
  const unknown = [...env.keys()].filter((k) => !known.has(k) && !helpers.has(k));
  expect(unknown, `${what}: variables no config registry knows`).toEqual([]);
  for (const v of env.values()) {
    for (const m of (v ?? '').matchAll(/\$\((\w+)\)/g)) {
      expect(env.has(m[1]!), `${what}: $(${m[1]}) is defined`).toBe(true);
    }
  }
}

/** Dotted keys of a nested YAML mapping (`broker.port`). */
function dottedKeys(value: Obj, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => dottedKeys(v, prefix ? `${prefix}.${k}` : k));
}

function brokerPaths(): Set<string> {
  const src = readFileSync(join(ROOT, 'services/broker/src/http/http-server.ts'), 'utf8');
  return new Set([...src.matchAll(/path === '(\/[^']*)'/g)].map((m) => m[1]!));
}

function controlPlanePaths(): Set<string> {
  return new Set(
    Object.keys(ROUTE_AUTH)
      .filter((k) => k.startsWith('GET '))
      .map((k) => k.slice(4)),
  );
}

/** The container port a probe's or annotation's port (name or number) names, TCP only. */
function tcpPort(c: Obj, port: string | number): number | undefined {
  const p = (c.ports ?? []).find(
    (q: Obj) => (q.name === port || q.containerPort === Number(port)) && q.protocol !== 'UDP',
  );
  return p?.containerPort;
}

function expectProbes(w: Obj, paths: Set<string>): void {
  const c = w.spec.template.spec.containers[0];
  for (const kind of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    const probe = c[kind]?.httpGet;
    if (kind !== 'startupProbe') expect(probe, `${w.metadata.name} ${kind}`).toBeDefined();
    if (!probe) continue;
    expect(paths.has(probe.path), `${w.metadata.name} ${kind} ${probe.path} is served`).toBe(true);
    expect(tcpPort(c, probe.port), `${w.metadata.name} ${kind} port ${probe.port}`).toBeDefined();
  }
  const a = w.spec.template.metadata.annotations ?? {};
  expect(a['prometheus.io/scrape']).toBe('true');
  expect(tcpPort(c, a['prometheus.io/port']), 'scrape port is declared').toBeDefined();
  expect(paths.has(a['prometheus.io/path']), `scrape path ${a['prometheus.io/path']}`).toBe(true);
}

function expectRestricted(w: Obj): void {
  const pod = w.spec.template.spec;
  const what = w.metadata.name;
  expect(pod.enableServiceLinks, `${what} enableServiceLinks`).toBe(false);
  expect(pod.securityContext).toMatchObject({
    runAsNonRoot: true,
    runAsUser: UID,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    expect(c.securityContext, `${what}/${c.name}`).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: UID,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    for (const side of ['requests', 'limits']) {
      expect(c.resources?.[side]?.cpu, `${what}/${c.name} ${side}.cpu`).toBeDefined();
      expect(c.resources?.[side]?.memory, `${what}/${c.name} ${side}.memory`).toBeDefined();
    }
  }
}

/** What a pod sees: envFrom, then env in order, `$(NAME)` expanded, Secrets and fields faked. */
function podEnv(objs: Obj[], c: Obj): Record<string, string> {
  const fields: Record<string, string> = {
    'metadata.name': 'felix-broker-0',
    'metadata.namespace': 'felix',
  };
  const out: Record<string, string> = {};
  for (const [k, v] of envOf(objs, c)) if (v !== undefined) out[k] = v;
  for (const e of c.env ?? []) {
    const from = e.valueFrom;
    const raw =
      e.value ??
      (from?.fieldRef ? fields[from.fieldRef.fieldPath] : undefined) ??
      (from?.secretKeyRef ? `postgres://felix@db:5432/${from.secretKeyRef.key}` : undefined);
    expect(raw, `${e.name} has a value this test can fake`).toBeDefined();
    out[e.name] = String(raw).replace(/\$\((\w+)\)/g, (_, n: string) => out[n] ?? '');
  }
  return out;
}

/** The broker's config as the pod at felix-broker-0 in namespace felix would load it. */
function loadBrokerOf(objs: Obj[], dir: string, name: string) {
  const sts = broker(objs);
  const b = sts.spec.template.spec.containers[0];
  const mapped = b.volumeMounts.find((m: Obj) => m.mountPath === '/etc/felix/broker');
  const vol = sts.spec.template.spec.volumes.find((v: Obj) => v.name === mapped.name);
  const file = join(dir, `${name.replace('/', '-')}.yaml`);
  writeFileSync(file, one(objs, 'ConfigMap', vol.configMap.name).data['broker.yaml']);
  return loadBrokerConfig({ ...podEnv(objs, b), [CONFIG_FILE_ENV]: file });
}

/** A `--flag value` of a container's args, `$(NAME)` expanded from its env as the pod sees it. */
function argOf(objs: Obj[], c: Obj, flag: string): string | undefined {
  const env = podEnv(objs, c);
  const args: string[] = (c.args ?? []).map((a: string) =>
    a.replace(/\$\((\w+)\)/g, (_, n: string) => env[n] ?? ''),
  );
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args[at + 1];
}

/** The pod volume a container mounts at `path`. */
function volumeAt(pod: Obj, c: Obj, path: string | undefined): Obj {
  const m = (c.volumeMounts ?? []).find((v: Obj) => v.mountPath === path);
  expect(m, `${c.name} mounts ${path}`).toBeDefined();
  return { mount: m, volume: pod.volumes.find((v: Obj) => v.name === m.name) };
}

/** Whether a pod volume carries the cluster CA Secret (whole, or projected). */
function holdsCaSecret(v: Obj): boolean {
  if (v?.secret?.secretName === CA_SECRET) return true;
  return (v?.projected?.sources ?? []).some((s: Obj) => s.secret?.name === CA_SECRET);
}

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** `EXPOSE` ports of a Dockerfile as `5000/udp`, `8080/tcp`. */
function exposed(dockerfile: string): string[] {
  const ports = readFileSync(dockerfile, 'utf8')
    .split('\n')
    .filter((l) => /^\s*EXPOSE\s/i.test(l))
    .flatMap((l) => l.trim().split(/\s+/).slice(1));
  return ports.map((p) => (p.includes('/') ? p.toLowerCase() : `${p}/tcp`)).sort();
}

function declared(c: Obj): string[] {
  return (c.ports ?? [])
    .map((p: Obj) => `${p.containerPort}/${(p.protocol ?? 'TCP').toLowerCase()}`)
    .sort();
}

const DOCKERFILES = { broker: 'broker.Dockerfile', 'control-plane': 'control-plane.Dockerfile' };
const dockerfilesPresent = Object.values(DOCKERFILES).filter((f) => existsSync(join(DOCKER, f)));
if (dockerfilesPresent.length === 0) {
  console.warn(
    'skipped: deploy/docker/*.Dockerfile do not exist yet, so images and ports are not checked against their EXPOSE lines',
  );
}

describe.skipIf(!HAVE_KUBECTL && !IN_CI)('kubernetes manifests', () => {
  const rendered = new Map<string, Obj[]>();
  beforeAll(() => {
    for (const t of TARGETS) rendered.set(t, render(t));
  });
  const each = () => [...rendered.entries()];

  it('every_kustomize_target_renders_a_broker_statefulset_and_a_control_plane_deployment', () => {
    expect([...rendered.keys()]).toEqual([...TARGETS]);
    for (const [t, objs] of each()) {
      expect(broker(objs).spec.serviceName, t).toBe('felix-broker');
      expect(controlPlane(objs).spec.template.spec.containers, t).toHaveLength(1);
      one(objs, 'Service', 'felix-control-plane');
      one(objs, 'PodDisruptionBudget', 'felix-broker');
    }
  });

  it('every_env_var_in_the_manifests_is_one_its_service_reads', () => {
    const brokerKnown = new Set([...CONFIG_VARS.map((v) => v.env), CONFIG_FILE_ENV]);
    const cpKnown = new Set(controlPlaneEnvNames());
    for (const [t, objs] of each()) {
      for (const c of broker(objs).spec.template.spec.containers) {
        expectKnownEnv(objs, c, brokerKnown, `${t} broker`);
      }
      for (const c of controlPlane(objs).spec.template.spec.containers) {
        expectKnownEnv(objs, c, cpKnown, `${t} control plane`);
      }
    }
  });

  it('the_broker_config_file_in_its_config_map_holds_only_registry_keys', () => {
    const keys = new Set(CONFIG_VARS.map((v) => v.key));
    for (const [t, objs] of each()) {
      const sts = broker(objs);
      const c = sts.spec.template.spec.containers[0];
      const file = envOf(objs, c).get(CONFIG_FILE_ENV) ?? '';
      const mount = c.volumeMounts.find((m: Obj) => file.startsWith(`${m.mountPath}/`));
      expect(mount, `${t}: ${CONFIG_FILE_ENV}=${file} is on a mount`).toBeDefined();
      const vol = sts.spec.template.spec.volumes.find((v: Obj) => v.name === mount.name);
      const map = one(objs, 'ConfigMap', vol.configMap.name);
      const body = map.data[file.slice(mount.mountPath.length + 1)];
      const unknown = dottedKeys(parse(body)).filter((k) => !keys.has(k));
      expect(unknown, `${t}: keys of ${file}`).toEqual([]);
    }
  });

  it('every_rendered_configuration_loads_in_the_services_own_config_loaders', () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-k8s-'));
    for (const [t, objs] of each()) {
      const b = broker(objs).spec.template.spec.containers[0];
      const env = podEnv(objs, b);
      const mapped = b.volumeMounts.find((m: Obj) => m.mountPath === '/etc/felix/broker');
      const vol = broker(objs).spec.template.spec.volumes.find((v: Obj) => v.name === mapped.name);
      const file = join(dir, `${t.replace('/', '-')}.yaml`);
      writeFileSync(file, one(objs, 'ConfigMap', vol.configMap.name).data['broker.yaml']);
      const cfg = loadBrokerConfig({ ...env, [CONFIG_FILE_ENV]: file });
      expect(cfg.cluster.node_id, t).toBe('felix-broker-0');
      expect(cfg.cluster.client_advertise_addr, t).toBe(
        'felix-broker-0.felix-broker.felix.svc.cluster.local:5000',
      );
      expect(cfg.durable.data_dir, t).toBe('/var/lib/felix');
      const cp = controlPlane(objs).spec.template.spec.containers[0];
      const cpCfg = loadControlPlaneConfig(podEnv(objs, cp), () => 'x'.repeat(48));
      expect(cpCfg.port, t).toBe(8443);
      expect(cpCfg.backend, t).toBe(t === 'overlays/prod' ? 'postgres' : 'sqlite');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('every_probe_and_scrape_annotation_targets_a_declared_port_and_a_served_path', () => {
    const brokerServed = brokerPaths();
    const cpServed = controlPlanePaths();
    expect([...brokerServed]).toEqual(expect.arrayContaining(['/live', '/ready', '/metrics']));
    for (const [, objs] of each()) {
      expectProbes(broker(objs), brokerServed);
      expectProbes(controlPlane(objs), cpServed);
      const b = broker(objs).spec.template.spec.containers[0];
      expect(b.readinessProbe.httpGet.path).toBe('/ready');
      expect(b.livenessProbe.httpGet.path).toBe('/live');
      expect(tcpPort(b, b.readinessProbe.httpGet.port)).toBe(8080);
    }
  });

  it('every_pod_runs_as_uid_10001_with_a_restricted_context_resources_and_the_shared_images', () => {
    for (const [, objs] of each()) {
      for (const w of workloads(objs)) expectRestricted(w);
      const image = (w: Obj) => w.spec.template.spec.containers[0].image.split(':')[0];
      expect(image(broker(objs))).toBe('felix-broker');
      expect(image(controlPlane(objs))).toBe('felix-control-plane');
      expect(declared(broker(objs).spec.template.spec.containers[0])).toEqual([
        '5000/tcp',
        '5000/udp',
        '7000/tcp',
        '8080/tcp',
      ]);
      expect(declared(controlPlane(objs).spec.template.spec.containers[0])).toEqual(['8443/tcp']);
    }
  });

  it('the_broker_pdb_and_headless_service_select_the_broker_pods_which_keep_their_identity', () => {
    for (const [t, objs] of each()) {
      const sts = broker(objs);
      const labels = sts.spec.template.metadata.labels;
      const pdb = one(objs, 'PodDisruptionBudget', 'felix-broker');
      expect(matches(pdb.spec.selector.matchLabels, labels), `${t} PDB selects brokers`).toBe(true);
      const svc = one(objs, 'Service', sts.spec.serviceName);
      expect(svc.spec.clusterIP, `${t} peer service is headless`).toBe('None');
      expect(matches(svc.spec.selector, labels), `${t} service selects brokers`).toBe(true);
      const pod = sts.spec.template.spec;
      const c = pod.containers[0];
      const nodeId = c.env.find((e: Obj) => e.name === 'FELIX_NODE_ID');
      expect(nodeId?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
      const claims = sts.spec.volumeClaimTemplates.map((v: Obj) => v.metadata.name);
      const data = c.volumeMounts.find((m: Obj) => m.mountPath === '/var/lib/felix');
      expect(claims, `${t} /var/lib/felix is a per-pod claim`).toContain(data?.name);
      expect(envOf(objs, c).get('FELIX_DURABLE_STORAGE_DIR')).toBe('/var/lib/felix');
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
        Math.max(20, DRAIN_S + DEREGISTER_S),
      );
    }
  });

  it('every_broker_runs_the_internal_listener_on_its_own_port_advertised_under_its_pod_name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-k8s-'));
    for (const [t, objs] of each()) {
      const sts = broker(objs);
      const c = sts.spec.template.spec.containers[0];
      const port = c.ports.find((p: Obj) => p.name === 'internal');
      expect(port, `${t} declares the internal port`).toMatchObject({
        containerPort: INTERNAL_PORT,
        protocol: 'TCP',
      });
      const others = c.ports.filter((p: Obj) => p !== port).map((p: Obj) => p.containerPort);
      expect(others, `${t} the internal port is its own`).not.toContain(INTERNAL_PORT);
      const svc = one(objs, 'Service', sts.spec.serviceName);
      expect(
        svc.spec.ports.find((p: Obj) => p.name === 'internal'),
        t,
      ).toMatchObject({
        port: INTERNAL_PORT,
        protocol: 'TCP',
        targetPort: 'internal',
      });
      const cfg = loadBrokerOf(objs, dir, t);
      expect(cfg.cluster.internal_bind, t).toBe(`0.0.0.0:${INTERNAL_PORT}`);
      expect(cfg.cluster.internal_transport, `${t} TLS, so TCP`).toBe('tls');
      expect(cfg.cluster.advertise_addr, t).toBe(
        `felix-broker-0.felix-broker.felix.svc.cluster.local:${INTERNAL_PORT}`,
      );
      expect(cfg.cluster.internal_allow_unauthenticated, t).toBe(false);
      for (const k of ['internal_tls_ca', 'internal_tls_cert', 'internal_tls_key'] as const) {
        expect(cfg.cluster[k], `${t} ${k}`).toEqual(expect.any(String));
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('every_broker_pod_gets_a_certificate_for_its_pod_name_issued_from_the_cluster_ca_into_memory', () => {
    const script = readFileSync(join(KUBE, 'base', ISSUER_SCRIPT), 'utf8');
    for (const [t, objs] of each()) {
      const pod = broker(objs).spec.template.spec;
      const c = pod.containers[0];
      const issuers = (pod.initContainers ?? []).filter((i: Obj) =>
        (i.command ?? []).some((a: string) => a.endsWith(`/${ISSUER_SCRIPT}`)),
      );
      expect(issuers, `${t}: one init container issues the certificate`).toHaveLength(1);
      const init = issuers[0];
      expect(init.image, `${t}: from the broker image (it ships selfsigned)`).toBe(c.image);
      const scriptPath = init.command.find((a: string) => a.endsWith(`/${ISSUER_SCRIPT}`));
      const code = volumeAt(pod, init, scriptPath.slice(0, -ISSUER_SCRIPT.length - 1));
      const map = one(objs, 'ConfigMap', code.volume.configMap.name);
      expect(map.data[ISSUER_SCRIPT], `${t}: the ConfigMap holds the script as committed`).toBe(
        script,
      );
      expect(argOf(objs, init, '--node-id'), `${t}: names the pod`).toBe('felix-broker-0');
      const ca = volumeAt(pod, init, argOf(objs, init, '--ca-dir'));
      expect(holdsCaSecret(ca.volume), `${t}: --ca-dir is the CA Secret`).toBe(true);
      const out = volumeAt(pod, init, argOf(objs, init, '--out-dir'));
      expect(out.volume.emptyDir?.medium, `${t}: the key stays in memory`).toBe('Memory');
      const env = envOf(objs, c);
      const files = {
        ca: env.get('FELIX_INTERNAL_TLS_CA'),
        cert: env.get('FELIX_INTERNAL_TLS_CERT'),
        key: env.get('FELIX_INTERNAL_TLS_KEY'),
      };
      for (const [k, file] of Object.entries(ISSUED_FILES) as [keyof typeof files, string][]) {
        const path = files[k] ?? '';
        const dirOf = path.slice(0, path.lastIndexOf('/'));
        const seen = volumeAt(pod, c, dirOf);
        expect(seen.volume.name, `${t}: ${path} is on the issued volume`).toBe(out.volume.name);
        expect(seen.mount.readOnly, `${t}: the broker only reads it`).toBe(true);
        expect(path.slice(dirOf.length + 1), `${t}: ${k} is the file the script writes`).toBe(file);
      }
    }
  });

  it('the_broker_container_never_mounts_the_cluster_ca_key', () => {
    for (const [t, objs] of each()) {
      const pod = broker(objs).spec.template.spec;
      const caVolumes = pod.volumes.filter(holdsCaSecret).map((v: Obj) => v.name);
      expect(caVolumes, `${t}: the CA Secret is a volume of the pod`).toHaveLength(1);
      for (const c of pod.containers) {
        const mounted = (c.volumeMounts ?? []).map((m: Obj) => m.name);
        expect(
          mounted.filter((n: string) => caVolumes.includes(n)),
          `${t}/${c.name}`,
        ).toEqual([]);
        const refs = [
          ...(c.env ?? []).map((e: Obj) => e.valueFrom?.secretKeyRef?.name),
          ...(c.envFrom ?? []).map((e: Obj) => e.secretRef?.name),
        ];
        expect(refs, `${t}/${c.name} takes nothing from the CA Secret`).not.toContain(CA_SECRET);
      }
      const holders = (pod.initContainers ?? []).filter((i: Obj) =>
        (i.volumeMounts ?? []).some((m: Obj) => caVolumes.includes(m.name)),
      );
      expect(
        holders.map((i: Obj) => i.name),
        `${t}: only the issuer mounts it`,
      ).toEqual(['issue-internal-cert']);
    }
  });

  it('the_prod_overlay_runs_two_control_planes_on_postgres_and_dev_one_on_sqlite_on_a_claim', () => {
    const prod = controlPlane(rendered.get('overlays/prod') ?? []);
    expect(prod.spec.replicas).toBe(2);
    const url = prod.spec.template.spec.containers[0].env.find(
      (e: Obj) => e.name === 'FELIX_CONTROLPLANE_POSTGRES_URL',
    );
    expect(url?.valueFrom?.secretKeyRef?.key, 'the Postgres URL comes from a Secret').toBe('url');
    const devObjs = rendered.get('overlays/dev') ?? [];
    const dev = controlPlane(devObjs);
    expect(dev.spec.replicas).toBe(1);
    expect(dev.spec.strategy.type).toBe('Recreate');
    const c = dev.spec.template.spec.containers[0];
    expect(envOf(devObjs, c).get('FELIX_CONTROLPLANE_STORAGE_BACKEND')).toBe('sqlite');
    const dir = envOf(devObjs, c).get('FELIX_CONTROLPLANE_DATA_DIR');
    const mount = c.volumeMounts.find((m: Obj) => m.mountPath === dir);
    const vol = dev.spec.template.spec.volumes.find((v: Obj) => v.name === mount?.name);
    one(devObjs, 'PersistentVolumeClaim', vol?.persistentVolumeClaim?.claimName);
  });

  it.skipIf(dockerfilesPresent.length === 0)(
    'the_manifests_ports_and_user_agree_with_the_dockerfiles',
    () => {
      for (const [t, objs] of each()) {
        for (const [name, file] of Object.entries(DOCKERFILES)) {
          const path = join(DOCKER, file);
          expect(existsSync(path), `${file} exists beside the other Dockerfile`).toBe(true);
          const w = name === 'broker' ? broker(objs) : controlPlane(objs);
          const c = w.spec.template.spec.containers[0];
          expect(declared(c), `${t} ${name} ports = EXPOSE of ${file}`).toEqual(exposed(path));
          const user = /^\s*USER\s+(\S+)/im.exec(readFileSync(path, 'utf8'))?.[1] ?? '';
          const uid = user.split(':')[0] ?? '';
          if (/^\d+$/.test(uid)) expect(Number(uid), `${file} USER`).toBe(UID);
          else expect(uid, `${file} USER`).toBe('felix');
        }
      }
    },
  );
});
