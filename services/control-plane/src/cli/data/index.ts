/**
 * felixctl's data-plane verbs, one file per verb group: pub, sub, cache, counter, group, bench,
 * and the connection contexts they read their settings from.
 */
import type { Command } from 'commander';
import { benchCommands } from './bench.js';
import { cacheCommands } from './cache.js';
import { contextCommands } from './context-commands.js';
import { type DataEnv, connectionOptions } from './connection.js';
import { counterCommands } from './counter.js';
import { groupCommands } from './group.js';
import { pubCommand } from './pub.js';
import { subCommand } from './sub.js';

export type { ConnFlags, DataEnv, DataIo } from './connection.js';
export { EXIT, describeError, exitCodeOf } from './report.js';

const DATA_VERBS = ['pub', 'sub', 'cache', 'counter', 'group', 'bench', 'context'];

export function dataCommands(program: Command, env: DataEnv): void {
  pubCommand(program, env);
  subCommand(program, env);
  cacheCommands(program, env);
  counterCommands(program, env);
  groupCommands(program, env);
  benchCommands(program, env);
  contextCommands(program, env);
  for (const verb of program.commands.filter((c) => DATA_VERBS.includes(c.name())))
    for (const leaf of leaves(verb)) connectionOptions(leaf);
}

function leaves(c: Command): Command[] {
  return c.commands.length === 0 ? [c] : c.commands.flatMap(leaves);
}
