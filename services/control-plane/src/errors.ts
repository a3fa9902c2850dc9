/**
 * Every failure the control plane reports. Each class has a stable `code` and the HTTP status
 * it maps to; the API answers with one body `{code, message, request_id}`. The catalogue in
 * docs/control-plane.md lists these codes.
 */
import { FelixError, type FelixErrorOptions } from '@felix/common';

export abstract class ControlPlaneError extends FelixError {
  abstract readonly status: number;
}

/** The request body or query failed its schema. */
export class InvalidRequestError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_INVALID_REQUEST';
  readonly status = 400;
}

/** A number in the request lies outside its allowed range. */
export class OutOfRangeError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_OUT_OF_RANGE';
  readonly status = 400;
}

/** The body is not JSON. */
export class MalformedJsonError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_MALFORMED_JSON';
  readonly status = 400;
}

/** A resource or node name breaks the naming rule. */
export class InvalidNameError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_INVALID_NAME';
  readonly status = 400;
  constructor(
    readonly field: string,
    readonly value: string,
  ) {
    super(
      `${field} '${value.slice(0, 140)}' must be 1-128 characters of [A-Za-z0-9_.-], starting alphanumeric`,
    );
  }
}

/** A paging cursor that this server did not hand out. */
export class InvalidCursorError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_INVALID_CURSOR';
  readonly status = 400;
}

/** The body is larger than BODY_BYTES_MAX. */
export class PayloadTooLargeError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_PAYLOAD_TOO_LARGE';
  readonly status = 413;
}

export class TenantNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_TENANT_NOT_FOUND';
  readonly status = 404;
}

export class NamespaceNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NAMESPACE_NOT_FOUND';
  readonly status = 404;
}

export class StreamNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_STREAM_NOT_FOUND';
  readonly status = 404;
}

export class CacheNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_CACHE_NOT_FOUND';
  readonly status = 404;
}

export class NodeNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NODE_NOT_FOUND';
  readonly status = 404;
}

/** No route matches the method and path. */
export class RouteNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_ROUTE_NOT_FOUND';
  readonly status = 404;
}

/** A create named an existing resource with different settings (identical ones answer 200). */
export class AlreadyExistsError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_ALREADY_EXISTS';
  readonly status = 409;
}

/** A tenant delete refused without `force`: the tenant's roles carry cluster or node
 *  permissions, so it may mint the brokers' node credentials and the operators' tokens. */
export class TenantHoldsClusterRolesError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_TENANT_HOLDS_CLUSTER_ROLES';
  readonly status = 409;
}

/** A register or heartbeat carried an incarnation older than the one on record. */
export class StaleIncarnationError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_STALE_INCARNATION';
  readonly status = 409;
  constructor(
    readonly nodeId: string,
    readonly incarnation: number,
    readonly current: number,
  ) {
    super(`node ${nodeId}: incarnation ${incarnation} is older than ${current}`);
  }
}

/** A heartbeat for an incarnation the node never registered, or a down node re-registering with its old one. */
export class NotRegisteredError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NOT_REGISTERED';
  readonly status = 409;
}

/** A replica-status request of which some shard's report was not accepted (the body names each outcome). */
export class ReportNotAcceptedError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_REPORT_NOT_ACCEPTED';
  readonly status = 409;
}

/** Another node already advertises this internal address. */
export class AddressInUseError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_ADDRESS_IN_USE';
  readonly status = 409;
}

/** The node's lifecycle does not allow the operation (drain a down node, delete a live one). */
export class NodeStateConflictError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NODE_STATE_CONFLICT';
  readonly status = 409;
}

/** The store is unreachable or its schema is not current. */
export class NotReadyError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NOT_READY';
  readonly status = 503;
  constructor(message: string, options?: FelixErrorOptions) {
    super(message, { retry: 'retry_after_backoff', ...options });
  }
}

