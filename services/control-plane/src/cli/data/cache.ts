/**
 * `felixctl cache get|put|delete|watch <cache> ...`: read and write a cache's keys and follow
 * changes by key or prefix. `get` of a key holding nothing exits 4 (EXIT.absent).
 */
import type { CacheWatchEvent, FelixClient } from '@felix/client';
import type { Command } from 'commander';
import { type DataEnv, withClient } from './connection.js';
import { AbsentError, UsageError } from './report.js';
import { durationMs, intArg, valueFields, valueText } from './values.js';

export function cacheCommands(program: Command, env: DataEnv): void {
  const cache = program.command('cache').description('read, write and watch cache keys');
  const json = () => env.flags().json;
  cache
    .command('get <cache> <key>')
    .description('print the value of a key (exit 4 when it holds none)')
    .action((name: string, key: string) =>
      withClient(env, async (c) => {
        const v = await c.cache(name).get(key);
        if (v === undefined) throw new AbsentError(`no value for ${key} in cache ${name}`);
        env.io.out(json() ? JSON.stringify({ cache: name, key, ...valueFields(v) }) : valueText(v));
      }),
    );
  cache
    .command('put <cache> <key> <value>')
    .description('set a key')
    .option('--ttl <duration>', 'expire after this long (500ms, 30s, 5m, 2h, 1d)')
    .action((name: string, key: string, value: string, o: { ttl?: string }) =>
      withClient(env, async (c) => {
        const ttl = o.ttl === undefined ? {} : { ttlMs: durationMs('--ttl', o.ttl) };
        await c.cache(name).put(key, value, ttl);
        env.io.out(`put ${key} in cache ${name}`);
      }),
    );
  cache
    .command('delete <cache> <key>')
    .description('delete a key')
    .action((name: string, key: string) =>
      withClient(env, async (c) => {
        const old = await c.cache(name).delete(key);
        env.io.out(
          old === undefined ? `${key} held no value` : `deleted ${key} from cache ${name}`,
        );
      }),
    );
  watchCommand(cache, env);
}

interface WatchOpts {
  prefix?: string;
  retained?: boolean;
  count?: string;
  shard?: string;
}

function watchCommand(cache: Command, env: DataEnv): void {
  cache
    .command('watch <cache> [key]')
    .description('print changes of a key, or of every key under --prefix, until Ctrl-C')
    .option('--prefix <prefix>', 'watch every key starting with this')
    .option('--retained', 'print the current values first')
    .option('--shard <n>', 'shard of a prefix watch on a multi-shard cache')
    .option('--count <n>', 'stop after n put or delete events')
    .action((name: string, key: string | undefined, o: WatchOpts) => {
      if ((key === undefined) === (o.prefix === undefined))
        throw new UsageError('give a key or --prefix, one of the two');
      return withClient(env, (c) => follow(env, c, name, key, o));
    });
}

async function follow(
  env: DataEnv,
  c: FelixClient,
  name: string,
  key: string | undefined,
  o: WatchOpts,
) {
  const count = o.count === undefined ? Number.POSITIVE_INFINITY : intArg('--count', o.count, 1);
  const filter = key !== undefined ? { key } : { prefix: o.prefix as string };
  const ac = new AbortController();
  const stop = () => ac.abort();
  env.io.signal?.addEventListener('abort', stop, { once: true });
  const opts = {
    signal: ac.signal,
    ...(o.retained ? { retained: true } : {}),
    ...(o.shard === undefined ? {} : { shard: intArg('--shard', o.shard) }),
  };
  let seen = 0;
  try {
    for await (const ev of c.cache(name).watch(filter, opts)) {
      const l = watchLine(ev, env.flags().json);
      if (l !== undefined) env.io.out(l);
      if ((ev.type === 'put' || ev.type === 'delete') && ++seen >= count) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    env.io.signal?.removeEventListener('abort', stop);
  }
}

function watchLine(ev: CacheWatchEvent, json: boolean): string | undefined {
  if (json) {
    const { value, ...rest } = ev as CacheWatchEvent & { value?: Uint8Array };
    return JSON.stringify(value === undefined ? rest : { ...rest, ...valueFields(value) });
  }
  if (ev.type === 'put') return `put ${ev.key} ${valueText(ev.value)}`;
  if (ev.type === 'delete') return `delete ${ev.key}`;
  if (ev.type === 'state_complete') return `-- ${ev.retainedCount} retained, now live --`;
  return undefined;
}
