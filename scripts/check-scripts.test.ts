// Goal: the CI guards really fail when broken, and their known-violation lists only shrink.
// Method: build a tiny fake workspace in a temp dir, point the scripts at it with
// FELIX_CHECK_ROOT, break one rule at a time, and check exit codes and messages.
import { spawn } from 'node:child_process';
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
  // Only the real dependency table: the rest of the doc cites files this fake repo lacks.
  const doc = readFileSync(join(scripts, '..', 'docs', 'architecture.md'), 'utf8');
  const table = doc.split('## Dependency table')[1]?.split('\n## ')[0] ?? '';
  write(root, 'docs/architecture.md', `# Architecture\n\n## Dependency table${table}`);
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
  // docs/architecture.md cites the script by path, and file citations must resolve.
  write(root, 'scripts/check-deps.mjs', '// stand-in: the tests run the real scripts\n');
  return root;
}

/** Runs a check script on a fake repo; async, so the test worker's event loop stays free. */
function run(
  script: string,
  root: string,
  ...args: string[]
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(scripts, script), ...args], {
      env: { ...process.env, FELIX_CHECK_ROOT: root },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('repository checks', () => {
  it('check_deps_passes_a_workspace_that_keeps_the_table', async () => {
    expect((await run('check-deps.mjs', fakeRepo())).status).toBe(0);
  });

  it('check_deps_fails_when_storage_imports_wire', async () => {
    const root = fakeRepo();
    write(root, 'packages/storage/src/bad.ts', "import { x } from '@felix/wire';\nexport { x };\n");
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('@felix/storage may not import @felix/wire');
  });

  it('check_deps_fails_on_an_undeclared_workspace_import', async () => {
    const root = fakeRepo();
    write(
      root,
      'packages/wire/package.json',
      JSON.stringify({ name: '@felix/wire', dependencies: {} }),
    );
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('without declaring it');
  });

  it('check_deps_fails_when_a_bench_imports_a_package_source_path', async () => {
    const root = fakeRepo();
    write(root, 'scripts/bench/package.json', JSON.stringify({ name: '@felix/bench' }));
    write(
      root,
      'scripts/bench/wire/main.ts',
      "import { x } from '../../../packages/wire/src/index.js';\nconsole.log(x);\n",
    );
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain("relative import '../../../packages/wire/src/index.js' leaves");
  });

  it('check_doc_citations_fails_when_a_cited_test_is_missing', async () => {
    const root = fakeRepo();
    write(
      root,
      'docs/guide.md',
      'Proven by `a_frame_round_trips_exactly` and `a_missing_test_is_reported`.\n',
    );
    const res = await run('check-doc-citations.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('a_missing_test_is_reported');
    expect(res.stderr).not.toContain('`a_frame_round_trips_exactly`');
  });

  it('check_doc_citations_passes_when_every_cited_test_exists', async () => {
    const root = fakeRepo();
    write(root, 'docs/guide.md', 'Proven by `a_frame_round_trips_exactly`.\n');
    expect((await run('check-doc-citations.mjs', root)).status).toBe(0);
  });

  it('check_doc_citations_fails_when_a_doc_cites_a_source_file_that_does_not_exist', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/session/frames.ts', 'export const f = 1;\n');
    write(
      root,
      'docs/guide.md',
      'See `session/frames.ts`, `packages/wire/src/index.ts`, `src/index.ts`, `frames.ts`, `*.test.ts` and `session/answers.ts`.\n',
    );
    const res = await run('check-doc-citations.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('docs/guide.md cites `session/answers.ts`, which is not a file');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('check_doc_citations_passes_a_removed_file_named_in_the_ignore_list', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/README.md', 'Once `session/answers.ts`; see `wire/src/index.ts`.\n');
    write(root, 'scripts/doc-citation-ignore.txt', '# removed on purpose\nsession/answers.ts\n');
    expect((await run('check-doc-citations.mjs', root)).status).toBe(0);
  });

  it('check_doc_citations_fails_on_a_duplicate_test_name', async () => {
    const root = fakeRepo();
    write(root, 'packages/common/test/b.test.ts', fakeTest('a_frame_round_trips_exactly'));
    const res = await run('check-doc-citations.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('duplicate test name');
  });
});

// A function of `lines` lines (declaration line and closing brace included).
const longFunction = (name: string, lines: number) =>
  `export function ${name}(): number {\n  let n = 0;\n${'  n++;\n'.repeat(lines - 3)}  return n;\n}\n`.replace(
    '  return n;\n}\n',
    '}\n',
  );

describe('structure checks in check-deps', { timeout: 120_000 }, () => {
  it('check_deps_fails_on_an_import_circle_and_prints_it', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/a.ts', "import { b } from './b.js';\nexport const a = b;\n");
    // A type-only import closes the circle: it counts.
    write(
      root,
      'packages/wire/src/b.ts',
      "import type { A } from './c.js';\nexport const b = 1;\n",
    );
    write(
      root,
      'packages/wire/src/c.ts',
      "import { a } from './a.js';\nexport type A = typeof a;\n",
    );
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(
      'import circle: packages/wire/src/a.ts → packages/wire/src/b.ts → packages/wire/src/c.ts → packages/wire/src/a.ts',
    );
  });

  it('check_deps_fails_on_an_import_circle_between_test_files', async () => {
    const root = fakeRepo();
    write(
      root,
      'packages/wire/test/helpers.ts',
      "import { t } from './more.js';\nexport const h = t;\n",
    );
    write(
      root,
      'packages/wire/test/more.ts',
      "import { h } from './helpers.js';\nexport const t = 1;\nexport const u = h;\n",
    );
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(
      'import circle: packages/wire/test/helpers.ts → packages/wire/test/more.ts',
    );
  });

  it('check_deps_passes_imports_that_form_no_circle', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/a.ts', "import { b } from './b.js';\nexport const a = b;\n");
    write(root, 'packages/wire/src/b.ts', "import { c } from './c.js';\nexport const b = c;\n");
    write(root, 'packages/wire/src/c.ts', 'export const c = 1;\n');
    expect((await run('check-deps.mjs', root)).status).toBe(0);
  });

  it('check_deps_fails_when_two_broker_folders_import_each_other', async () => {
    const root = fakeRepo();
    write(root, 'services/broker/package.json', JSON.stringify({ name: '@felix/broker' }));
    // No file circle: session/a → caches/b and caches/c → session/d.
    write(
      root,
      'services/broker/src/session/a.ts',
      "import { b } from '../caches/b.js';\nexport const a = b;\n",
    );
    write(root, 'services/broker/src/caches/b.ts', 'export const b = 1;\n');
    write(
      root,
      'services/broker/src/caches/c.ts',
      "import { d } from '../session/d.js';\nexport const c = d;\n",
    );
    write(root, 'services/broker/src/session/d.ts', 'export const d = 1;\n');
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('broker folders caches/ and session/ import each other');
    expect(res.stderr).not.toContain('import circle');
  });

  it('check_deps_fails_on_a_source_file_over_800_lines', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/big.ts', 'export const x = 1;\n'.repeat(801));
    write(root, 'packages/wire/src/fits.ts', 'export const y = 1;\n'.repeat(800));
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('packages/wire/src/big.ts has 801 lines');
    expect(res.stderr).not.toContain('fits.ts');
  });

  it('check_deps_passes_a_violation_its_known_list_names_and_fails_once_it_is_gone', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/big.ts', 'export const x = 1;\n'.repeat(801));
    write(
      root,
      'scripts/check-deps-known.txt',
      '# today\nfile-over-800-lines: packages/wire/src/big.ts\n',
    );
    expect((await run('check-deps.mjs', root)).status).toBe(0);
    write(root, 'packages/wire/src/big.ts', 'export const x = 1;\n');
    const res = await run('check-deps.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(
      'lists "file-over-800-lines: packages/wire/src/big.ts", which no longer occurs',
    );
  });
});

