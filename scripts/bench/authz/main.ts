// Authorization benchmark: what a broker pays to verify a Felix token at auth and to check a
// permission on every request, side by side in one run with what a user would write instead.
// Tokens: @felix/authz verifyToken (jose + Felix's claim rules + compiling the permissions)
// against jose's jwtVerify alone, node:crypto's synchronous Ed25519 verify of the same bytes (the
// signature's own cost, the ceiling), and a VerifiedTokenCache hit. Each row reports wall-clock
// ops/s and CPU time per op (user+system of the whole process, so threadpool work counts):
// 1e6 / CPU µs is the rate one core sustains. Checks: PermissionSet.allows against a plain matcher
// that splits the granted strings on every check. Allocation: 10M checks with GC exposed; the
// number of collections during the loop and the heap growth per check (see README.md).
// Run: node --expose-gc --import tsx scripts/bench/authz/main.ts [--seconds 1] [--rounds 3]
// Imports @felix/authz's public entry (its dist): a src/ newer than the build stops the run.
import { verify as edVerify, createPublicKey } from 'node:crypto';
import { PerformanceObserver } from 'node:perf_hooks';
import {
  type Action,
  BROKER_AUDIENCE,
  InMemoryKeySet,
  PermissionSet,
  type TenantObjectKind,
  VerifiedTokenCache,
  exportPublicJwk,
  generateSigningKey,
  parsePermission,
  signToken,
  verifyToken,
} from '@felix/authz';
import { argValue, assertFreshBuild, markdownTable, median } from '@felix/testing-bench-kit';
import { jwtVerify } from 'jose';

assertFreshBuild(import.meta.resolve('@felix/authz'));

const SECONDS = Number(argValue('--seconds', '1'));
const ROUNDS = Number(argValue('--rounds', '3'));
const ALLOC_CHECKS = 10_000_000;
/** Few enough split-per-check checks that their garbage fits in the young generation unswept. */
const NAIVE_ALLOC_CHECKS = 10_000;
const gc = (globalThis as { gc?: () => void }).gc;

const PERMS = [
  'stream.publish:stream:acme/orders/*',
  'stream.subscribe:stream:acme/orders/*',
  'stream.subscribe:stream:acme/audit/log',
  'cache.read:cache:acme/*/*',
  'cache.write:cache:acme/sessions/users',
  'group.consume:group:acme/billing/invoices/*',
  'group.manage:group:acme/billing/invoices/ledger',
  'namespace.manage:namespace:acme/scratch',
];

interface CheckCase {
  action: Action;
  kind: TenantObjectKind;
  t: string;
  n: string | undefined;
  s: string | undefined;
  g: string | undefined;
}
const c = (
  action: Action,
  kind: TenantObjectKind,
  t: string,
  n?: string,
  s?: string,
  g?: string,
): CheckCase => ({ action, kind, t, n, s, g });
/** 16 checks, half allowed and half refused, over every kind (the loop indexes with i & 15). */
const CHECKS: CheckCase[] = [
  c('stream.publish', 'stream', 'acme', 'orders', 'eu'),
  c('stream.publish', 'stream', 'acme', 'audit', 'log'),
  c('stream.subscribe', 'stream', 'acme', 'audit', 'log'),
  c('stream.subscribe', 'stream', 'other', 'orders', 'eu'),
  c('cache.read', 'cache', 'acme', 'sessions', 'users'),
  c('cache.write', 'cache', 'acme', 'sessions', 'users'),
  c('cache.write', 'cache', 'acme', 'sessions', 'carts'),
  c('group.consume', 'group', 'acme', 'orders', 'eu', 'billing'),
  c('group.consume', 'group', 'acme', 'billing', 'invoices', 'ledger'),
  c('group.manage', 'group', 'acme', 'billing', 'invoices', 'mailer'),
  c('stream.manage', 'stream', 'acme', 'scratch', 'tmp'),
  c('cache.manage', 'cache', 'acme', 'prod', 'users'),
  c('cache.read', 'cache', 'other', 'sessions', 'users'),
  c('tenant.manage', 'tenant', 'acme'),
  c('namespace.manage', 'namespace', 'acme', 'scratch'),
  c('stream.publish', 'stream', 'acme', 'orders', 'us'),
];

/** The matcher a user writes first: split every granted string on each check, compare parts. */
function naiveAllows(perms: readonly string[], k: CheckCase): boolean {
  const object = [k.t, k.n, k.s, k.g].filter((x) => x !== undefined).join('/');
  for (const p of perms) {
    const [action, kind, path] = p.split(':');
    if (kind !== k.kind) continue;
    if (action !== k.action && !(action === 'stream.subscribe' && k.action === 'group.consume')) {
      continue;
    }
    const want = object.split('/');
    const have = (path ?? '').split('/');
    if (have.every((seg, i) => seg === '*' || seg === want[i])) return true;
  }
  return false;
}

interface Row {
  name: string;
  wallOps: number;
  cpuUs: number;
}

/** Runs `op` (awaited, `inFlight` at once) for SECONDS; ops/s and CPU µs per op. */
async function measure(inFlight: number, op: () => Promise<unknown> | unknown): Promise<Row> {
  let ops = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const until = start + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < until) {
        for (let i = 0; i < 16; i++) await op();
        ops += 16;
      }
    }),
  );
  const secs = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { name: '', wallOps: ops / secs, cpuUs: (cpu.user + cpu.system) / ops };
}

