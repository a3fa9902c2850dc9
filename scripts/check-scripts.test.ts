// Goal: the CI guards really fail when broken. Method: build a tiny fake workspace in a temp
// dir, point the scripts at it with FELIX_CHECK_ROOT, and check their exit codes.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const scripts = import.meta.dirname;
let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function write(root: string, path: string, text: string) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

// Built by concatenation so this file's own source never holds a fake test declaration.
const fakeTest = (name: string) => `${'i'}t('${name}', () => {});\n`;

function fakeRepo(): string {
  const root = mkdtempSync(join(tmpdir(), 'felix-checks-'));
  dirs.push(root);
  write(
    root,
    'docs/architecture.md',
    readFileSync(join(scripts, '..', 'docs', 'architecture.md'), 'utf8'),
  );
  const pkg = (name: string, deps: Record<string, string>) =>
    JSON.stringify({ name, dependencies: deps, devDependencies: {} });
  write(root, 'packages/common/package.json', pkg('@felix/common', {}));
  write(root, 'packages/common/src/index.ts', 'export const x = 1;\n');
  write(root, 'packages/wire/package.json', pkg('@felix/wire', { '@felix/common': 'workspace:*' }));
  write(root, 'packages/wire/src/index.ts', "import { x } from '@felix/common';\nexport { x };\n");
  write(
    root,
    'packages/storage/package.json',
    pkg('@felix/storage', { '@felix/common': 'workspace:*' }),
  );
  write(root, 'packages/storage/src/index.ts', "export { x } from '@felix/common';\n");
  write(root, 'packages/wire/test/a.test.ts', fakeTest('a_frame_round_trips_exactly'));
  return root;
}

function run(script: string, root: string) {
  return spawnSync(process.execPath, [join(scripts, script)], {
    env: { ...process.env, FELIX_CHECK_ROOT: root },
    encoding: 'utf8',
  });
}

describe('repository checks', () => {
  it('check_deps_passes_a_workspace_that_keeps_the_table', () => {
    expect(run('check-deps.mjs', fakeRepo()).status).toBe(0);
  });

  it('check_deps_fails_when_storage_imports_wire', () => {
    const root = fakeRepo();
    write(root, 'packages/storage/src/bad.ts', "import { x } from '@felix/wire';\nexport { x };\n");
    const res = run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('@felix/storage may not import @felix/wire');
  });

  it('check_deps_fails_on_an_undeclared_workspace_import', () => {
    const root = fakeRepo();
    write(
      root,
      'packages/wire/package.json',
      JSON.stringify({ name: '@felix/wire', dependencies: {} }),
    );
    const res = run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('without declaring it');
  });

  it('check_deps_fails_when_a_bench_imports_a_package_source_path', () => {
    const root = fakeRepo();
    write(root, 'scripts/bench/package.json', JSON.stringify({ name: '@felix/bench' }));
    write(
      root,
      'scripts/bench/wire/main.ts',
      "import { x } from '../../../packages/wire/src/index.js';\nconsole.log(x);\n",
    );
    const res = run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain("relative import '../../../packages/wire/src/index.js' leaves");
  });

  it('check_doc_citations_fails_when_a_cited_test_is_missing', () => {
    const root = fakeRepo();
    write(
      root,
      'docs/guide.md',
      'Proven by `a_frame_round_trips_exactly` and `a_missing_test_is_reported`.\n',
    );
    const res = run('check-doc-citations.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('a_missing_test_is_reported');
    expect(res.stderr).not.toContain('`a_frame_round_trips_exactly`');
  });

  it('check_doc_citations_passes_when_every_cited_test_exists', () => {
    const root = fakeRepo();
    write(root, 'docs/guide.md', 'Proven by `a_frame_round_trips_exactly`.\n');
    expect(run('check-doc-citations.mjs', root).status).toBe(0);
  });

  it('check_doc_citations_fails_on_a_duplicate_test_name', () => {
    const root = fakeRepo();
    write(root, 'packages/common/test/b.test.ts', fakeTest('a_frame_round_trips_exactly'));
    const res = run('check-doc-citations.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('duplicate test name');
  });
});
