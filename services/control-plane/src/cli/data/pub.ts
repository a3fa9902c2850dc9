/**
 * `felixctl pub <stream> [data]`: one record from the argument or `--file`, else one record per
 * line of standard input. Prints each record's shard and offset (acknowledged publishes), or
 * how many records were written (`--no-ack`).
 */
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { FelixClient, PublishResult } from '@felix/client';
import type { Command } from 'commander';
import { type DataEnv, withClient } from './connection.js';
import { PUB_LINES_IN_FLIGHT_MAX } from './limits.js';
import { UsageError } from './report.js';

interface PubOpts {
  file?: string;
  key?: string;
  shard?: string;
  ack: boolean;
}

export function pubCommand(program: Command, env: DataEnv): void {
  program
    .command('pub <stream> [data]')
    .description('publish a record (data, --file, or one record per stdin line)')
    .option('--file <path>', 'publish the file content as one record')
    .option('--key <key>', 'routing key: records with one key land on one shard, in order')
    .option('--shard <n>', 'not supported: the shard follows from --key (see docs/felixctl.md)')
    .option('--no-ack', 'do not wait for the broker to acknowledge (no offsets printed)')
    .action(async (stream: string, data: string | undefined, o: PubOpts) => {
      if (o.shard !== undefined)
        throw new UsageError(
          'publishing to a chosen shard is not offered by the client',
          'use --key: one key always lands on one shard',
        );
      if (data !== undefined && o.file !== undefined)
        throw new UsageError('give data or --file, not both');
      await withClient(env, (c) => publishAll(env, c, stream, data, o));
    });
}

async function publishAll(
  env: DataEnv,
  c: FelixClient,
  stream: string,
  data: string | undefined,
  o: PubOpts,
): Promise<void> {
  const opts = { ack: o.ack, ...(o.key !== undefined ? { key: o.key } : {}) };
  const one = (payload: Uint8Array | string) => c.publish(stream, payload, opts);
  if (data !== undefined || o.file !== undefined) {
    const payload = data ?? new Uint8Array(await readFile(o.file as string));
    report(env, stream, await one(payload), o.ack);
    if (!o.ack) env.io.out(`sent 1 record to ${stream} (not acknowledged)`);
    return;
  }
  if (!env.io.stdin) throw new UsageError('no data, no --file and no standard input');
  let count = 0;
  await publishLines(env.io.stdin, one, (r) => {
    count++;
    report(env, stream, r, o.ack);
  });
  if (!o.ack) env.io.out(`sent ${count} records to ${stream} (not acknowledged)`);
}

/** One publish per line, up to a window in flight, reported in line order. */
async function publishLines(
  input: NodeJS.ReadableStream,
  one: (line: string) => Promise<PublishResult>,
  done: (r: PublishResult) => void,
): Promise<void> {
  const pending: Promise<PublishResult>[] = [];
  for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    const p = one(line);
    p.catch(() => undefined); // awaited in order below; a failure there ends the command
    pending.push(p);
    if (pending.length >= PUB_LINES_IN_FLIGHT_MAX)
      done(await (pending.shift() as Promise<PublishResult>));
  }
  for (const p of pending) done(await p);
}

function report(env: DataEnv, stream: string, r: PublishResult, ack: boolean): void {
  if (!ack) return;
  if (env.flags().json) env.io.out(JSON.stringify({ stream, shard: r.shard, offset: r.offset }));
  else env.io.out(`published ${stream} shard ${r.shard} offset ${r.offset}`);
}
