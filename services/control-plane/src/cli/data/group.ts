/**
 * `felixctl group describe|poll|redrive <stream> <group>`: inspect a consumer group on one shard
 * (or, for describe and redrive, `--shard all`: every shard), take records from it (acked unless
 * `--no-ack`), and send dead letters back to be handed out.
 */
import { type FelixClient, type Group, type GroupMessage, NotFoundError } from '@felix/client';
import type { Command } from 'commander';
import { table } from '../api.js';
import { type DataEnv, withClient } from './connection.js';
import { UsageError } from './report.js';
import { durationMs, intArg, isoOfMicros, valueFields, valueText } from './values.js';

interface GroupOpts {
  shard?: string;
  consumer?: string;
}

function groupOf(c: FelixClient, stream: string, name: string, o: GroupOpts): Group {
  if (o.shard === 'all')
    throw new UsageError('--shard all is for describe and redrive; poll takes one shard');
  return c.group(stream, name, {
    shard: o.shard === undefined ? 0 : intArg('--shard', o.shard),
    ...(o.consumer === undefined ? {} : { consumer: o.consumer }),
  });
}

/** The group's handle on each shard `--shard` names: one, or every shard of the stream. */
async function groupsOf(
  c: FelixClient,
  stream: string,
  name: string,
  o: GroupOpts,
): Promise<Group[]> {
  if (o.shard === 'all') return c.group(stream, name, { shard: 'all' }).shards();
  if (o.shard !== undefined && !/^\d+$/.test(o.shard))
    throw new UsageError(`--shard ${o.shard} is a shard number or \`all\``);
  return [groupOf(c, stream, name, o)];
}

export function groupCommands(program: Command, env: DataEnv): void {
  const group = program.command('group').description('inspect and drive consumer groups');
  group
    .command('describe <stream> <group>')
    .description("a group's position, claims and dead letters on one shard, or on every one")
    .option('--shard <n>', 'the shard (default 0), or `all`')
    .action((stream: string, name: string, o: GroupOpts) =>
      withClient(env, async (c) => {
        const rows = [];
        const all = o.shard === 'all';
        for (const g of await groupsOf(c, stream, name, o)) {
          const info = await describeOrMissing(g, all);
          if (info === undefined) {
            // Over every shard, one the group has not reached yet is a row, not a failure.
            rows.push({ stream, group: name, shard: g.shard, missing: true });
            continue;
          }
          const deadLetterOffsets = await g.deadLetters();
          rows.push({ stream, group: name, shard: g.shard, ...info, deadLetterOffsets });
        }
        if (env.flags().json) for (const row of rows) env.io.out(JSON.stringify(row));
        else
          for (const l of table(rows, [
            'group',
            'shard',
            'committed',
            'tail',
            'inFlight',
            'owed',
            'deadLetters',
          ]))
            env.io.out(l);
      }),
    );
  pollCommand(group, env);
  group
    .command('redrive <stream> <group> [offsets...]')
    .description('hand dead letters out again: the offsets given, else every one')
    .option('--shard <n>', 'the shard (default 0), or `all` (every dead letter of every shard)')
    .action((stream: string, name: string, offsets: string[], o: GroupOpts) =>
      withClient(env, async (c) => {
        if (o.shard === 'all' && offsets.length > 0)
          throw new UsageError('offsets are a shard’s own: name the --shard they are on');
        let n = 0;
        const all = o.shard === 'all';
        for (const g of await groupsOf(c, stream, name, o)) {
          // Over every shard, one the group has not reached yet has nothing to redrive.
          if (all && (await describeOrMissing(g, true)) === undefined) continue;
          const chosen = offsets.map((t) => intArg('offset', t));
          for (const off of chosen) await g.redrive(off);
          n += offsets.length ? chosen.length : await redriveAll(g);
        }
        if (env.flags().json) env.io.out(JSON.stringify({ stream, group: name, redrove: n }));
        else env.io.out(`redrove ${n} dead letter(s) of ${name}`);
      }),
    );
}

interface PollOpts extends GroupOpts {
  max: string;
  wait: string;
  visibility?: string;
  ack: boolean;
}

function pollCommand(group: Command, env: DataEnv): void {
  group
    .command('poll <stream> <group>')
    .description('take records from a group and print them (acked unless --no-ack)')
    .option('--shard <n>', 'the shard (default 0)')
    .option('--max <n>', 'records to take', '10')
    .option('--wait <duration>', 'wait this long when none is ready', '1s')
    .option('--visibility <duration>', 'claim length (default the broker’s)')
    .option('--consumer <name>', 'poll as this named consumer')
    .option('--no-ack', 'leave the records claimed (they come back after their visibility)')
    .action((stream: string, name: string, o: PollOpts) =>
      withClient(env, async (c) => {
        const g = groupOf(c, stream, name, o);
        const msgs = await g.poll({
          max: intArg('--max', o.max, 1),
          waitMs: durationMs('--wait', o.wait),
          ...(o.visibility ? { visibilityMs: durationMs('--visibility', o.visibility) } : {}),
        });
        for (const m of msgs) env.io.out(pollLine(m, env.flags().json));
        if (o.ack) await Promise.all(msgs.map((m) => m.ack()));
        g.release();
      }),
    );
}

function pollLine(m: GroupMessage, json: boolean): string {
  if (!json) return `${m.offset} attempts=${m.attempts} ${valueText(m.payload)}`;
  return JSON.stringify({
    offset: m.offset,
    attempts: m.attempts,
    ...valueFields(m.payload),
    time: isoOfMicros(m.timestampMicros),
  });
}

/** The group's description on `g`'s shard; undefined when `missing` allows a shard the group
 *  has not reached yet (NotFoundError there), which otherwise fails the command. */
async function describeOrMissing(g: Group, missing: boolean) {
  try {
    return await g.describe();
  } catch (err) {
    if (missing && err instanceof NotFoundError) return undefined;
    throw err;
  }
}

/**
 * Redrives every dead letter of `g`; answers how many. A list answers at most 1,000, and a
 * redriven one leaves it, so it is listed again until nothing new is in it (an offset given up
 * on again meanwhile is not sent back twice: the loop ends).
 */
async function redriveAll(g: Group): Promise<number> {
  const sent = new Set<number>();
  for (;;) {
    const fresh = (await g.deadLetters()).filter((off) => !sent.has(off));
    if (fresh.length === 0) return sent.size;
    for (const off of fresh) {
      await g.redrive(off);
      sent.add(off);
    }
  }
}
