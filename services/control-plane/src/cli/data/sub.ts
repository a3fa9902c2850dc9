/**
 * `felixctl sub <stream>`: prints records from a start position (`--from`), as `offset value`
 * lines (`shard:offset value` on a multi-shard stream read merged) or, with `--json`, one JSON
 * object per line. Stops after `--count` records, at the end of what is stored (`--until-end`:
 * once nothing arrives for `--idle`), or on Ctrl-C.
 */
import type { FelixClient, StreamEvent, Subscription } from '@felix/client';
import type { Command } from 'commander';
import { type DataEnv, type DataIo, timeoutOf, withClient } from './connection.js';
import { UNTIL_END_IDLE_MS_DEFAULT } from './limits.js';
import { SubscribeWaitError, describeError } from './report.js';
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
  const retries = new RetryWatch(c, stream, env.io);
  let idle: IdleTimer | undefined;
  try {
    const sub = c.subscribe(stream, {
      from,
      signal: ac.signal,
      timestamps: true,
      ...(shard === undefined ? {} : { shard }),
    });
    if (idleMs !== undefined) {
      // The quiet time counts from the broker's answer: a shard nobody serves is not an empty
      // stream that ended, and says why instead.
      await openedWithin(sub, timeoutOf(env.flags()), retries, stream);
      idle = new IdleTimer(idleMs, stop);
    }
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
    retries.stop();
    env.io.signal?.removeEventListener('abort', stop);
  }
}

/**
 * Waits for every shard of `sub` to be subscribed, for at most `ms`; past it, fails with the
 * last failure the client retried on a shard still not subscribed (`ShardUnavailableError`
 * while no broker serves it).
 */
async function openedWithin(
  sub: Subscription,
  ms: number,
  retries: RetryWatch,
  stream: string,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () =>
        fail(
          retries.lastOfShardsNotIn(sub.positions()) ??
            new SubscribeWaitError(`${stream} was not subscribed within ${ms} ms`),
        ),
      ms,
    );
  });
  try {
    await Promise.race([sub.ready(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Of each shard's last retried failure, that of the highest-numbered shard `subscribed` (a
 * subscription's `positions()`, which names the shards subscribed) leaves out: a shard that
 * subscribed since is not the cause.
 */
export function lastFailureOfShardsNotIn(
  last: ReadonlyMap<number, Error>,
  subscribed: Record<number, number>,
): Error | undefined {
  let found: Error | undefined;
  for (const [shard, err] of [...last].sort((a, b) => a[0] - b[0]))
    if (!(shard in subscribed)) found = err;
  return found;
}

/**
 * Follows the client's retried subscribes of `stream` (`subscribe_retry`): each shard's failure
 * said once on stderr when it changes, so a read that waits is not silent, and each shard's
 * last kept for `--until-end`.
 */
class RetryWatch {
  /** Each shard's last retried failure. */
  private readonly last = new Map<number, Error>();
  private readonly said = new Map<number, string>();
  private readonly ac = new AbortController();
  constructor(c: FelixClient, stream: string, io: DataIo) {
    void this.follow(c, stream, io);
  }

  private async follow(c: FelixClient, stream: string, io: DataIo): Promise<void> {
    try {
      for await (const s of c.status({ signal: this.ac.signal })) {
        if (s.type !== 'subscribe_retry' || s.stream !== stream) continue;
        this.last.set(s.shard, s.error);
        const code = String((s.error as { code?: unknown }).code ?? s.error.name);
        if (this.said.get(s.shard) === code) continue;
        this.said.set(s.shard, code);
        io.err(`waiting for ${stream} shard ${s.shard}: ${describeError(s.error)}; retrying`);
      }
    } catch {
      // Ends with stop() (an abort) or the client's close: nothing more to follow.
    }
  }

  /** The last failure retried on a shard `subscribed` does not name (not subscribed yet). */
  lastOfShardsNotIn(subscribed: Record<number, number>): Error | undefined {
    return lastFailureOfShardsNotIn(this.last, subscribed);
  }

  stop(): void {
    this.ac.abort();
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
