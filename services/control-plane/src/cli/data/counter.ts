/**
 * `felixctl counter add|get <name> <key>`: signed 64-bit counters beside a cache. A negative
 * delta follows `--` (`felixctl counter add hits k -- -5`), else it reads as an option.
 */
import type { Command } from 'commander';
import { type DataEnv, withClient } from './connection.js';
import { AbsentError, UsageError } from './report.js';

function deltaOf(text: string): bigint {
  if (!/^-?\d+$/.test(text)) throw new UsageError(`delta ${text} is not an integer`);
  return BigInt(text);
}

export function counterCommands(program: Command, env: DataEnv): void {
  const counter = program.command('counter').description('add to and read counters');
  const show = (name: string, key: string, sum: bigint) =>
    env.io.out(
      env.flags().json ? JSON.stringify({ counter: name, key, sum: sum.toString() }) : String(sum),
    );
  counter
    .command('add <name> <key> <delta>')
    .description('add a signed delta; prints the sum including it')
    .action((name: string, key: string, delta: string) =>
      withClient(env, async (c) => show(name, key, await c.counter(name).add(key, deltaOf(delta)))),
    );
  counter
    .command('get <name> <key>')
    .description('print the sum (exit 4 when nothing was ever added)')
    .action((name: string, key: string) =>
      withClient(env, async (c) => {
        const sum = await c.counter(name).get(key);
        if (sum === undefined) throw new AbsentError(`counter ${name} has no key ${key}`);
        show(name, key, sum);
      }),
    );
}
