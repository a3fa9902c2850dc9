#!/usr/bin/env node
// A release rehearsed end to end without touching the repository or npm: copies the working
// tree (tracked and new files, plus the public packages' built dist) to a scratch directory,
// runs `changeset version` and then `changeset publish` there against a verdaccio registry this
// script starts on a free loopback port with its storage in the scratch directory, and checks
// what came out: exactly @felix/client and @felix/wire published at their bumped versions, each
// tarball with its CHANGELOG.md and no private or workspace-only dependency, a git tag for each
// and for nothing else, and no private package versioned. Packages must be built first.
// `--json` prints the report as one JSON line last; the exit code says whether it passed.
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { freePort } from '../demos/support/broker.mjs';
import { packageProblems } from './pack-contents.mjs';
import { root, workspacePackages } from './workspace.mjs';

export const PUBLIC_PACKAGES = ['@felix/client', '@felix/wire'];
const CHANGESET = join(root, 'node_modules', '@changesets', 'cli', 'bin.js');
const VERDACCIO = join(root, 'node_modules', 'verdaccio', 'bin', 'verdaccio');
const REGISTRY_START_DEADLINE_MS = 30_000;
const COMMAND_DEADLINE_MS = 120_000;
const POLL_MS = 100;
const PNPM_VERSION = '10.34.9';

const run = (cmd, args, cwd, env = process.env) =>
  execFileSync(cmd, args, {
    cwd,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: COMMAND_DEADLINE_MS,
  });
const git = (cwd, ...args) =>
  run('git', ['-c', 'user.name=dry-run', '-c', 'user.email=dry-run@localhost', ...args], cwd);
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/**
 * One HTTP request on a connection of its own: verdaccio closes idle keep-alive connections,
 * and a pooled client (fetch) then fails a request it sent on one ("other side closed").
 */
function request(method, url, body) {
  return new Promise((done, fail) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json' };
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode, body: Buffer.concat(chunks) }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
const getJson = async (url) => {
  const res = await request('GET', url);
  return res.status === 200 ? JSON.parse(res.body.toString('utf8')) : null;
};

/** The working tree as a fresh one-commit git repository under `scratch/repo`. */
function copyTree(scratch) {
  const repo = join(scratch, 'repo');
  const files = run('git', ['ls-files', '-co', '--exclude-standard', '-z'], root)
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(root, f)));
  for (const f of files) {
    mkdirSync(dirname(join(repo, f)), { recursive: true });
    cpSync(join(root, f), join(repo, f));
  }
  for (const p of workspacePackages().filter((w) => PUBLIC_PACKAGES.includes(w.name))) {
    if (!existsSync(join(p.dir, 'dist'))) throw new Error(`${p.name} has no dist: build first`);
    cpSync(join(p.dir, 'dist'), join(repo, p.rel, 'dist'), { recursive: true });
  }
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'release dry run');
  return repo;
}

/**
 * Links each public package's workspace dependencies as an install would, so the publish
 * rewrites `workspace:*` to the version `changeset version` just wrote (not to the version of
 * the real tree's copy).
 */
function linkWorkspaceDependencies(repo) {
  const dirs = new Map(workspacePackages().map((p) => [p.name, join(repo, p.rel)]));
  for (const name of PUBLIC_PACKAGES) {
    const dir = dirs.get(name);
    const pkg = readJson(join(dir, 'package.json'));
    // pnpm rewrites every workspace specifier it publishes, devDependencies included.
    const deps = { ...pkg.dependencies, ...pkg.devDependencies, ...pkg.optionalDependencies };
    for (const [dep, spec] of Object.entries(deps)) {
      if (!String(spec).startsWith('workspace:')) continue;
      const link = join(dir, 'node_modules', ...dep.split('/'));
      mkdirSync(dirname(link), { recursive: true });
      execFileSync('ln', ['-s', relative(dirname(link), dirs.get(dep)), link]);
    }
  }
}

/** Every workspace package's version, by name. */
const versionsIn = (repo) =>
  Object.fromEntries(
    workspacePackages().map((p) => [p.name, readJson(join(repo, p.rel, 'package.json')).version]),
  );

