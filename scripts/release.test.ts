// Goal: a release publishes @felix/client and @felix/wire, each with its changelog, and nothing
// private: no private package is versioned, tagged, published or depended on at run time.
// Method: read the changeset config, the changesets and the package manifests; run the packed-
// package checks (scripts/pack-contents.mjs) on fake packages that break one rule each; and run
// the whole dry-run release (scripts/release-dry-run.mjs, a local registry) once on the built
// tree. check-pack (CI) covers the installed client's round trips through a real broker.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script without types
import { importedPackages, packageProblems, REQUIRED_FIELDS } from './pack-contents.mjs';
// @ts-expect-error: a plain ESM script without types
import { workspacePackages } from './workspace.mjs';

type Manifest = Record<string, unknown> & { name: string; private?: boolean };
type Workspace = { name: string; dir: string; pkg: Manifest }[];

const root = join(import.meta.dirname, '..');
const PUBLIC = ['@felix/client', '@felix/wire'];
const DRY_RUN_DEADLINE_MS = 60_000;
const packages = workspacePackages() as Workspace;
const manifest = (name: string) => packages.find((p) => p.name === name)?.pkg as Manifest;

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

/** A fake installed package: its package.json and one dist file. */
function fakePackage(pkg: Record<string, unknown>, dist: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'felix-pack-contents-'));
  dirs.push(dir);
  const meta = Object.fromEntries(
    REQUIRED_FIELDS.map((f: string) => [f, f === 'engines' ? { node: '>=20.19' } : 'x']),
  );
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ ...meta, name: '@felix/fake', ...pkg }),
  );
  mkdirSync(join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'index.js'), dist);
  return dir;
}

const privateNames = new Set(['@felix/common', '@felix/transport']);

describe('release configuration', () => {
  it('the_common_package_is_private', () => {
    expect(manifest('@felix/common').private).toBe(true);
    const published = packages.filter((p) => p.pkg.private !== true).map((p) => p.name);
    expect(published.sort()).toEqual(PUBLIC);
  });

  it('changesets_neither_version_nor_tag_private_packages', () => {
    const config = JSON.parse(readFileSync(join(root, '.changeset', 'config.json'), 'utf8'));
    expect(config.privatePackages).toEqual({ version: false, tag: false });
  });

  it('no_changeset_names_a_private_package', () => {
    const dir = join(root, '.changeset');
    const named = readdirSync(dir)
      .filter((f) => f.endsWith('.md') && f !== 'README.md')
      .flatMap((f) => {
        const front = readFileSync(join(dir, f), 'utf8').split('---')[1] ?? '';
        return [...front.matchAll(/^\s*["']([^"']+)["']\s*:/gm)].map((m) => `${f}: ${m[1]}`);
      });
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((n) => !PUBLIC.some((p) => n.endsWith(`: ${p}`)))).toEqual([]);
  });

  it('the_public_packages_carry_the_release_metadata', () => {
    for (const name of PUBLIC) {
      const pkg = manifest(name);
      expect(
        REQUIRED_FIELDS.filter((f: string) => pkg[f] === undefined),
        name,
      ).toEqual([]);
      expect(pkg.engines, name).toEqual({ node: '>=20.19' });
      expect(pkg.sideEffects, name).toBe(false);
      expect(pkg.files, name).toContain('CHANGELOG.md');
      const repository = pkg.repository as { url: string; directory: string };
      expect(repository.url, name).toBe(
        (manifest('@felix/client').repository as { url: string }).url,
      );
      expect(join(root, repository.directory), name).toBe(
        packages.find((p) => p.name === name)?.dir,
      );
    }
  });
});

describe('packed package checks', () => {
  it('a_packed_package_that_depends_on_a_private_workspace_package_is_refused', () => {
    const dir = fakePackage(
      { dependencies: { '@felix/common': '0.1.0' } },
      "import { assert } from '@felix/common';\nassert(true);\n",
    );
    expect(packageProblems(dir, privateNames)).toEqual([
      '@felix/fake: dependencies names the private workspace package @felix/common',
    ]);
  });

  it('a_packed_package_whose_dist_imports_an_undeclared_module_is_refused', () => {
    const dir = fakePackage(
      { dependencies: { 'ip-num': '1.6.2' } },
      "import { a } from 'ip-num';\nimport { b } from '@matrixai/quic/config.js';\n",
    );
    expect(packageProblems(dir, privateNames)).toEqual([
      '@felix/fake: dist imports @matrixai/quic, which package.json does not declare',
    ]);
  });

  it('a_packed_package_of_builtins_and_declared_imports_passes', () => {
    const dir = fakePackage(
      { dependencies: { '@felix/wire': '0.2.0' }, optionalDependencies: { native: '1.0.0' } },
      "import net from 'node:net';\nimport { X509Certificate } from 'crypto';\nimport { encodeMessage } from '@felix/wire';\n",
    );
    expect(packageProblems(dir, privateNames)).toEqual([]);
  });

  it('the_published_client_carries_the_patched_quic_library_and_not_the_stock_one', () => {
    const client = join(root, 'packages', 'client');
    expect(readFileSync(join(client, 'dist', 'index.js'), 'utf8')).toContain('[felix patch 2]');
    expect([...importedPackages(client)]).not.toContain('@matrixai/quic');
    expect(Object.keys(manifest('@felix/client').optionalDependencies as object)).toEqual([
      '@matrixai/quic-linux-x64',
    ]);
  });
});

