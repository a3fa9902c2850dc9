/**
 * felixctl's data-plane verbs, one file per verb group: pub, sub, cache, counter, group, bench,
 * and the connection contexts they read their settings from.
 */
import type { Command } from 'commander';
import { benchCommands } from './bench.js';
import { cacheCommands } from './cache.js';
import { contextCommands } from './context-commands.js';
import type { DataEnv } from './connection.js';
import { counterCommands } from './counter.js';
import { groupCommands } from './group.js';
import { pubCommand } from './pub.js';
import { subCommand } from './sub.js';

export { connectionOptions } from './connection.js';
export type { ConnFlags, DataEnv, DataIo } from './connection.js';
export { EXIT, describeError, exitCodeOf } from './report.js';

export function dataCommands(program: Command, env: DataEnv): void {
  pubCommand(program, env);
  subCommand(program, env);
  cacheCommands(program, env);
  counterCommands(program, env);
  groupCommands(program, env);
  benchCommands(program, env);
  contextCommands(program, env);
}