describe('check-function-length', { timeout: 120_000 }, () => {
  const exceptions = 'scripts/function-length-exceptions.txt';

  it('check_function_length_fails_on_a_new_function_over_70_lines', async () => {
    const root = fakeRepo();
    write(
      root,
      'packages/wire/src/long.ts',
      longFunction('seventy', 70) + longFunction('seventyOne', 71),
    );
    const res = await run('check-function-length.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('packages/wire/src/long.ts seventyOne has 71 lines');
    expect(res.stderr).not.toContain('seventy has');
  });

  it('check_function_length_counts_methods_arrows_accessors_and_constructors', async () => {
    const root = fakeRepo();
    const body = '    n++;\n'.repeat(70);
    write(
      root,
      'packages/wire/src/shapes.ts',
      `export class Shape {\n  n = 0;\n  constructor() {\n${body}  }\n  area(): void {\n${body}  }\n  get size(): number {\n${body}    return 1;\n  }\n}\nexport const arrow = () => {\n  let n = 0;\n${body.replaceAll('    ', '  ')}  return n;\n};\n`,
    );
    const res = await run('check-function-length.mjs', root);
    expect(res.status).toBe(1);
    for (const name of ['Shape.constructor', 'Shape.area', 'Shape.get size', 'arrow']) {
      expect(res.stderr).toContain(`packages/wire/src/shapes.ts ${name} has`);
    }
  });

  it('check_function_length_passes_a_listed_function_and_fails_when_it_grows_or_fits', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/long.ts', longFunction('big', 80));
    write(root, exceptions, '80 packages/wire/src/long.ts big\n');
    expect((await run('check-function-length.mjs', root)).status).toBe(0);
    write(root, 'packages/wire/src/long.ts', longFunction('big', 81));
    expect((await run('check-function-length.mjs', root)).stderr).toContain(
      'grew from 80 to 81 lines',
    );
    write(root, 'packages/wire/src/long.ts', longFunction('big', 70));
    const res = await run('check-function-length.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('lists packages/wire/src/long.ts big, no longer over 70 lines');
  });

  it('check_function_length_write_regenerates_the_exceptions_file', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/long.ts', longFunction('big', 75));
    write(root, exceptions, '90 packages/wire/src/gone.ts old\n');
    expect((await run('check-function-length.mjs', root, '--write')).status).toBe(0);
    const text = readFileSync(join(root, exceptions), 'utf8');
    expect(text).toContain('75 packages/wire/src/long.ts big\n');
    expect(text).not.toContain('gone.ts');
    expect((await run('check-function-length.mjs', root)).status).toBe(0);
  });
});