/** The files of `dist` that `entries` load, following relative static and dynamic imports. */
function loadedFrom(dist: string, entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = entries.filter((e) => readdirSync(dist).includes(e));
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const code = readFileSync(join(dist, file), 'utf8');
    for (const m of code.matchAll(/(?:from\s*|import\s*\(\s*|import\s+)["']\.\/([^"']+)["']/g))
      queue.push(m[1] as string);
  }
  return seen;
}

describe('published dist contents', () => {
  it('every_module_a_published_dist_ships_is_loaded_from_its_entry', () => {
    // tsup splits `await import('selfsigned')` (transport's development certificate, never
    // reached from the client's entry) into a chunk of its own; tree-shaking then drops the
    // import but not the chunk, so the tarball carries selfsigned-*.js and its map (1.7 MB of
    // the client's 3.5 MB unpacked, about 276 kB of its 747 kB tarball) that nothing loads.
    const unreached: Record<string, string[]> = {};
    for (const name of PUBLIC) {
      const dist = join(packages.find((p) => p.name === name)?.dir as string, 'dist');
      // The wire's command (its bin) enters at vectors-cli.js.
      const loaded = loadedFrom(dist, ['index.js', 'vectors-cli.js']);
      unreached[name] = readdirSync(dist).filter((f) => f.endsWith('.js') && !loaded.has(f));
    }
    expect(unreached).toEqual({ '@felix/client': [], '@felix/wire': [] });
  });
});

describe('commonjs consumers', () => {
  it('a_commonjs_consumer_can_require_the_public_packages', () => {
    // engines say node >=20.19, where require() loads an ES module, and TypeScript with
    // `module: nodenext` type-checks `import { connect } from '@felix/client'` in a CommonJS
    // file (the "types" condition matches) and emits require(). But "exports" offers only the
    // "import" condition, so Node finds no entry for require() and the compiled consumer dies
    // with ERR_PACKAGE_PATH_NOT_EXPORTED. Self-reference resolves through the manifest's own
    // "exports", as a consumer's require() would.
    const loaded: Record<string, string> = {};
    for (const name of PUBLIC) {
      const dir = packages.find((p) => p.name === name)?.dir as string;
      const req = createRequire(join(dir, 'package.json'));
      try {
        const mod = req(name) as Record<string, unknown>;
        loaded[name] = `${Object.keys(mod).length > 0 ? 'loaded' : 'empty'}`;
      } catch (err) {
        loaded[name] = String((err as { code?: string }).code ?? err);
      }
    }
    expect(loaded).toEqual({ '@felix/client': 'loaded', '@felix/wire': 'loaded' });
  });
});

/** Runs the dry-run release and answers its JSON report. */
function dryRun(): Promise<{ code: number | null; report: Record<string, unknown>; err: string }> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      [join(root, 'scripts', 'release-dry-run.mjs'), '--json'],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: DRY_RUN_DEADLINE_MS,
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.once('error', fail);
    child.once('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      done({ code, report: last.startsWith('{') ? JSON.parse(last) : {}, err });
    });
  });
}

describe('dry-run release', () => {
  it('a_dry_run_release_publishes_exactly_the_two_public_packages_with_changelogs', async () => {
    const { code, report, err } = await dryRun();
    expect(report.problems, err).toEqual([]);
    expect(code).toBe(0);
    const published = report.published as Record<
      string,
      { versions: string[]; changelog: boolean }
    >;
    expect(Object.keys(published).sort()).toEqual(PUBLIC);
    const bumped = report.bumped as Record<string, string>;
    expect(Object.keys(bumped).sort()).toEqual(PUBLIC);
    for (const name of PUBLIC) {
      expect(published[name]).toEqual({ versions: [bumped[name]], changelog: true });
    }
    expect(report.tags).toEqual(PUBLIC.map((n) => `${n}@${bumped[n]}`).sort());
  });
});