/** A store call failed for a reason other than the request (connection lost, I/O error). */
export class StoreUnavailableError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_STORE_UNAVAILABLE';
  readonly status = 503;
  constructor(message: string, options?: FelixErrorOptions) {
    super(message, { retry: 'unknown_outcome', ...options });
  }
}

/** A FELIX_CONTROLPLANE_* variable has a value the server cannot use. */
export class ConfigInvalidError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_CONFIG_INVALID';
  readonly status = 500;
}

/** Anything unexpected; logged with its request id. */
export class InternalError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_INTERNAL';
  readonly status = 500;
}

/** No bearer token, or a token that does not verify (expired, foreign key, wrong audience). */
export class UnauthenticatedError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_UNAUTHENTICATED';
  readonly status = 401;
}

/** A valid token whose permissions do not allow the action on the object (both are named). */
export class ForbiddenError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_FORBIDDEN';
  readonly status = 403;
  constructor(
    readonly action: string,
    readonly object: string,
    message = `${action} on ${object} is not allowed`,
  ) {
    super(message);
  }
}

/** The tenant's auth was initialized before: bootstrap runs exactly once per tenant. */
export class AlreadyInitializedError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_ALREADY_INITIALIZED';
  readonly status = 409;
}

/** No signing key with that kid in the tenant. */
export class SigningKeyNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_SIGNING_KEY_NOT_FOUND';
  readonly status = 404;
}

/** The key's status does not allow the change (retiring the active key, activating a retired one). */
export class SigningKeyStateError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_SIGNING_KEY_STATE';
  readonly status = 409;
}

/** The tenant has no active signing key, so no token can be signed for it. */
export class NoActiveKeyError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NO_ACTIVE_KEY';
  readonly status = 409;
}

/** No IdP issuer with that name in the tenant. */
export class IssuerNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_ISSUER_NOT_FOUND';
  readonly status = 404;
}

/** A per-tenant auth bound (keys, issuers, policies, bindings, refresh tokens) would be exceeded. */
export class AuthLimitError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_AUTH_LIMIT';
  readonly status = 409;
}

// ---- tokens, OIDC exchange and RBAC routes (issue 21)

/**
 * An upstream OIDC token was refused: unknown issuer, bad signature, wrong audience, expired,
 * an algorithm outside the allow-list, an unreachable JWKS. `reason` says which (logged).
 */
export class OidcTokenRefusedError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_OIDC_TOKEN_REFUSED';
  readonly status = 401;
  constructor(
    readonly reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`upstream token refused: ${reason}`, options);
  }
}

/** An IdP issuer configuration the control plane will not use (http, `#`, no key source). */
export class IdpIssuerInvalidError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_IDP_ISSUER_INVALID';
  readonly status = 400;
}

/**
 * A refresh failed. Every failure (unknown id, wrong secret, spent, replayed, expired, revoked,
 * nothing left to grant) carries this one code and message, so a caller learns nothing from it.
 */
export class RefreshTokenRefusedError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_REFRESH_TOKEN_REFUSED';
  readonly status = 403;
  constructor() {
    super('refresh token refused');
  }
}

/** RBAC (after any narrowing) grants the principal nothing, so no token is issued. */
export class NoPermissionsError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_NO_PERMISSIONS';
  readonly status = 403;
}

/**
 * The caller may not make this grant: it lacks `rbac.manage` or `token.delegate`, or the rule,
 * role or token lies outside its own scope (the delegation rule).
 */
export class DelegationRefusedError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_DELEGATION_REFUSED';
  readonly status = 403;
}

/** A permission or object string outside the grammar of @felix/authz. */
export class InvalidPermissionError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_INVALID_PERMISSION';
  readonly status = 400;
}

/** A binding named a role that has no policy. */
export class RoleNotFoundError extends ControlPlaneError {
  readonly code = 'FELIX_CONTROLPLANE_ROLE_NOT_FOUND';
  readonly status = 404;
}
