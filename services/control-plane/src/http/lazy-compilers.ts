/**
 * Fastify's schema compilers, deferred to each route's first request. Fastify compiles the
 * validator and serializer of every route when the server starts (ajv and fast-json-stringify):
 * about 0.4 s of a control plane's start here, paid again by every restart, mostly for routes a
 * process never serves. The compilers are fastify's defaults with the options it passes; only
 * the moment moves. `compileAll` forces every one (a test does, so a schema that does not
 * compile fails it rather than a first request). One difference: fastify treats compilers given
 * this way as custom and no longer lower-cases the property names of a `headers` schema, so such
 * a schema must name its headers in lower case (no route has one today).
 */
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

// Loaded at the first compile: ajv and fast-json-stringify take ~60 ms to load and set up.
const require = createRequire(import.meta.url);

type SchemaControllerOption = NonNullable<FastifyServerOptions['schemaController']>;
type Factories = NonNullable<SchemaControllerOption['compilersFactory']>;
type BuildValidator = NonNullable<Factories['buildValidator']>;
type BuildSerializer = NonNullable<Factories['buildSerializer']>;
type Validate = ((data: unknown) => unknown) & { errors?: unknown };
/** What fastify's validator compiler answers (ajv's type; fastify calls it and reads `errors`). */
type Compiled = ReturnType<ReturnType<BuildValidator>>;
type Serialize = (data: unknown) => string;

export interface LazySchemas {
  /** Fastify's `schemaController` option. */
  option: SchemaControllerOption;
  /** Compiles every validator and serializer not compiled yet; answers how many. */
  compileAll(): number;
}

/**
 * `make()`'s function, made at its first call (or at `compileAll`). `after` copies what fastify
 * reads off a validator (`errors`) onto the stand-in after each call.
 */
function lazily<F extends (data: unknown) => unknown>(
  pending: Set<() => void>,
  make: () => F,
  after?: (made: F, lazy: F) => void,
): F {
  let fn: F | undefined;
  const force = () => {
    fn ??= make();
    pending.delete(force);
  };
  pending.add(force);
  const lazy = ((data: unknown) => {
    if (fn === undefined) force();
    const result = (fn as F)(data);
    after?.(fn as F, lazy);
    return result;
  }) as F;
  return lazy;
}

/** A validator that compiles on its first call; fastify reads `errors` off the function. */
const lazyValidator = (pending: Set<() => void>, make: () => Validate): Validate =>
  lazily(pending, make, (made, lazy) => {
    lazy.errors = made.errors;
  });

/** One app's deferred compilers (one per Fastify instance: its routes, and nothing else). */
export function lazySchemaController(): LazySchemas {
  const pending = new Set<() => void>();
  let baseValidator: BuildValidator | undefined;
  let baseSerializer: BuildSerializer | undefined;
  const buildValidator: BuildValidator = (external, options) => {
    let compile: ReturnType<BuildValidator> | undefined;
    return (route) =>
      lazyValidator(pending, () => {
        baseValidator ??= (require('@fastify/ajv-compiler') as () => BuildValidator)();
        compile ??= baseValidator(external, options);
        return compile(route) as Validate;
      }) as unknown as Compiled;
  };
  const buildSerializer: BuildSerializer = (external, options) => {
    let compile: ReturnType<BuildSerializer> | undefined;
    return (route) =>
      lazily(pending, (): Serialize => {
        baseSerializer ??= (
          require('@fastify/fast-json-stringify-compiler') as () => BuildSerializer
        )();
        compile ??= baseSerializer(external, options);
        return compile(route) as Serialize;
      });
  };
  return {
    option: { compilersFactory: { buildValidator, buildSerializer } },
    compileAll() {
      const all = [...pending];
      for (const force of all) force();
      return all.length;
    },
  };
}
