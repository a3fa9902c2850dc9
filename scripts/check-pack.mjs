#!/usr/bin/env node
// Proves the published packages work outside the workspace: packs each with `pnpm pack`,
// installs the tarballs into a scratch directory, imports them as ESM and type-checks a small
// consumer file against their shipped types. Packages must be built first.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, workspacePackages } from './workspace.mjs';

/** Published packages and a line of TypeScript that must compile against each. */
const CONSUMERS = {
  '@felix/wire': [
    "import { FrameDecoder, encodeMessage } from '@felix/wire';",
    "const frame: Uint8Array = encodeMessage({ type: 'ok', request_id: 1 } as Parameters<typeof encodeMessage>[0]);",
    'const frames = new FrameDecoder().push(frame);',
    "console.log('wire ok:', frames.length, 'frame');",
  ],
  '@felix/client': [
    "import { connect } from '@felix/client';",
    "console.log('client ok:', typeof connect);",
  ],
};

const published = workspacePackages().filter((p) => p.pkg.private !== true && CONSUMERS[p.name]);
const ready = published.filter((p) => existsSync(join(p.dir, 'dist', 'index.js')));
for (const p of published) {
  if (!ready.includes(p)) console.log(`check-pack: ${p.name} has no dist yet; skipped`);
}
if (ready.length === 0) {
  console.log('check-pack: nothing to pack');
  process.exit(0);
}

const scratch = mkdtempSync(join(tmpdir(), 'felix-pack-'));
const run = (cmd, args, cwd) =>
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
try {
  const tarballs = [];
  for (const p of ready) {
    run('npx', ['--yes', 'pnpm@10.34.9', 'pack', '--pack-destination', scratch], p.dir);
  }
  for (const f of readdirSync(scratch)) if (f.endsWith('.tgz')) tarballs.push(join(scratch, f));
  const app = join(scratch, 'app');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs], app);

  const lines = ready.flatMap((p) => CONSUMERS[p.name]);
  writeFileSync(join(app, 'consumer.ts'), `${lines.join('\n')}\n`);
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: [],
      },
      files: ['consumer.ts'],
    }),
  );
  run(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
    app,
  );
  // Execute it as ESM: strip the types by compiling to a plain module next to it.
  run(
    process.execPath,
    [
      join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      'tsconfig.json',
      '--noEmit',
      'false',
      '--outDir',
      'out',
    ],
    app,
  );
  writeFileSync(join(app, 'out', 'package.json'), JSON.stringify({ type: 'module' }));
  const out = run(process.execPath, [join(app, 'out', 'consumer.js')], app);
  process.stdout.write(out);
  console.log(
    `check-pack: ${ready.map((p) => p.name).join(', ')} packed, installed, imported and type-checked`,
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
