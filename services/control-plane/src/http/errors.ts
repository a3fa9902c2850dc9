/** Maps anything a handler or fastify throws to the one error body `{code, message, request_id}`. */
import { AuthzError, DelegationRefusedError, TokenError } from '@felix/authz';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  ControlPlaneError,
  ForbiddenError,
  InternalError,
  InvalidRequestError,
  MalformedJsonError,
  OutOfRangeError,
  PayloadTooLargeError,
  RouteNotFoundError,
  UnauthenticatedError,
} from '../errors.js';
import { NO_CONTROL_CHARACTERS } from './schemas.js';

const RANGE_KEYWORDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

/** One schema failure as fastify hands it over (Ajv's error object). */
interface ValidationIssue {
  keyword: string;
  instancePath?: string;
  params?: Record<string, unknown>;
}

/**
 * A clearer message than Ajv's for the failures a user makes most: an unknown field names the
 * field (`body has an unknown field 'durabel'`). Undefined: keep fastify's message.
 */
function validationMessage(issues: ValidationIssue[], context = 'body'): string | undefined {
  const unknown = issues.find((v) => v.keyword === 'additionalProperties');
  if (unknown && typeof unknown.params?.additionalProperty === 'string') {
    return `${where(context, unknown.instancePath)} has an unknown field '${unknown.params.additionalProperty}'`;
  }
  const choice = choiceMessage(issues, context);
  if (choice !== undefined) return choice;
  const control = issues.find(
    (v) => v.keyword === 'pattern' && v.params?.pattern === NO_CONTROL_CHARACTERS,
  );
  if (control) {
    const key = issues.some((v) => v.keyword === 'propertyNames') ? ' (a key)' : '';
    return `${where(context, control.instancePath)}${key} must not contain a control character (U+0000-U+001F, U+007F)`;
  }
  return undefined;
}

/**
 * A value outside a union of literals (`consistency`, `routing`, `lifecycle`): Ajv reports one
 * "must be equal to constant" per literal and "must match a schema in anyOf"; this names the
 * field and the allowed values instead.
 */
function choiceMessage(issues: ValidationIssue[], context: string): string | undefined {
  const anyOf = issues.find((v) => v.keyword === 'anyOf');
  if (!anyOf) return undefined;
  const path = anyOf.instancePath ?? '';
  const branches = issues.filter((v) => v !== anyOf && (v.instancePath ?? '') === path);
  if (branches.length === 0 || branches.some((v) => v.keyword !== 'const')) return undefined;
  const allowed = branches.map((v) => `'${String(v.params?.allowedValue)}'`);
  return `${where(context, path)} must be one of ${allowed.join(', ')}`;
}

/** `body`, or `body/retention` for a nested object. */
function where(context: string, instancePath = ''): string {
  return `${context}${instancePath}`;
}

/** Translates fastify's own failures (validation, body parsing) into catalogue errors. */
export function toControlPlaneError(err: unknown): ControlPlaneError {
  if (err instanceof ControlPlaneError) return err;
  if (err instanceof AuthzError) return fromAuthz(err);
  const fe = err as Partial<FastifyError> & {
    validation?: ValidationIssue[];
    validationContext?: string;
  };
  if (Array.isArray(fe.validation)) {
    const range = fe.validation.some((v) => RANGE_KEYWORDS.has(v.keyword));
    const message = validationMessage(fe.validation, fe.validationContext) ?? fe.message;
    return range
      ? new OutOfRangeError(message ?? 'invalid request')
      : new InvalidRequestError(message ?? 'invalid request');
  }
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new PayloadTooLargeError('request body too large');
  if (
    fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
    err instanceof SyntaxError
  ) {
    return new MalformedJsonError(`body is not valid JSON: ${fe.message ?? ''}`);
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new InvalidRequestError(fe.message ?? 'invalid request');
  }
  return new InternalError('internal error', { cause: err });
}

/** @felix/authz failures thrown by handlers (token routes, RBAC writes, dev tokens). */
function fromAuthz(err: AuthzError): ControlPlaneError {
  if (err instanceof TokenError) return new UnauthenticatedError(err.message, { cause: err });
  if (err instanceof DelegationRefusedError)
    return new ForbiddenError('delegate', 'scope', err.message);
  // The rest are bad input: a permission that does not parse or names another tenant, claims a
  // verifier would refuse, a role name, a limit.
  return new InvalidRequestError(err.message, { cause: err });
}

export function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const e = toControlPlaneError(err);
  if (e.status >= 500) req.log.error({ err }, 'request failed');
  const status =
    e.code === 'FELIX_CONTROLPLANE_INVALID_REQUEST' && (err as FastifyError).statusCode === 415
      ? 415
      : e.status;
  return reply.code(status).send({ code: e.code, message: e.message, request_id: String(req.id) });
}

export function notFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(
    req,
    reply,
    new RouteNotFoundError(`no route for ${req.method} ${req.url.split('?')[0]}`),
  );
}
