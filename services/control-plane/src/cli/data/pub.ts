/**
 * `felixctl pub <stream> [data]`: one record from the argument or `--file`, else one record per
 * line of standard input. Prints each record's shard and offset, or with `--no-ack` only how many
 * records were sent: they go through the client's batching publisher without a promise each,
 * and the command still waits for the batches' acks before it exits, because closing the client
 * right after a fire-and-forget write loses what the broker has not read yet.
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
  const records = recordsOf(env, data, o.file);
  if (!o.ack) {
    await sendAll(env, c, stream, records, o.key);
    return;
  }
  const opts = o.key !== undefined ? { key: o.key } : {};
  const one = (payload: Uint8Array | string) => c.publish(stream, payload, opts);
  await publishInOrder(records, one, (r) => report(env, stream, r));
}

const UTF8 = new TextEncoder();

/** The records to publish: the argument, the file, or each line of standard input. */
async function* recordsOf(
  env: DataEnv,
  data: string | undefined,
  file: string | undefined,
): AsyncGenerator<Uint8Array> {
  if (data !== undefined) yield UTF8.encode(data);
  else if (file !== undefined) yield new Uint8Array(await readFile(file));
  else if (!env.io.stdin) throw new UsageError('no data, no --file and no standard input');
  else
    for await (const line of createInterface({
      input: env.io.stdin,
      crlfDelay: Number.POSITIVE_INFINITY,
    }))
      yield UTF8.encode(line);
}

/** Without a promise per record; waits for the batches' acks at the end (see the top). */
async function sendAll(
  env: DataEnv,
  c: FelixClient,
  stream: string,
  records: AsyncIterable<Uint8Array>,
  key: string | undefined,
): Promise<void> {
  const pub = c.publisher(stream);
  const opts = key === undefined ? {} : { key: UTF8.encode(key) };
  let count = 0;
  for await (const r of records) {
    count++;
    if (!pub.send(r, opts)) await pub.ready();
  }
  await pub.flush();
  await pub.close();
  env.io.out(`sent ${count} record(s) to ${stream}`);
}

/** One publish per record, up to a window in flight, reported in order. */
async function publishInOrder(
  records: AsyncIterable<Uint8Array>,
  one: (r: Uint8Array) => Promise<PublishResult>,
  done: (r: PublishResult) => void,
): Promise<void> {
  const pending: Promise<PublishResult>[] = [];
  for await (const record of records) {
    const p = one(record);
    p.catch(() => undefined); // awaited in order below; a failure there ends the command
    pending.push(p);
    if (pending.length >= PUB_LINES_IN_FLIGHT_MAX)
      done(await (pending.shift() as Promise<PublishResult>));
  }
  for (const p of pending) done(await p);
}

function report(env: DataEnv, stream: string, r: PublishResult): void {
  // The client names the shard only where it chose it: a keyed publish's ack carries no shard.
  const shard = r.shard ?? null;
  if (env.flags().json) env.io.out(JSON.stringify({ stream, shard, offset: r.offset }));
  else
    env.io.out(`published ${stream}${shard === null ? '' : ` shard ${shard}`} offset ${r.offset}`);
}
