/**
 * `buildApp(deps)`: the fastify application without `listen`, so tests drive it with `inject`
 * and `main.ts` binds it. It also owns the background work (expiry sweep, placement passes),
 * started when the app is ready and stopped when it closes.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { Sweeper, placementNodes } from '../cluster/liveness.js';
import { SweepLoop } from '../cluster/sweep-loop.js';
import { PlacementRunner } from '../cluster/placement-runner.js';
import type { LivenessConfig } from '../config.js';
import { FeedHub } from '../feeds/hub.js';
import { BODY_BYTES_MAX } from '../limits.js';
import { type Metrics, createMetrics } from '../metrics.js';
import type { ControlStore } from '../store/store.js';
import type { RouteContext } from './context.js';
import { TenantKeyCache } from '../auth/keys.js';
import { TokenSigner } from '../auth/signer.js';
import type { RouteAuth } from './auth/contract.js';
import { installGuard, refusalOf } from './auth/guard.js';
import { describeAuth } from './auth/permissions.js';
import { notFound, sendError } from './errors.js';
import { convertQueryNumbers } from './query-numbers.js';
import { type TokenSettings, TokenService } from '../auth/tokens.js';
import { assignmentRoutes } from './routes/assignments.js';
import { catalogRoutes } from './routes/catalog.js';
import { nodeRoutes } from './routes/nodes.js';
import { signingKeyRoutes } from './routes/signing-keys.js';
import { rbacRoutes } from './routes/rbac.js';
import { replicaReportRoutes } from './routes/replica-reports.js';
import { type LazySchemas, lazySchemaController } from './lazy-compilers.js';
import { systemRoutes } from './routes/system.js';
import { tokenRoutes } from './routes/tokens.js';
import { ErrorBody } from './schemas.js';

export const VERSION = '0.1.0';

const VALIDATOR_OPTIONS = {
  removeAdditional: false,
  // A wrong JSON type is refused, never converted (docs/control-plane.md promises 400); numeric
  // query parameters are converted explicitly by convertQueryNumbers instead.
  coerceTypes: false,
  useDefaults: true,
  allErrors: false,
} as const;

export interface AppDeps {
  store: ControlStore;
  liveness: LivenessConfig;
  regionId?: string;
  changesLimit?: number;
  /** A pino logger; `false` (the default in tests) logs nothing. */
  logger?: FastifyBaseLogger | false;
  /** Run the expiry sweep and periodic placement (default true). */
  background?: boolean;
  metrics?: Metrics;
  /** How often a parked long poll re-reads without a wake-up (tests raise it to prove the wake). */
  longPollRereadMs?: number;
  /** The tenants' public keys for the guard (default: read from `store`, cached briefly). */
  keys?: TenantKeyCache;
  /** Signs tokens with a tenant's active key (default: over `store`). */
  signer?: TokenSigner;
  /** Token lifetimes and the upstream OIDC verifier (src/auth/tokens.ts). */
  tokens?: TokenSettings;
}

export interface ControlPlaneApp {
  app: FastifyInstance;
  placement: PlacementRunner;
  sweeper: Sweeper;
  hub: FeedHub;
  metrics: Metrics;
  keys: TenantKeyCache;
  signer: TokenSigner;
  /** Compiles every route's schemas now rather than at its first request (lazy-compilers.ts). */
  compileSchemas(): number;
}

/**
 * The OpenAPI document and its UI. Each operation carries its RouteAuth as `x-felix-auth` and,
 * unless open, a bearer requirement: the permission table in docs/control-plane.md is checked
 * against this (`every_v1_route_requires_a_permission`).
 */
