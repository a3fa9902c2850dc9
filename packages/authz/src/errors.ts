/** Errors raised by @felix/authz. Every class has a stable code; none is a bare string. */
import { FelixError } from '@felix/common';

/** Base of every authz failure. */
export abstract class AuthzError extends FelixError {}

// --- tokens -------------------------------------------------------------------------------------

/** Why a token was refused; the same word is in each error's `reason`. */
export type TokenFailure =
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_audience'
  | 'wrong_issuer'
  | 'wrong_tenant'
  | 'wrong_algorithm'
  | 'bad_signature'
  | 'unknown_kid'
  | 'malformed';

/** Base of every token verification or signing failure. */
export abstract class TokenError extends AuthzError {
  abstract readonly reason: TokenFailure;
}

/** `exp` (plus the clock skew) has passed. */
export class TokenExpiredError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_EXPIRED';
  readonly reason = 'expired';
  constructor() {
    super('the token has expired');
  }
}

/** `nbf` or `iat` lies in the future beyond the clock skew. */
export class TokenNotYetValidError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_NOT_YET_VALID';
  readonly reason = 'not_yet_valid';
  constructor() {
    super('the token is not valid yet');
  }
}

/** `aud` is not exactly the expected audience (a list is refused too). */
export class TokenWrongAudienceError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_WRONG_AUDIENCE';
  readonly reason = 'wrong_audience';
  constructor(readonly expected: string) {
    // The commonest mix-up: a control-plane token given to a broker, or the other way round.
    super(`the token is not for audience ${expected}: mint one for ${expected}`);
  }
}

/** `iss` is not the Felix issuer. */
export class TokenWrongIssuerError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_WRONG_ISSUER';
  readonly reason = 'wrong_issuer';
  constructor() {
    super('the token was not issued by felix-auth');
  }
}

/** `tid` names another tenant than the one the caller expects. */
export class TokenWrongTenantError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_WRONG_TENANT';
  readonly reason = 'wrong_tenant';
  constructor(
    readonly expected: string,
    /** The tenant the token claims, when it names one (unverified: for the message only). */
    readonly claimed?: string,
  ) {
    super(
      claimed === undefined
        ? `the token is not for tenant ${expected}`
        : `the token is for tenant ${JSON.stringify(claimed)}, not for tenant ${expected}`,
    );
  }
}

/** The header's `alg` is not EdDSA. */
export class TokenWrongAlgorithmError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_WRONG_ALGORITHM';
  readonly reason = 'wrong_algorithm';
  constructor() {
    super('the token is not signed with EdDSA');
  }
}

/** The signature does not verify under the key its `kid` names. */
export class TokenBadSignatureError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_BAD_SIGNATURE';
  readonly reason = 'bad_signature';
  constructor() {
    super('the token signature does not verify');
  }
}

/** The expected tenant has no key with the token's `kid`. */
export class TokenUnknownKidError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_UNKNOWN_KID';
  readonly reason = 'unknown_kid';
  constructor(readonly kid: string) {
    super(`no signing key ${kid} for this tenant`);
  }
}

/** The token is not a well-formed Felix token; `detail` says what is wrong. */
export class TokenMalformedError extends TokenError {
  readonly code = 'FELIX_AUTHZ_TOKEN_MALFORMED';
  readonly reason = 'malformed';
  constructor(readonly detail: string) {
    super(`malformed token: ${detail}`);
  }
}

/** signToken was asked for something a Felix token cannot carry. */
export class TokenClaimsError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_TOKEN_CLAIMS';
  constructor(readonly detail: string) {
    super(`cannot sign: ${detail}`);
  }
}

/** A JWK is not an Ed25519 key of the expected shape. */
export class InvalidKeyError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_INVALID_KEY';
  constructor(readonly detail: string) {
    super(`invalid key: ${detail}`);
  }
}

/** A key set is full (KEYS_PER_TENANT_MAX). */
export class KeySetFullError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_KEY_SET_FULL';
  constructor(readonly tenant: string) {
    super(`tenant ${tenant} already holds the most keys allowed`);
  }
}

// --- permissions ---------------------------------------------------------------------------------

/** Why a permission string was refused. */
export type PermissionRefusal =
  | 'too_long'
  | 'missing_action'
  | 'unknown_action'
  | 'missing_object'
  | 'unknown_object_kind'
  | 'wrong_segment_count'
  | 'bad_name'
  | 'wildcard_not_trailing'
  | 'wildcard_tenant'
  | 'wildcard_node'
  | 'cluster_must_be_wildcard'
  | 'action_not_applicable';

/** A permission string does not follow the grammar; `reason` names the rule it breaks. */
export class PermissionParseError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_PERMISSION_INVALID';
  constructor(
    readonly reason: PermissionRefusal,
    readonly input: string,
  ) {
    super(`invalid permission (${reason}): ${input.slice(0, 80)}`);
  }
}

/** A permission names an object of another tenant than the set or RBAC it is added to. */
export class CrossTenantPermissionError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_CROSS_TENANT';
  constructor(
    readonly tenant: string,
    readonly permission: string,
  ) {
    super(`permission ${permission} names an object outside tenant ${tenant}`);
  }
}

// --- RBAC ----------------------------------------------------------------------------------------

/** A grant lies outside the caller's own scope (the delegation rule). */
export class DelegationRefusedError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_DELEGATION_REFUSED';
  constructor(readonly permission: string) {
    super(`cannot grant ${permission}: it lies outside the caller's own permissions`);
  }
}

/** A role name breaks the catalog name rule. */
export class InvalidRoleNameError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_INVALID_ROLE_NAME';
  constructor(readonly role: string) {
    super(`invalid role name ${role.slice(0, 80)}`);
  }
}

/** A binding names a role the tenant does not have. */
export class UnknownRoleError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_UNKNOWN_ROLE';
  constructor(readonly role: string) {
    super(`no role ${role}`);
  }
}

/** An RBAC or token bound was exceeded; `limit` names the constant in limits.ts. */
export class AuthzLimitError extends AuthzError {
  readonly code = 'FELIX_AUTHZ_LIMIT';
  constructor(readonly limit: string) {
    super(`authz bound ${limit} exceeded`);
  }
}
