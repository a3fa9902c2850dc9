#!/usr/bin/env node
/** felix-controlplane: reads FELIX_CONTROLPLANE_*, opens the store, serves the API until SIGTERM. */
import { FelixError, errorReason } from '@felix/common';
import pino from 'pino';
import { tokenSettingsFromEnv } from './auth/settings.js';
import { loadConfig } from './config.js';
import { buildApp } from './http/app.js';
import { buildBootstrapApp } from './http/bootstrap.js';
import { openStore } from './open-store.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel, base: { service: 'felix-controlplane' } });
  const store = await openStore(config);
  const { app, signer, metrics, keys } = await buildApp({
    store,
    liveness: config.liveness,
    regionId: config.regionId,
    changesLimit: config.changesLimit,
    logger,
    tokens: tokenSettingsFromEnv(process.env),
  });
  const bootstrap = config.bootstrap.enabled
    ? await buildBootstrapApp({ store, config: config.bootstrap, signer, metrics, keys, logger })
    : undefined;
  let bootstrapAddress: string | undefined;
  if (bootstrap) {
    const at = await bootstrap.listen({ host: config.bootstrap.host, port: config.bootstrap.port });
    logger.warn(
      { address: at, dev_tokens: config.bootstrap.devTokens },
      'bootstrap listener enabled; disable it once tenants are initialized',
    );
    bootstrapAddress = at;
  }
  const address = await app.listen({ host: config.host, port: config.port });
  logger.info({ address, backend: config.backend }, 'felix-controlplane listening');
  // One line on stdout that scripts and tests can wait for, once every listener is up.
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', address, backend: config.backend, bootstrap_address: bootstrapAddress })}\n`,
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await bootstrap?.close();
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** The error's own words, then what its cause says when that adds something. */
function withCause(err: Error): string {
  const deeper = err.cause === undefined ? undefined : errorReason(err.cause);
  return deeper === undefined || err.message.includes(deeper)
    ? err.message
    : `${err.message}: ${deeper}`;
}

main().catch((err: unknown) => {
  // A refusal of ours (bad config, a store it cannot open) says what to fix in one line; only
  // the unexpected keeps its stack.
  const said =
    err instanceof FelixError
      ? `${withCause(err)} [${err.code}]`
      : err instanceof Error
        ? err.stack
        : String(err);
  process.stderr.write(`felix-controlplane: ${said}\n`);
  process.exit(1);
});