async function startRegistry(scratch) {
  const port = await freePort();
  const dir = join(scratch, 'registry');
  mkdirSync(dir, { recursive: true });
  const config = [
    `storage: ${join(dir, 'storage')}`,
    `auth:\n  htpasswd:\n    file: ${join(dir, 'htpasswd')}`,
    // No uplinks: nothing is proxied to npm, so the storage holds only what was published.
    'uplinks: {}',
    "packages:\n  '**':\n    access: $all\n    publish: $authenticated\n    unpublish: $authenticated",
    'log: { type: stdout, format: pretty, level: warn }',
  ].join('\n');
  writeFileSync(join(dir, 'config.yaml'), `${config}\n`);
  const url = `http://127.0.0.1:${port}/`;
  const child = spawn(
    process.execPath,
    [VERDACCIO, '--config', join(dir, 'config.yaml'), '--listen', `127.0.0.1:${port}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  const exited = new Promise((done) => child.once('exit', done));
  const stop = () => {
    child.kill('SIGTERM');
    return exited;
  };
  try {
    await until('verdaccio to answer', () => {
      if (child.exitCode !== null) throw new Error(`verdaccio exited (${child.exitCode})`);
      return request('GET', `${url}-/ping`).then((r) => r.status === 200);
    });
  } catch (err) {
    await stop();
    throw new Error(`${err.message}: ${stderr}`);
  }
  return { url, storage: join(dir, 'storage'), stop, token: await addUser(url) };
}

async function until(what, cond) {
  const deadline = Date.now() + REGISTRY_START_DEADLINE_MS;
  while (Date.now() < deadline) {
    // A refused connection while the registry starts counts as not yet; an exit ends the wait.
    const ok = await Promise.resolve()
      .then(cond)
      .catch((err) => {
        if (/exited/.test(err.message)) throw err;
        return false;
      });
    if (ok) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Registers a throwaway publisher with the scratch registry and answers its token. */
async function addUser(url) {
  const res = await request('PUT', `${url}-/user/org.couchdb.user:dry-run`, {
    name: 'dry-run',
    password: 'dry-run-password',
  });
  const body = JSON.parse(res.body.toString('utf8'));
  if (res.status !== 201 || !body.token)
    throw new Error(`verdaccio refused the user: ${res.status} ${res.body}`);
  return body.token;
}

/** The entry script of the pinned pnpm that `npx --yes pnpm@10.34.9` runs (fetched if need be). */
function pnpmEntry() {
  run('npx', ['--yes', `pnpm@${PNPM_VERSION}`, '--version'], tmpdir());
  const npx = join(run('npm', ['config', 'get', 'cache'], tmpdir()).trim(), '_npx');
  for (const entry of readdirSync(npx)) {
    const dir = join(npx, entry, 'node_modules', 'pnpm');
    const pkg = readJsonOrNull(dir, 'package.json');
    if (pkg?.version === PNPM_VERSION) return join(dir, 'bin', 'pnpm.cjs');
  }
  throw new Error(`pnpm ${PNPM_VERSION} is not in npx's cache`);
}

/** An environment whose npm and pnpm publish to `registry` only, with pnpm on the PATH. */
function publishEnv(scratch, repo, registry) {
  const bin = join(scratch, 'bin');
  mkdirSync(bin, { recursive: true });
  // Not `npx pnpm`: npx would look pnpm itself up in the scratch registry.
  writeFileSync(join(bin, 'pnpm'), `#!/bin/sh\nexec "${process.execPath}" "${pnpmEntry()}" "$@"\n`);
  chmodSync(join(bin, 'pnpm'), 0o755);
  const host = registry.url.replace(/^http:/, '');
  const npmrc = join(scratch, 'npmrc');
  writeFileSync(npmrc, `registry=${registry.url}\n${host}:_authToken=${registry.token}\n`);
  // The project's .npmrc is read by both npm and pnpm; it must point at the scratch registry too.
  writeFileSync(join(repo, '.npmrc'), readFileSync(npmrc, 'utf8'));
  return {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    npm_config_registry: registry.url,
    NPM_CONFIG_USERCONFIG: npmrc,
    COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
  };
}

/** What the registry holds: every package name, and for each its versions. */
async function published(registry) {
  const names = [];
  for (const entry of readdirSync(registry.storage)) {
    if (entry.startsWith('.')) continue;
    const scoped = entry.startsWith('@');
    const inner = scoped ? readdirSync(join(registry.storage, entry)) : [''];
    for (const n of inner) names.push(scoped ? `${entry}/${n}` : entry);
  }
  const out = {};
  for (const name of names.sort()) {
    out[name] = await getJson(`${registry.url}${name.replace('/', '%2f')}`);
  }
  return out;
}

/** Downloads and unpacks one published version; answers the unpacked directory. */
async function unpack(scratch, packument, version) {
  const res = await request('GET', packument.versions[version].dist.tarball);
  const dir = join(scratch, 'unpacked', packument.name, version);
  mkdirSync(dir, { recursive: true });
  const tgz = join(dir, 'package.tgz');
  if (res.status !== 200) throw new Error(`tarball of ${packument.name}: HTTP ${res.status}`);
  writeFileSync(tgz, res.body);
  run('tar', ['-xzf', tgz, '-C', dir], dir);
  return join(dir, 'package');
}

async function inspect(scratch, registry, expected) {
  const privateNames = new Set(
    workspacePackages()
      .filter((p) => p.pkg.private === true)
      .map((p) => p.name),
  );
  const problems = [];
  const packages = {};
  for (const [name, packument] of Object.entries(await published(registry))) {
    const versions = Object.keys(packument?.versions ?? {});
    const version = versions[0];
    const dir = version === undefined ? null : await unpack(scratch, packument, version);
    // A changelog counts when it has a section for the version published.
    const changelog =
      dir !== null &&
      existsSync(join(dir, 'CHANGELOG.md')) &&
      readFileSync(join(dir, 'CHANGELOG.md'), 'utf8').includes(`## ${version}\n`);
    packages[name] = { versions, changelog };
    if (dir !== null) problems.push(...packageProblems(dir, privateNames));
    if (!changelog)
      problems.push(
        `${name}: the published tarball has no CHANGELOG.md with a section for ${version}`,
      );
    if (versions.length !== 1 || version !== expected[name])
      problems.push(`${name}: published ${versions.join(', ')}, expected ${expected[name]}`);
    const wire = readJsonOrNull(dir, 'package.json')?.dependencies?.['@felix/wire'];
    if (wire !== undefined && wire !== expected['@felix/wire'])
      problems.push(`${name}: depends on @felix/wire ${wire}, not ${expected['@felix/wire']}`);
  }
  const names = Object.keys(packages).sort();
  if (names.join() !== [...PUBLIC_PACKAGES].sort().join())
    problems.push(`published ${names.join(', ') || 'nothing'}, expected ${PUBLIC_PACKAGES}`);
  return { packages, problems };
}

const readJsonOrNull = (dir, file) =>
  dir !== null && existsSync(join(dir, file)) ? readJson(join(dir, file)) : null;

/** The version step: what it bumped, which changelogs it wrote, and what it should not have. */
function version(repo) {
  const before = versionsIn(repo);
  run(process.execPath, [CHANGESET, 'version'], repo);
  const after = versionsIn(repo);
  const bumped = Object.keys(after).filter((n) => after[n] !== before[n]);
  const changelogs = workspacePackages()
    .filter((p) => existsSync(join(repo, p.rel, 'CHANGELOG.md')))
    .map((p) => p.name);
  const problems = [];
  if (bumped.sort().join() !== [...PUBLIC_PACKAGES].sort().join())
    problems.push(`changeset version bumped ${bumped.join(', ') || 'nothing'}`);
  if (changelogs.sort().join() !== [...PUBLIC_PACKAGES].sort().join())
    problems.push(`changelogs written for ${changelogs.join(', ') || 'nothing'}`);
  const left = readdirSync(join(repo, '.changeset')).filter(
    (f) => f.endsWith('.md') && f !== 'README.md',
  );
  if (left.length > 0) problems.push(`changesets left unconsumed: ${left.join(', ')}`);
  return { before, after, bumped, changelogs, problems };
}

function publish(scratch, repo, registry) {
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'version packages');
  linkWorkspaceDependencies(repo);
  const env = publishEnv(scratch, repo, registry);
  const out = run(process.execPath, [CHANGESET, 'publish'], repo, env);
  const tags = git(repo, 'tag', '--list').split('\n').filter(Boolean).sort();
  return { out, tags };
}

export async function dryRun() {
  const scratch = mkdtempSync(join(tmpdir(), 'felix-release-'));
  const statusBefore = run('git', ['status', '--porcelain'], root);
  let registry;
  try {
    const repo = copyTree(scratch);
    const versioned = version(repo);
    registry = await startRegistry(scratch);
    const { tags } = publish(scratch, repo, registry);
    const expected = Object.fromEntries(PUBLIC_PACKAGES.map((n) => [n, versioned.after[n]]));
    const inspected = await inspect(scratch, registry, expected);
    const wantTags = PUBLIC_PACKAGES.map((n) => `${n}@${expected[n]}`).sort();
    const problems = [...versioned.problems, ...inspected.problems];
    if (tags.join() !== wantTags.join())
      problems.push(`git tags ${tags.join(', ') || 'none'}, expected ${wantTags.join(', ')}`);
    if (run('git', ['status', '--porcelain'], root) !== statusBefore)
      problems.push('the working tree changed');
    return {
      bumped: Object.fromEntries(versioned.bumped.map((n) => [n, versioned.after[n]])),
      changelogs: versioned.changelogs,
      published: inspected.packages,
      tags,
      problems,
    };
  } finally {
    await registry?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.filename === process.argv[1]) {
  const report = await dryRun();
  for (const [name, v] of Object.entries(report.published)) {
    console.log(
      `release-dry-run: published ${name}@${v.versions.join(',')}${v.changelog ? ' with CHANGELOG.md' : ''}`,
    );
  }
  console.log(`release-dry-run: git tags ${report.tags.join(', ')}`);
  for (const p of report.problems) console.error(`release-dry-run: ${p}`);
  console.log(report.problems.length === 0 ? 'release-dry-run: ok' : 'release-dry-run: FAILED');
  if (process.argv.includes('--json')) console.log(JSON.stringify(report));
  process.exitCode = report.problems.length === 0 ? 0 : 1;
}
