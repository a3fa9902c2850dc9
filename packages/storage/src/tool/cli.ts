/**
 * `felix-log-tool`: dump, verify and bench over shard directories. Written against output
 * sinks and an Io so tests drive it in-process; src/log-tool.ts is the process entry.
 */
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { SingleBar } from 'cli-progress';
import { Command, CommanderError } from 'commander';
import { CorruptionError } from '../errors.js';
import type { Io } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import { formatBenchReport, runStorageBench } from './bench.js';
import { dumpShardDir, recordJson, verifyShardDir } from './inspect.js';

export interface ToolOutput {
  out(line: string): void;
  err(line: string): void;
  /** Whether to draw a progress bar (a terminal). */
  interactive?: boolean;
}

/** Runs the tool on `args` (without `node` and the script); resolves with the exit code. */
export async function runLogTool(
  args: string[],
  output: ToolOutput,
  io: Io = nodeIo,
): Promise<number> {
  let code = 0;
  const program = new Command('felix-log-tool')
    .description('Inspect and measure Felix segment logs')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => output.out(s.trimEnd()),
      writeErr: (s) => output.err(s.trimEnd()),
    });

  program
    .command('dump')
    .description('print one JSON line per record (offset, timestamp_micros, flags, payload base64)')
    .argument('<shard-dir>', 'shard directory')
    .action(async (dir: string) => {
      try {
        for await (const r of dumpShardDir(io, resolve(dir))) output.out(recordJson(r));
      } catch (err) {
        code = report(err, output);
      }
    });

  program
    .command('verify')
    .description(
      'scan every record; exit 0 with a summary, or 1 naming the corruption; never writes',
    )
    .argument('<shard-dir>', 'shard directory')
    .action(async (dir: string) => {
      try {
        const s = await verifyShardDir(io, resolve(dir));
        output.out(
          `ok: ${s.segments} segments, ${s.records} records, base ${s.baseOffset}, tail ${s.tailOffset}, ${s.bytes} bytes`,
        );
        for (const r of s.repairs) output.out(`open would repair: ${JSON.stringify(r)}`);
      } catch (err) {
        code = report(err, output);
      }
    });

  program
    .command('bench')
    .description('storage benchmark: fsync modes, writers, raw disk limit, recovery scan')
    .option('--quick', 'short smoke run instead of a measurement')
    .option('--dir <dir>', 'scratch parent directory on the disk to measure', tmpdir())
    .action(async (opts: { quick?: boolean; dir: string }) => {
      const bar =
        output.interactive === true
          ? new SingleBar({ format: ' {bar} {value}/{total} {label}' })
          : undefined;
      let started = false;
      const report = await runStorageBench({
        dir: resolve(opts.dir),
        quick: opts.quick === true,
        io,
        onProgress: (done, total, label) => {
          if (bar === undefined) {
            output.err(`[${done}/${total}] ${label}`);
            return;
          }
          if (!started) bar.start(total, done, { label });
          started = true;
          bar.update(done, { label });
        },
      });
      bar?.stop();
      output.out(formatBenchReport(report));
    });

  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  return code;
}

function report(err: unknown, output: ToolOutput): number {
  if (err instanceof CorruptionError) {
    output.err(
      `corrupt: ${err.kind} in ${err.site.shardDir} segment ${err.site.segmentId} at byte ${err.site.position}: ${err.detail}`,
    );
    return 1;
  }
  output.err(`error: ${err instanceof Error ? err.message : String(err)}`);
  return 1;
}