describe('check-catch-reasons', { timeout: 120_000 }, () => {
  const swallowed = [
    'export async function f(p: Promise<void>) {',
    '  await p.catch(() => undefined);',
    '  await p.catch(() => {});',
    '  try {',
    '    await p;',
    '  } catch {}',
    '}',
    '',
  ].join('\n');

  it('check_catch_reasons_fails_on_a_swallowed_error_without_a_reason', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/quiet.ts', swallowed);
    const res = await run('check-catch-reasons.mjs', root);
    expect(res.status).toBe(1);
    for (const line of [2, 3, 6])
      expect(res.stderr).toContain(`packages/wire/src/quiet.ts:${line}`);
  });

  it('check_catch_reasons_passes_a_swallowed_error_with_a_reason_beside_or_above', async () => {
    const root = fakeRepo();
    const explained = [
      'export async function f(p: Promise<void>) {',
      '  await p.catch(() => undefined); // the caller already reported it',
      '  // closing anyway: a failed close leaves nothing to undo',
      '  await p.catch(() => {});',
      '  try {',
      '    await p;',
      '  } catch {',
      '    // best effort: the file may be gone',
      '  }',
      '  const text = "// not a comment";',
      '  return text;',
      '}',
      '',
    ].join('\n');
    write(root, 'packages/wire/src/quiet.ts', explained);
    expect((await run('check-catch-reasons.mjs', root)).status).toBe(0);
    write(
      root,
      'packages/wire/src/quiet.ts',
      'export async function f(p: Promise<void>) {\n  const s = "// not a comment"; await p.catch(() => {});\n  return s;\n}\n',
    );
    expect((await run('check-catch-reasons.mjs', root)).status).toBe(1);
  });

  it('check_catch_reasons_holds_a_known_count_and_fails_when_the_file_has_fewer', async () => {
    const root = fakeRepo();
    write(root, 'packages/wire/src/quiet.ts', swallowed);
    write(root, 'scripts/check-catch-reasons-known.txt', '3 packages/wire/src/quiet.ts\n');
    expect((await run('check-catch-reasons.mjs', root)).status).toBe(0);
    write(root, 'scripts/check-catch-reasons-known.txt', '2 packages/wire/src/quiet.ts\n');
    expect((await run('check-catch-reasons.mjs', root)).status).toBe(1);
    write(root, 'scripts/check-catch-reasons-known.txt', '4 packages/wire/src/quiet.ts\n');
    const res = await run('check-catch-reasons.mjs', root);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('now has 3, not 4: lower it');
  });
});
