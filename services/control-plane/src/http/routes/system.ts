/** Probes and metrics: /v1/system/live, /ready, /info and /metrics. */
import type { FastifyInstance } from 'fastify';
import { NotReadyError } from '../../errors.js';
import { READINESS_CACHE_TTL_MS, READINESS_TIMEOUT_MS } from '../../limits.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';
import { Type } from '@sinclair/typebox';

export function systemRoutes(
  app: FastifyInstance,
  ctx: RouteContext,
  isClosing: () => boolean,
): void {
  let cached: { at: number; version: number; error?: Error } | undefined;

  const check = async (): Promise<number> => {
    const now = performance.now();
    if (!cached || now - cached.at > READINESS_CACHE_TTL_MS) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const r = await Promise.race([
          ctx.store.schemaCurrent(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error('store did not answer in time')),
              READINESS_TIMEOUT_MS,
            );
          }),
        ]);
        cached = r.current
          ? { at: now, version: r.version }
          : {
              at: now,
              version: r.version,
              error: new Error(`schema version ${r.version} is not current`),
            };
      } catch (err) {
        cached = { at: now, version: 0, error: err as Error };
      } finally {
        clearTimeout(timer);
      }
    }
    if (cached.error)
      throw new NotReadyError(`not ready: ${cached.error.message}`, { cause: cached.error });
    return cached.version;
  };

  app.get('/v1/system/live', {
    schema: {
      tags: ['system'],
      summary: 'The process answers (never touches the store)',
      response: { 200: S.Live },
    },
    handler: async () => ({ status: 'ok' as const }),
  });

  app.get('/v1/system/ready', {
    schema: {
      tags: ['system'],
      summary: 'The store answers and holds the current schema',
      response: S.responses({ 200: S.Ready }),
    },
    handler: async () => {
      if (isClosing()) throw new NotReadyError('shutting down');
      return { status: 'ready' as const, schema_version: await check() };
    },
  });

  app.get('/v1/system/info', {
    schema: { tags: ['system'], response: S.responses({ 200: S.Info }) },
    handler: async () => ({
      region_id: ctx.regionId,
      api_version: 'v1',
      version: ctx.version,
      store: ctx.store.backend,
      schema_version: (await ctx.store.schemaCurrent()).version,
      features: { durable_storage: true, tiered_storage: false, bridges: false },
    }),
  });

  app.get('/metrics', {
    schema: { tags: ['system'], summary: 'Prometheus metrics', response: { 200: Type.String() } },
    handler: async (_req, reply) => {
      const body = await ctx.metrics.registry.metrics();
      return reply.type(ctx.metrics.registry.contentType).send(body);
    },
  });
}
