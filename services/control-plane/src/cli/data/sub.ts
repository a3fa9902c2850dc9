/**
 * `felixctl sub <stream>`: prints records from a start position (`--from`), as `offset value`
 * lines (`shard:offset value` on a multi-shard stream read merged) or, with `--json`, one JSON
 * object per line. Stops after `--count` records, at the end of what is stored (`--until-end`:
 * once nothing arrives for `--idle`), or on Ctrl-C.
 */
import type { FelixClient, StreamEvent } from '@felix/client';
import type { Command } from 'commander';
import { type DataEnv, withClient } from './connection.js';
import { UNTIL_END_IDLE_MS_DEFAULT } from './limits.js';
import { durationMs, intArg, isoOfMicros, parseFrom, valueFields, valueText } from './values.js';

interface SubOpts {
  from: string;
  shard?: string;
  count?: string;
  untilEnd?: boolean;
  idle?: string;
}

export function subCommand(program: Command, env: DataEnv): void {
  program
    .command('sub <stream>')
    .description('print records of a stream')
    .option('--from <pos>', 'earliest | latest | <offset> | <ISO time> | <age like 5m>', 'latest')
    .option('--shard <n>', 'read one shard (needed with an offset on a multi-shard stream)')
    .option('--count <n>', 'stop after n records')
    .option('--until-end', 'stop at the end of what is stored (once nothing arrives for --idle)')
    .option(
      '--idle <duration>',
      `quiet time that ends --until-end (default ${UNTIL_END_IDLE_MS_DEFAULT}ms)`,
    )
    .action((stream: string, o: SubOpts) => withClient(env, (c) => readStream(env, c, stream, o)));
}

async function readStream(env: DataEnv, c: FelixClient, stream: string, o: SubOpts) {
  const count = o.count === undefined ? Number.POSITIVE_INFINITY : intArg('--count', o.count, 1);
  const shard = o.shard === undefined ? undefined : intArg('--shard', o.shard);
  const from = parseFrom(o.from);
  const merged = shard === undefined && (await c.shards(stream)).shards > 1;
  const idleMs = o.untilEnd
    ? o.idle === undefined
      ? UNTIL_END_IDLE_MS_DEFAULT
      : durationMs('--idle', o.idle)
    : undefined;
  const ac = new AbortController();
  const stop = () => ac.abort();
  env.io.signal?.addEventListener('abort', stop, { once: true });
  const idle = idleMs === undefined ? undefined : new IdleTimer(idleMs, stop);
  try {
    const sub = c.subscribe(stream, {
      from,
      signal: ac.signal,
      timestamps: true,
      ...(shard === undefined ? {} : { shard }),
    });
    let seen = 0;
    for await (const ev of sub) {
      idle?.touch();
      env.io.out(line(ev, env.flags().json, merged));
      if (++seen >= count) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    idle?.clear();
    env.io.signal?.removeEventListener('abort', stop);
  }
}

function line(ev: StreamEvent, json: boolean, merged: boolean): string {
  if (json) {
    return JSON.stringify({
      stream: ev.stream,
      shard: ev.shard,
      offset: ev.offset,
      // The broker delivers no key with a record: always null here (docs/felixctl.md).
      key: null,
      ...valueFields(ev.data),
      time: isoOfMicros(ev.timestampMicros),
    });
  }
  return `${merged ? `${ev.shard}:` : ''}${ev.offset} ${valueText(ev.data)}`;
}

/** Calls `fire` once `ms` pass without a `touch()`. */
class IdleTimer {
  private readonly timer: NodeJS.Timeout;
  constructor(ms: number, fire: () => void) {
    this.timer = setTimeout(fire, ms);
  }
  touch(): void {
    this.timer.refresh();
  }
  clear(): void {
    clearTimeout(this.timer);
  }
}