async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Felix control plane',
        version: VERSION,
        description:
          'Catalog, membership, placement and change feeds. Errors share one body; see docs/control-plane.md.',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
    },
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth as RouteAuth | undefined;
      if (!auth) return { schema, url };
      return {
        url,
        schema: {
          ...schema,
          'x-felix-auth': describeAuth(auth),
          security: auth.kind === 'open' || auth.kind === 'credential' ? [] : [{ bearer: [] }],
        } as typeof schema,
      };
    },
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`),
    },
  });
}

function newFastify(deps: AppDeps, schemas: LazySchemas): FastifyInstance {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    // Fastify's two lines per request at info buried everything else under the brokers'
    // heartbeats and feed polls: onResponse below logs one, at debug unless refused.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_BYTES_MAX,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    ajv: { customOptions: VALIDATOR_OPTIONS },
    schemaController: schemas.option,
  });
  // A DELETE or GET sent with `content-type: application/json` and no body (what `curl -H` on
  // every call sends) has no body; it is not malformed JSON. Any other body goes to fastify's
  // own parser (prototype-poisoning checks included).
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' && (req.method === 'DELETE' || req.method === 'GET')) done(null, undefined);
    else json(req, body as string, done);
  });
  return app;
}

export async function buildApp(deps: AppDeps): Promise<ControlPlaneApp> {
  // One clock for the process: the store's, which stamps every row the sweep later judges.
  const clock = deps.store.clock;
  const metrics = deps.metrics ?? createMetrics();
  const schemas = lazySchemaController();
  const app = newFastify(deps, schemas);
  const hub = new FeedHub(deps.store, metrics, deps.longPollRereadMs);
  const placement = new PlacementRunner(deps.store, deps.liveness, clock, metrics, app.log);
  const sweeper = new Sweeper(deps.store, deps.liveness, clock);
  const sweeps = new SweepLoop(
    sweeper,
    deps.liveness.sweepIntervalMs,
    async (down) => {
      metrics.nodesMarkedDown.inc(down.length);
      app.log.warn({ nodes: down }, 'marked silent nodes down');
      await placement.trigger();
    },
    app.log,
  );
  const keys = deps.keys ?? new TenantKeyCache(deps.store, clock);
  const signer = deps.signer ?? new TokenSigner(deps.store, clock);
  const ctx: RouteContext = {
    keys,
    signer,
    store: deps.store,
    hub,
    placement,
    heard: (nodeId, stamp) => sweeps.heard(nodeId, stamp),
    metrics,
    clock,
    liveness: deps.liveness,
    changesLimit: deps.changesLimit ?? 1000,
    regionId: deps.regionId ?? 'local',
    version: VERSION,
    placementView: (nodes) => placementNodes(nodes, deps.liveness, clock.nowMs()),
  };
  let closing = false;

  app.addSchema(ErrorBody);
  await registerDocs(app);
  // The UI under /docs is registered before the guard and stays open (it serves the document,
  // which names routes and permissions, never data).
  await app.register(swaggerUi, { routePrefix: '/docs' });
  installGuard(app, { keys, metrics, clock });

  app.setErrorHandler((err, req, reply) => sendError(req, reply, err));
  app.setNotFoundHandler((req, reply) => notFound(req, reply));
  app.addHook('preValidation', convertQueryNumbers);
  app.addHook('onSend', async (req, reply, payload) => {
    reply.header('x-request-id', String(req.id));
    return payload;
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    metrics.requestSeconds.observe({ route }, reply.elapsedTime / 1000);
    const status = reply.statusCode;
    const line = { method: req.method, url: req.url, status, ms: Math.round(reply.elapsedTime) };
    // A 5xx was logged at error where it was answered (sendError), with its cause; a guard's
    // refusal says why and whom in the same line.
    const refused = refusalOf(req);
    if (refused) req.log.info({ ...line, ...refused }, 'request refused');
    else if (status >= 400 && status < 500) req.log.info(line, 'request answered with a refusal');
    else req.log.debug(line, 'request answered');
  });

  app.get('/v1/openapi.json', {
    schema: { hide: true, response: { 200: Type.Unknown() } },
    handler: async (_req, reply) =>
      reply.type('application/json').send(JSON.stringify(app.swagger())),
  });
  systemRoutes(app, ctx, () => closing);
  catalogRoutes(app, ctx);
  nodeRoutes(app, ctx);
  replicaReportRoutes(app, ctx);
  assignmentRoutes(app, ctx);
  signingKeyRoutes(app, ctx);
  tokenRoutes(app, ctx, new TokenService(deps.store, signer, clock, app.log, deps.tokens));
  rbacRoutes(app, ctx);

  const timers: NodeJS.Timeout[] = [];
  app.addHook('onReady', async () => {
    if (deps.background === false) return;
    await deps.store.listenRemote().catch((err: unknown) => {
      app.log.warn(
        { err },
        'no change notifications from other instances; long polls re-read each second',
      );
    });
    sweeps.start();
    timers.push(setInterval(() => void placement.trigger(), deps.liveness.reconcileIntervalMs));
    for (const t of timers) t.unref();
    void placement.trigger();
  });
  app.addHook('onClose', async () => {
    closing = true;
    for (const t of timers) clearInterval(t);
    sweeps.stop();
    hub.close();
    await placement.idle();
  });
  app.addHook('preClose', async () => {
    closing = true;
    hub.close();
  });

  const compileSchemas = () => schemas.compileAll();
  return { app, placement, sweeper, hub, metrics, keys, signer, compileSchemas };
}
