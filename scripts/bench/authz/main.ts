// Authorization benchmark: what a broker pays to verify a Felix token at auth and to check a
// permission on every request, side by side in one run with what a user would write instead.
// Tokens: @felix/authz verifyToken (jose + Felix's claim rules + compiling the permissions)
// against jose's jwtVerify alone, node:crypto's synchronous Ed25519 verify of the same bytes
// (the signature's own cost, the ceiling), and a VerifiedTokenCache hit. Each row reports
// wall-clock ops/s and CPU time per op (user+system of the whole process, so thread-pool work
// counts): 1e6 / CPU µs is the rate one core sustains. Checks: PermissionSet.allows against a
// plain matcher that splits the granted strings on every check, and casbin (RBAC with domains,
// keyMatch2, fed the same grants with inheritance expanded: the library the issue weighed).
// Allocation: after a full GC, N checks in a loop; the collections V8 ran meanwhile and the
// heap growth per check. A 64 MiB young generation keeps the other matchers' garbage (up to
// about 20 MB) uncollected, so their growth is their allocation; a row that saw a collection
// prints n/a.
// Run: node --expose-gc --min-semi-space-size=64 --max-semi-space-size=64 --import tsx \
//        scripts/bench/authz/main.ts [--seconds 1] [--rounds 3]
// Imports @felix/authz's public entry (its dist): a src/ newer than the build stops the run.
import { verify as edVerify, createPublicKey } from 'node:crypto';
import { GCProfiler } from 'node:v8';
import {
  type Action,
  BROKER_AUDIENCE,
  InMemoryKeySet,
  PermissionSet,
  type TenantObjectKind,
  KIND_DEPTH,
  VerifiedTokenCache,
  expandPermission,
  exportPublicJwk,
  generateSigningKey,
  parsePermission,
  signToken,
  verifyToken,
} from '@felix/authz';
import { argValue, assertFreshBuild, markdownTable, median } from '@felix/testing-bench-kit';
import { type Enforcer, newEnforcer, newModelFromString } from 'casbin';
import { jwtVerify } from 'jose';

assertFreshBuild(import.meta.resolve('@felix/authz'));

const SECONDS = Number(argValue('--seconds', '1'));
const ROUNDS = Number(argValue('--rounds', '3'));
const ALLOC_CHECKS = 10_000_000;
/** Few enough split-per-check checks that their garbage fits in the young generation unswept. */
const NAIVE_ALLOC_CHECKS = 10_000;
/** Casbin allocates several KB per check: fewer of them fit. */
const CASBIN_ALLOC_CHECKS = 1_000;
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

/** Casbin's RBAC-with-domains model, the tenant as the domain (as the reference uses it). */
const CASBIN_MODEL = `
[request_definition]
r = sub, dom, obj, act
[policy_definition]
p = sub, dom, obj, act
[role_definition]
g = _, _, _
[policy_effect]
e = some(where (p.eft == allow))
[matchers]
m = g(r.sub, p.sub, r.dom) && r.dom == p.dom && keyMatch2(r.obj, p.obj) && r.act == p.act
`;

/** An enforcer holding PERMS (inheritance expanded) on one role bound to `alice` in `acme`. */
async function casbinEnforcer(): Promise<Enforcer> {
  const e = await newEnforcer(newModelFromString(CASBIN_MODEL));
  for (const entry of PERMS.map(parsePermission).flatMap(expandPermission)) {
    const stars = Array(KIND_DEPTH[entry.kind] - entry.prefix.length).fill('*');
    await e.addPolicy(
      'role',
      'acme',
      `${entry.kind}:${[...entry.prefix, ...stars].join('/')}`,
      entry.action,
    );
  }
  await e.addGroupingPolicy('alice', 'role', 'acme');
  return e;
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

/** Medians over ROUNDS rounds of `measure`, after one uncounted warm-up round. */
async function rounds(name: string, inFlight: number, op: () => unknown): Promise<Row> {
  const rows: Row[] = [];
  await measure(inFlight, op); // warm-up round, not counted: the first rows ran colder JIT code
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

/**
 * Runs `count` checks after a full GC: the collections V8 ran during the loop (GCProfiler, read
 * synchronously) and the heap growth per check. With no collection in between, the growth is
 * exactly what the loop allocated.
 */
function allocation(count: number, check: (k: CheckCase) => boolean) {
  gc?.();
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  let hits = 0;
  for (let i = 0; i < count; i++) if (check(CHECKS[i & 15] as CheckCase)) hits++;
  const grown = process.memoryUsage().heapUsed - before;
  const collections = profiler.stop().statistics.length;
  return { collections, bytesPerCheck: grown / count, hits };
}

/** A check-table row; heap growth per check means allocation only when no collection ran. */
function checkRow(
  name: string,
  rate: number,
  alloc: { collections: number; bytesPerCheck: number },
  count: number,
): string[] {
  const during = count >= 1e6 ? `${count / 1e6}M` : `${count / 1e3}k`;
  const bytes =
    alloc.collections === 0 ? alloc.bytesPerCheck.toFixed(alloc.bytesPerCheck < 1 ? 4 : 1) : 'n/a';
  return [name, rate.toFixed(0), `${alloc.collections} in ${during}`, bytes];
}

async function main(): Promise<void> {
  if (!gc) console.error('warning: run with --expose-gc for the allocation rows');
  const tokens = await tokenRows();
  const set = PermissionSet.compile('acme', PERMS.map(parsePermission));
  const compiled = (k: CheckCase) => set.allows(k.action, k.kind, k.t, k.n, k.s, k.g);
  const naive = (k: CheckCase) => naiveAllows(PERMS, k);
  const enforcer = await casbinEnforcer();
  const casbin = (k: CheckCase) => {
    const path = [k.t, k.n, k.s, k.g].filter((x) => x !== undefined).join('/');
    return enforcer.enforceSync('alice', k.t, `${k.kind}:${path}`, k.action);
  };
  for (const k of CHECKS) {
    if (compiled(k) !== casbin(k)) throw new Error(`casbin disagrees on ${JSON.stringify(k)}`);
  }
  for (const k of CHECKS) {
    if (k.action.endsWith('.manage') || k.action === 'group.consume') continue;
    if (compiled(k) !== naive(k)) throw new Error(`matchers disagree on ${JSON.stringify(k)}`);
  }
  console.error('checks:');
  const compiledRate = checkRate(compiled);
  const naiveRate = checkRate(naive);
  const casbinRate = checkRate(casbin);
  const compiledAlloc = allocation(ALLOC_CHECKS, compiled);
  const naiveAlloc = allocation(NAIVE_ALLOC_CHECKS, naive);
  const casbinAlloc = allocation(CASBIN_ALLOC_CHECKS, casbin);

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
        checkRow('PermissionSet.allows', compiledRate, compiledAlloc, ALLOC_CHECKS),
        checkRow('split-per-check matcher', naiveRate, naiveAlloc, NAIVE_ALLOC_CHECKS),
        checkRow(
          'casbin enforceSync (domains, keyMatch2)',
          casbinRate,
          casbinAlloc,
          CASBIN_ALLOC_CHECKS,
        ),
      ],
    ),
  );
}

await main();
