#!/usr/bin/env -S node --initial-old-space-size=256
/**
 * `felix-broker`: loads the config (defaults, FELIX_* environment, FELIX_BROKER_CONFIG YAML),
 * `--print-config` prints it, otherwise starts the broker and drains on SIGTERM/SIGINT.
 */
import { FelixError } from '@felix/common';
import { setNativeMemoryCollector } from '@felix/transport';
import { stringify } from 'yaml';
import { Broker } from './broker.js';
import { loadConfig } from './config/load.js';
import { printableConfig } from './config/print.js';
import { UnknownFlagError } from './errors.js';
import { createLogger } from './log.js';
import { fullCollection, loadMallocTrim, nativeMemoryCollector } from './util/reclaim.js';

const USAGE = `usage: felix-broker [--print-config]

Configuration: built-in defaults, then FELIX_* environment variables, then the YAML file named
by FELIX_BROKER_CONFIG. Every setting is listed in docs/broker-config.md.`;

function fail(err: unknown, exitCode: number): never {
  const code = err instanceof FelixError ? err.code : 'FELIX_BROKER_STARTUP';
  process.stderr.write(`felix-broker: ${(err as Error).message} [${code}]\n`);
  process.exit(exitCode);
}

/**
 * The collector the transport runs after many connections closed (or once closes went quiet):
 * their native memory is freed only when V8 collects the objects owning it, and V8 does not
 * count it, so under churn it waited for the old space (256 MiB here, node-flags.json) to fill;
 * then glibc kept what was freed until a trim (docs/perf.md, Memory and the soak).
 */
function collector(log: ReturnType<typeof createLogger>): (() => void) | null {
  const collect = fullCollection();
  if (collect === null) return null;
  const trim = loadMallocTrim();
  if (trim === null) log.warn('malloc-trim addon not built: freed native memory stays resident');
  return nativeMemoryCollector({
    collect,
    trim,
    onTrim: (released, ms) =>
      log.info({ released, ms: Math.round(ms), rss: process.memoryUsage.rss() }, 'memory returned'),
    onTrimError: (err) => log.warn({ err }, 'malloc_trim failed'),
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  let printConfig = false;
  for (const arg of args) {
    if (arg === '--print-config') printConfig = true;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      return;
    } else fail(new UnknownFlagError(arg), 2);
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    fail(err, 2);
  }
  if (printConfig) {
    process.stdout.write(stringify(printableConfig(config)));
    return;
  }
  const log = createLogger(config.broker.log_level);
  // The signal handlers go in before the broker starts: a SIGTERM that lands while it opens its
  // logs and binds its ports must still drain (and release the data directory), not take the
  // default action of killing the process mid-start.
  let started: Promise<Broker> | null = null;
  let ready = false;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, starting: !ready }, 'shutting down');
    // The drain is bounded by drain_timeout_ms; this is the backstop if closing itself hangs.
    setTimeout(() => {
      log.error('shutdown exceeded its bound; exiting');
      process.exit(1);
    }, config.broker.drain_timeout_ms + 5_000).unref();
    // During startup, wait for the start to finish, then drain what it opened.
    (started ?? Promise.reject(new Error('signalled before the start began')))
      .then((broker) => broker.stop())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  setNativeMemoryCollector(collector(log));
  log.info('starting'); // pid is in every line (log.ts)
  started = Broker.start(config, log);
  try {
    await started;
    ready = true;
  } catch (err) {
    log.fatal({ err }, 'startup failed');
    fail(err, 1);
  }
}

void main();
