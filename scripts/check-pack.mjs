#!/usr/bin/env node
// Proves the published packages work outside the workspace: packs each with `pnpm pack`,
// installs the tarballs into an empty project with npm, checks that they need nothing private
// from the workspace at run time (no private @felix dependency, every import of their dist
// declared), imports them as ESM, type-checks a small consumer against their shipped types, and
// round-trips a record through a real broker over QUIC and over TLS with the installed client
// (which carries the patched QUIC library and loads quiche's native addon from npm).
// Packages and the broker must be built first.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBroker, freePort } from '../demos/support/broker.mjs';
import { packageProblems } from './pack-contents.mjs';
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
const TSC = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const BROKER_MAIN = join(root, 'services', 'broker', 'dist', 'main.js');
const ROUND_TRIP_DEADLINE_MS = 60_000;

/** Connects with the installed client, publishes one record and reads it back by its offset. */
const ROUND_TRIP = `import { connect } from '@felix/client';
const [transport, url] = [process.argv[2], process.argv[3]];
const felix = await connect({
  servers: [url],
  tenant: 't1',
  token: process.env.FELIX_TOKEN,
  tls: { fingerprint: process.env.FELIX_FINGERPRINT },
});
const sent = \`hello over \${transport} \${Date.now()}\`;
const { offset, shard } = await felix.publish('pack', sent);
for await (const ev of felix.subscribe('pack', { from: offset, shard })) {
  const got = new TextDecoder().decode(ev.data);
  if (got !== sent) throw new Error(\`read back \${got}, sent \${sent}\`);
  break;
}
await felix.close();
console.log(\`round trip ok over \${transport}: offset \${offset} of shard \${shard}\`);
`;

const run = (cmd, args, cwd, opts = {}) =>
  execFileSync(cmd, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    ...opts,
  });

function packAndInstall(ready, scratch) {
  for (const p of ready) {
    run('npx', ['--yes', 'pnpm@10.34.9', 'pack', '--pack-destination', scratch], p.dir);
  }
  const tarballs = readdirSync(scratch)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => join(scratch, f));
  const app = join(scratch, 'app');
  mkdirSync(app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs], app);
  return app;
}

function checkContents(ready, app) {
  const privateNames = new Set(
    workspacePackages()
      .filter((p) => p.pkg.private === true)
      .map((p) => p.name),
  );
  const problems = ready.flatMap((p) =>
    packageProblems(join(app, 'node_modules', ...p.name.split('/')), privateNames),
  );
  if (problems.length > 0) {
    for (const problem of problems) console.error(`check-pack: ${problem}`);
    throw new Error('a packed package depends on something it does not declare or may not use');
  }
}

function typeCheckAndImport(ready, app) {
  const lines = ready.flatMap((p) => CONSUMERS[p.name]);
  writeFileSync(join(app, 'consumer.ts'), `${lines.join('\n')}\n`);
  const compilerOptions = {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: [],
  };
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions, files: ['consumer.ts'] }),
  );
  run(process.execPath, [TSC, '-p', 'tsconfig.json'], app);
  // Execute it as ESM: strip the types by compiling to a plain module next to it.
  run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit', 'false', '--outDir', 'out'], app);
  writeFileSync(join(app, 'out', 'package.json'), JSON.stringify({ type: 'module' }));
  process.stdout.write(run(process.execPath, [join(app, 'out', 'consumer.js')], app));
}

/**
 * The installed client runs Felix's patched QUIC library (bundled in its dist) over upstream's
 * native addon from npm, and the stock library is not installed at all.
 */
function checkQuicLibrary(app) {
  const modules = join(app, 'node_modules');
  const dist = readFileSync(join(modules, '@felix', 'client', 'dist', 'index.js'), 'utf8');
  const problems = [];
  if (!dist.includes('[felix patch 2]'))
    problems.push('the client dist lacks the patched QUIC code');
  if (existsSync(join(modules, '@matrixai', 'quic')))
    problems.push('the stock @matrixai/quic was installed beside the client');
  const addon = join(modules, '@matrixai', `quic-${process.platform}-${process.arch}`);
  if (!existsSync(addon)) problems.push(`the native addon ${addon} was not installed`);
  if (problems.length > 0) throw new Error(`check-pack: ${problems.join('; ')}`);
}

/** A standalone broker under `scratch`, and the installed client round-tripping through it. */
async function roundTrip(app, scratch) {
  if (!existsSync(BROKER_MAIN)) throw new Error(`${BROKER_MAIN} is missing: build first`);
  checkQuicLibrary(app);
  writeFileSync(join(app, 'round-trip.mjs'), ROUND_TRIP);
  const broker = await startBroker({
    dir: join(scratch, 'broker'),
    yaml: 'streams:\n  - { tenant: t1, name: pack, shards: 1 }\n',
    port: await freePort(),
    httpPort: await freePort(),
  });
  try {
    const env = {
      ...process.env,
      FELIX_TOKEN: await broker.tokenFor('t1'),
      FELIX_FINGERPRINT: broker.fingerprint,
    };
    for (const transport of ['quic', 'tls']) {
      const out = run(process.execPath, ['round-trip.mjs', transport, broker.url(transport)], app, {
        env,
        timeout: ROUND_TRIP_DEADLINE_MS,
      });
      process.stdout.write(out);
    }
  } finally {
    await broker.stop();
  }
}

async function main() {
  const published = workspacePackages().filter((p) => p.pkg.private !== true && CONSUMERS[p.name]);
  const ready = published.filter((p) => existsSync(join(p.dir, 'dist', 'index.js')));
  for (const p of published) {
    if (!ready.includes(p)) console.log(`check-pack: ${p.name} has no dist yet; skipped`);
  }
  if (ready.length === 0) {
    console.log('check-pack: nothing to pack');
    return;
  }
  const scratch = mkdtempSync(join(tmpdir(), 'felix-pack-'));
  try {
    const t0 = Date.now();
    const app = packAndInstall(ready, scratch);
    console.log(`check-pack: packed and installed in ${Date.now() - t0} ms`);
    checkContents(ready, app);
    typeCheckAndImport(ready, app);
    const names = ready.map((p) => p.name);
    const t1 = Date.now();
    if (names.includes('@felix/client')) await roundTrip(app, scratch);
    console.log(`check-pack: round trips in ${Date.now() - t1} ms`);
    console.log(
      `check-pack: ${names.join(', ')} packed, installed, checked for private dependencies, imported and type-checked${names.includes('@felix/client') ? ', and the client round-tripped a record over QUIC and TLS' : ''}`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
