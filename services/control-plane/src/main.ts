#!/usr/bin/env node
/** felix-controlplane: reads FELIX_CONTROLPLANE_*, opens the store, serves the API until SIGTERM. */
import pino from 'pino';
import { tokenSettingsFromEnv } from './auth/settings.js';
import { loadConfig } from './config.js';
import { buildApp } from './http/app.js';
import { openStore } from './open-store.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel, base: { service: 'felix-controlplane' } });
  const store = await openStore(config);
  const { app } = await buildApp({
    store,
    liveness: config.liveness,
    regionId: config.regionId,
    changesLimit: config.changesLimit,
    logger,
    tokens: tokenSettingsFromEnv(process.env),
  });
  const address = await app.listen({ host: config.host, port: config.port });
  logger.info({ address, backend: config.backend }, 'felix-controlplane listening');
  // One line on stdout that scripts and tests can wait for.
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', address, backend: config.backend })}\n`,
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`felix-controlplane: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
