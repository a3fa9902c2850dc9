/**
 * Numbers in query strings. The validator does not coerce types (a JSON body must carry the
 * types its schema names: `shards: true` or `tenant_id: 123` is refused, not converted), but a
 * query string is text by nature, so the parameters a route declares as numbers are converted
 * here, before validation, and nowhere else. A value that does not read as a number is left as
 * text for the validator to refuse.
 */
import type { FastifyRequest } from 'fastify';

interface ObjectSchema {
  properties?: Record<string, { type?: unknown }>;
}

const NUMERIC = new Set(['integer', 'number']);

/** The same reading the validator's coercion used: any non-empty text `Number()` accepts. */
function numberOf(text: string): number | undefined {
  if (text === '') return undefined;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

/** A `preValidation` hook: converts the route's numeric query parameters from text. */
export async function convertQueryNumbers(req: FastifyRequest): Promise<void> {
  const schema = req.routeOptions.schema?.querystring as ObjectSchema | undefined;
  const props = schema?.properties;
  if (!props) return;
  const query = req.query as Record<string, unknown>;
  for (const [name, prop] of Object.entries(props)) {
    const raw = query[name];
    if (typeof raw !== 'string' || typeof prop.type !== 'string' || !NUMERIC.has(prop.type))
      continue;
    const value = numberOf(raw);
    if (value !== undefined) query[name] = value;
  }
}
