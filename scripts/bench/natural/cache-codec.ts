/**
 * The codec work of one cache get and one put at each end, JSON (the quick readers and writers of
 * fast/) against the binary exchange (binary/cache.ts), with no I/O: CPU per operation from
 * process.cpuUsage and young-generation collections per 100,000 operations (a proxy for the
 * garbage each leaves behind). Cases alternate, several times, so a loaded machine disturbs both.
 *
 *   node --import tsx scripts/bench/natural/cache-codec.ts [--n 200000] [--rounds 4]
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { argValue } from '@felix/testing-bench-kit';
import {
  CacheFrameReader,
  GetRequestReader,
  PutRequestReader,
  cacheScopeBytes,
  decodeCacheAnswer,
  encodeCacheGet,
  encodeCacheOk,
  encodeCachePut,
  encodeCacheValue,
  encodeGetRequest,
  encodePutRequest,
  getRequestPrefix,
  okAnswerFrame,
  putRequestPrefix,
  readOkAnswer,
  readValueAnswer,
  valueAnswerFrame,
  valueAnswerHead,
} from '@felix/wire';

const n = Number(argValue('--n', '200000'));
const rounds = Number(argValue('--rounds', '4'));
const VALUE = new Uint8Array(1024).fill(7);
const scope = { tenant_id: 't1', namespace: 'default', cache: 'kv' };
const key = (i: number) => `k${i % 1000}`;
const payload = (frame: Uint8Array) => frame.subarray(12);
let sink = 0;

const getPrefix = getRequestPrefix('t1', 'default', 'kv');
const putPrefix = putRequestPrefix('t1', 'default', 'kv');
const bin = cacheScopeBytes('t1', 'default', 'kv');
const heads = Array.from({ length: 1000 }, (_, i) => valueAnswerHead(scope, key(i), VALUE));
const getReader = new GetRequestReader();
const putReader = new PutRequestReader();
const cacheReader = new CacheFrameReader();
// What each end receives, made once: the timed loops read these.
const jsonGets = Array.from({ length: 1000 }, (_, i) => encodeGetRequest(getPrefix, key(i), i + 1));
const jsonValues = jsonGets.map((g, i) => valueAnswerFrame(heads[i]!, g.requestId));
const jsonPuts = Array.from({ length: 1000 }, (_, i) =>
  encodePutRequest(putPrefix, scope, key(i), VALUE, i + 1),
);
const binGets = Array.from({ length: 1000 }, (_, i) => encodeCacheGet(bin, key(i), i + 1));
const binValues = Array.from({ length: 1000 }, (_, i) => encodeCacheValue(i + 1, VALUE));
const binPuts = Array.from({ length: 1000 }, (_, i) => encodeCachePut(bin, key(i), VALUE, i + 1));

const cases: Record<string, (i: number) => void> = {
  'client get, JSON': (i) => {
    const req = encodeGetRequest(getPrefix, key(i), (i % 1000) + 1);
    sink += req.frame.length;
    sink += readValueAnswer(jsonGets[i % 1000]!, key(i), payload(jsonValues[i % 1000]!))!.value!
      .length;
  },
  'client get, binary': (i) => {
    sink += encodeCacheGet(bin, key(i), (i % 1000) + 1).length;
    const a = decodeCacheAnswer(payload(binValues[i % 1000]!), key(i));
    sink += a.type === 'cache_value' ? a.value!.length : 0;
  },
  'broker get, JSON': (i) => {
    const msg = getReader.read(payload(jsonGets[i % 1000]!.frame))!;
    sink += valueAnswerFrame(heads[i % 1000]!, msg.request_id).length;
  },
  'broker get, binary': (i) => {
    const msg = cacheReader.request(payload(binGets[i % 1000]!));
    sink += encodeCacheValue(msg.request_id!, VALUE).length;
  },
  'client put, JSON': (i) => {
    sink += encodePutRequest(putPrefix, scope, key(i), VALUE, i + 1).length;
    sink += readOkAnswer(i + 1, payload(okAnswerFrame(i + 1))) === undefined ? 0 : 1;
  },
  'client put, binary': (i) => {
    sink += encodeCachePut(bin, key(i), VALUE, i + 1).length;
    sink += decodeCacheAnswer(payload(encodeCacheOk(i + 1)), key(i)).type.length;
  },
  'broker put, JSON': (i) => {
    const msg = putReader.read(payload(jsonPuts[i % 1000]!))!;
    sink += msg.value.length + okAnswerFrame(msg.request_id!).length;
  },
  'broker put, binary': (i) => {
    const msg = cacheReader.request(payload(binPuts[i % 1000]!));
    sink += (msg as { value: Uint8Array }).value.length + encodeCacheOk(msg.request_id!).length;
  },
};

let scavenges = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (
      (e as unknown as { detail?: { kind?: number } }).detail?.kind ===
      constants.NODE_PERFORMANCE_GC_MINOR
    )
      scavenges++;
  }
}).observe({ entryTypes: ['gc'] });

const results = new Map<string, { us: number[]; gcs: number[] }>();
for (let r = 0; r <= rounds; r++) {
  for (const [name, run] of Object.entries(cases)) {
    // The observer reports on a later turn: let the last case's collections land first.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const gc0 = scavenges;
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) run(i);
    const t = process.cpuUsage(t0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (r === 0) continue; // the first round warms the JIT
    const row = results.get(name) ?? { us: [], gcs: [] };
    row.us.push((t.user + t.system) / n);
    row.gcs.push(((scavenges - gc0) * 100_000) / n);
    results.set(name, row);
  }
}
const fmt = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(', ');
for (const [name, row] of results) {
  console.log(
    `${name}: CPU per op ${fmt(row.us, 2)} µs; scavenges per 100k ops ${fmt(row.gcs, 1)}`,
  );
}
if (sink === 0) console.log('');