async function rounds(name: string, inFlight: number, op: () => unknown): Promise<Row> {
  const rows: Row[] = [];
  for (let r = 0; r < ROUNDS; r++) rows.push(await measure(inFlight, op));
  const row = {
    name,
    wallOps: median(rows.map((x) => x.wallOps)),
    cpuUs: median(rows.map((x) => x.cpuUs)),
  };
  console.error(`  ${name}: ${row.wallOps.toFixed(0)} ops/s, ${row.cpuUs.toFixed(2)} CPU µs/op`);
  return row;
}

async function tokenRows(): Promise<Row[]> {
  const pair = await generateSigningKey();
  const keys = new InMemoryKeySet();
  keys.add('acme', pair.kid, pair.publicKey);
  const token = await signToken(
    {
      audience: BROKER_AUDIENCE,
      subject: 'a'.repeat(64),
      tenant: 'acme',
      permissions: PERMS,
      lifetimeS: 900,
    },
    pair,
  );
  const opts = { audience: BROKER_AUDIENCE, tenant: 'acme', keys } as const;
  const joseOpts = { algorithms: ['EdDSA'], issuer: 'felix-auth', audience: BROKER_AUDIENCE };
  const [h, p, s] = token.split('.') as [string, string, string];
  const signingInput = Buffer.from(`${h}.${p}`);
  const signature = Buffer.from(s, 'base64url');
  const nodeKey = createPublicKey({
    key: { ...(await exportPublicJwk(pair.publicKey, pair.kid)) },
    format: 'jwk',
  });
  const cache = new VerifiedTokenCache();
  console.error('tokens:');
  return [
    await rounds('verifyToken, one at a time', 1, () => verifyToken(token, opts)),
    await rounds('verifyToken, 64 in flight', 64, () => verifyToken(token, opts)),
    await rounds('jose jwtVerify alone, one at a time', 1, () =>
      jwtVerify(token, pair.publicKey, joseOpts),
    ),
    await rounds('node:crypto Ed25519 verify (sync, the ceiling)', 1, () =>
      edVerify(null, signingInput, nodeKey, signature),
    ),
    await rounds('VerifiedTokenCache hit', 1, () => cache.verify(token, opts)),
  ];
}

/** Checks per second over the 16-case mix, in a tight loop (no awaits). */
function checkRate(check: (k: CheckCase) => boolean): number {
  const rates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let n = 0;
    let hits = 0;
    const start = performance.now();
    const until = start + SECONDS * 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 4096; i++) if (check(CHECKS[i & 15] as CheckCase)) hits++;
      n += 4096;
    }
    rates.push(n / ((performance.now() - start) / 1000));
    if (hits === 0) throw new Error('no check was allowed: the workload is wrong');
  }
  return median(rates);
}

/** Runs `count` checks after a full GC; collections seen during the loop and heap growth. */
async function allocation(count: number, check: (k: CheckCase) => boolean) {
  let collections = 0;
  const obs = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  gc?.();
  await new Promise((r) => setImmediate(r));
  obs.observe({ entryTypes: ['gc'] });
  const before = process.memoryUsage().heapUsed;
  let hits = 0;
  for (let i = 0; i < count; i++) if (check(CHECKS[i & 15] as CheckCase)) hits++;
  const grown = process.memoryUsage().heapUsed - before;
  await new Promise((r) => setImmediate(r)); // let the observer deliver its entries
  obs.disconnect();
  return { collections, bytesPerCheck: grown / count, hits };
}

async function main(): Promise<void> {
  if (!gc) console.error('warning: run with --expose-gc for the allocation rows');
  const tokens = await tokenRows();
  const set = PermissionSet.compile('acme', PERMS.map(parsePermission));
  const compiled = (k: CheckCase) => set.allows(k.action, k.kind, k.t, k.n, k.s, k.g);
  const naive = (k: CheckCase) => naiveAllows(PERMS, k);
  for (const k of CHECKS) {
    if (k.action.endsWith('.manage') || k.action === 'group.consume') continue;
    if (compiled(k) !== naive(k)) throw new Error(`matchers disagree on ${JSON.stringify(k)}`);
  }
  console.error('checks:');
  const compiledRate = checkRate(compiled);
  const naiveRate = checkRate(naive);
  const compiledAlloc = await allocation(ALLOC_CHECKS, compiled);
  const naiveAlloc = await allocation(NAIVE_ALLOC_CHECKS, naive);

  const tokenTable = tokens.map((r) => [
    r.name,
    r.wallOps.toFixed(0),
    r.cpuUs.toFixed(1),
    (1e6 / r.cpuUs).toFixed(0),
  ]);
  console.log(
    markdownTable(
      [
        'token verification (cached key)',
        { title: 'ops/s', align: 'right' },
        { title: 'CPU µs/op', align: 'right' },
        { title: 'per core /s', align: 'right' },
      ],
      tokenTable,
    ),
  );
  console.log();
  console.log(
    markdownTable(
      [
        'permission check (16-case mix)',
        { title: 'checks/s', align: 'right' },
        { title: 'GCs during', align: 'right' },
        { title: 'heap bytes/check', align: 'right' },
      ],
      [
        [
          'PermissionSet.allows',
          compiledRate.toFixed(0),
          `${compiledAlloc.collections} in ${ALLOC_CHECKS / 1e6}M`,
          compiledAlloc.bytesPerCheck.toFixed(4),
        ],
        [
          'split-per-check matcher',
          naiveRate.toFixed(0),
          `${naiveAlloc.collections} in ${NAIVE_ALLOC_CHECKS / 1e3}k`,
          naiveAlloc.bytesPerCheck.toFixed(1),
        ],
      ],
    ),
  );
}

await main();
